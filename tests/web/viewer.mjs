// Drives the browser viewer in Debian's chromium (headless, through playwright-core) against a
// running server, the way a user would: load the page, register the bundled sample from a file
// chooser, play its animation, switch to DQS, bake BBW, drag a FAST handle. Writes what it saw
// to OUT/result.json (and screenshots to OUT/*.png); tests/e2e/viewer_test.cc checks it against
// gRPC calls of the same requests.
//
//   node tests/web/viewer.mjs --url=http://127.0.0.1:PORT --glb=samples/CesiumMan/CesiumMan.glb --out=DIR
import { args, result, setSlider, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 1100, height: 700 } }, async (page) => {
  const probe = (expr) => page.evaluate(expr);
  const waitProbe = (expr, timeout = 60000) => page.waitForFunction(expr, null, { timeout, polling: 100 });
  const frame = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

  step("loaded");

  await page.setInputFiles("#file", args.glb);
  await waitProbe(() => window.__viewer.registered);
  await frame();
  result.rig = await probe(() => window.__viewer.registered);
  result.diag = await probe(() => window.__viewer.diag);
  const bindPixels = await probe(() => window.__viewer.pixels());
  await page.screenshot({ path: `${args.out}/1-bind.png` });
  step("registered");

  // Play the animation, then stop on a frame well inside it.
  await page.click("#play");
  await waitProbe(() => window.__viewer.played && window.__viewer.frame > 3);
  await page.click("#play");
  await frame();
  const posedPixels = await probe(() => window.__viewer.pixels());
  let changed = 0;
  for (let i = 0; i < bindPixels.length; i += 3)
    if (Math.abs(bindPixels[i] - posedPixels[i]) + Math.abs(bindPixels[i + 1] - posedPixels[i + 1]) +
        Math.abs(bindPixels[i + 2] - posedPixels[i + 2]) > 30) ++changed;
  result.changedPixelFraction = changed / (bindPixels.length / 3);
  result.playedFrame = await probe(() => window.__viewer.frame);
  await page.screenshot({ path: `${args.out}/2-animation.png` });
  step("played");

  // DQS: the page poses the current frame with a unary Pose and keeps the request and answer.
  await page.evaluate(() => { window.__viewer.lastPose = null; });
  await page.selectOption("#method", "DQS");
  await waitProbe(() => window.__viewer.lastPose);
  result.dqsPose = await probe(() => window.__viewer.lastPose);
  await frame();
  await page.screenshot({ path: `${args.out}/3-dqs.png` });
  step("dqs");

  // A joint slider poses over the session WebSocket (with the rig's own weights so far).
  const slide = async (deg) => {
    const before = await probe(() => window.__viewer.sessionFrames);
    await setSlider(page, deg);
    await page.waitForFunction((n) => window.__viewer.sessionFrames > n || window.__viewer.errors.length, before,
      { timeout: 30000, polling: 100 });
  };
  await slide(30);

  // Bake BBW with the progress bar.
  await page.selectOption("#bake-method", "bbw");
  await page.click("#bake");
  await waitProbe(() => window.__viewer.bakeDone || window.__viewer.errors.length, 300000);
  result.progress = await probe(() => window.__viewer.progress);
  result.progressBar = await page.$eval("#progress", (p) => p.value);
  result.pageErrors = await probe(() => window.__viewer.errors);
  // The slider's next frame poses with the new bake: a new session, whose first message names it.
  await slide(-30);
  result.sessionBakes = await probe(() => window.__viewer.sessionBakes);
  result.bakeName = await probe(() => window.__viewer.bakeName);
  await page.check("#show-weights");
  await frame();
  await page.screenshot({ path: `${args.out}/4-bbw-weights.png` });
  step("baked");

  // FAST: bake the model, then drag the handle farthest from the fixed root on screen.
  await page.click("#fast");
  await waitProbe(() => window.__viewer.fastReady || window.__viewer.errors.length > 0, 300000);
  await frame();
  const handles = [];
  for (let i = 0; ; ++i) {
    const h = await page.evaluate((k) => window.__viewer.handleScreen(k), i);
    if (!h) break;
    handles.push(h);
  }
  result.handleCount = handles.length;
  if (handles.length > 1) {
    const root = handles[0];
    const pick = handles.reduce((a, b) => (Math.hypot(b.x - root.x, b.y - root.y) > Math.hypot(a.x - root.x, a.y - root.y) ? b : a));
    result.dragged = pick;
    await page.mouse.move(pick.x, pick.y);
    await page.mouse.down();
    for (let s = 1; s <= 10; ++s) await page.mouse.move(pick.x + 4 * s, pick.y - 3 * s);
    await page.mouse.up();
    await waitProbe(() => window.__viewer.fast && window.__viewer.fast.target);
    // The last answer is for the last drag position.
    await page.waitForTimeout(500);
    result.fast = await probe(() => window.__viewer.fast);
  }
  await frame();
  await page.screenshot({ path: `${args.out}/5-fast-drag.png` });
  result.pageErrors = await probe(() => window.__viewer.errors);
  step("dragged");
});
