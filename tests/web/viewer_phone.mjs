// The viewer on a phone: chromium emulating a 390 × 844 touch screen (isMobile, hasTouch), used
// with a finger. The 3D view must take the screen's width, with the controls below it; a tap
// starts FAST; a finger that lands next to a handle (a handle is a few pixels, a fingertip far
// more) drags that handle and leaves the camera where it was; a drag the browser cancels ends;
// a finger on empty space turns the camera. Writes OUT/result.json and OUT/*.png; tests/e2e/viewer_test.cc checks them.
//
//   node tests/web/viewer_phone.mjs --url=http://127.0.0.1:PORT --glb=samples/CesiumMan/CesiumMan.glb --out=DIR
import { args, registerSample, result, step, withViewer } from "./harness.mjs";

const device = { isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
await withViewer({ viewport: { width: 390, height: 844 }, device }, async (page) => {
  const probe = (expr, arg) => page.evaluate(expr, arg);
  const waitProbe = (expr, timeout = 60000) => page.waitForFunction(expr, null, { timeout, polling: 100 });
  const frame = () => probe(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const rect = (sel) => page.$eval(sel, (e) => {
    const r = e.getBoundingClientRect();
    return { x: r.left, y: r.top, width: r.width, height: r.height };
  });
  await registerSample(page);
  await frame();
  result.diag = await probe(() => window.__viewer.diag);
  result.viewport = page.viewportSize();
  result.view = await rect("#view");
  result.scrollWidth = await probe(() => document.documentElement.scrollWidth);
  result.viewCss = await page.$eval("#view", (e) => [e.clientWidth, e.clientHeight]);
  result.devicePixelRatio = await probe(() => window.devicePixelRatio);
  result.buffer = await probe(() => window.__viewer.bufferSize());
  await page.screenshot({ path: `${args.out}/1-phone.png` });
  step("laid out");

  // The FAST button lies below the view: tap scrolls to it, as a thumb would.
  await page.tap("#fast");
  await waitProbe(() => window.__viewer.fastReady || window.__viewer.errors.length > 0, 300000);
  await probe(() => window.scrollTo(0, 0));
  await frame();
  result.viewAfterScroll = await rect("#view");
  const handles = [];
  for (let i = 0; ; ++i) {
    const h = await probe((k) => window.__viewer.handleScreen(k), i);
    if (!h) break;
    handles.push(h);
  }
  result.handleCount = handles.length;
  if (handles.length < 2) throw new Error(`${handles.length} FAST handles on the screen`);
  step("fast");

  // Touch events as the phone's screen sends them (Chrome DevTools Protocol).
  const cdp = await page.context().newCDPSession(page);
  const touch = (type, x, y) =>
    cdp.send("Input.dispatchTouchEvent", { type, touchPoints: type === "touchEnd" ? [] : [{ x, y }] });
  const swipe = async (x, y, dx, dy) => {
    await touch("touchStart", x, y);
    for (let s = 1; s <= 10; ++s) await touch("touchMove", x + dx * s, y + dy * s);
    await touch("touchEnd");
  };

  // The handle farthest from the fixed root, touched beside its sphere, 8 px off its edge.
  const root = handles[0];
  const pick = handles.reduce((a, b) => (Math.hypot(b.x - root.x, b.y - root.y) > Math.hypot(a.x - root.x, a.y - root.y) ? b : a));
  const off = pick.r + 8;
  result.dragged = { ...pick, offsetPx: off };
  const cameraBefore = await probe(() => window.__viewer.cameraPosition());
  await swipe(pick.x + off, pick.y, -4, -3);
  await waitProbe(() => window.__viewer.fast && window.__viewer.fast.target);
  await page.waitForTimeout(500);  // the last answer is for the last position
  result.fast = await probe(() => window.__viewer.fast);
  result.cameraDuringDrag = [cameraBefore, await probe(() => window.__viewer.cameraPosition())];
  await frame();
  await page.screenshot({ path: `${args.out}/2-phone-fast-drag.png` });
  step("dragged");

  // A drag that the browser cancels (a system gesture takes the touch) ends as well: the next
  // finger on empty space turns the camera again.
  const index = handles.indexOf(pick);
  const moved = await probe((k) => window.__viewer.handleScreen(k), index);
  await touch("touchStart", moved.x, moved.y);
  await touch("touchMove", moved.x - 3, moved.y - 3);
  await cdp.send("Input.dispatchTouchEvent", { type: "touchCancel", touchPoints: [] });
  await page.waitForTimeout(300);
  step("cancelled");

  // A finger far from every handle turns the camera.
  const view = result.viewAfterScroll;
  const far = { x: view.x + 0.1 * view.width, y: view.y + 0.9 * view.height };
  result.farFromHandles = Math.min(...handles.map((h) => Math.hypot(h.x - far.x, h.y - far.y)));
  result.cameraBeforeOrbit = await probe(() => window.__viewer.cameraPosition());
  await swipe(far.x, far.y, 6, 0);
  await frame();
  result.cameraAfterOrbit = await probe(() => window.__viewer.cameraPosition());
  result.pageErrors = await probe(() => window.__viewer.errors);
  step("orbited");
});
