// The browser viewer across a server restart (a rolling update, a crash): a joint-slider pose
// session and a FAST session are closed by the draining server, a pose is asked for while no
// server listens, and the page sends it once one does and opens the FAST session again, without
// an error. tests/e2e/viewer_test.cc restarts the server between the steps; the two sides meet
// through files in OUT:
//   this script writes OUT/posed (a first session frame arrived), waits for OUT/down (the server
//   stopped), moves the slider and writes OUT/moved, then waits for the frame of that pose.
//
//   node tests/web/viewer_restart.mjs --url=http://127.0.0.1:PORT --glb=samples/CesiumMan/CesiumMan.glb --out=DIR
import { registerSample, result, setSlider, signal, sleep, step, waitFile, withViewer } from "./harness.mjs";

// The browser logs every WebSocket that cannot connect while the server is away: expected here.
const expected = (text) => text.includes("WebSocket connection to");
await withViewer({ viewport: { width: 800, height: 500 }, expected }, async (page) => {
  const probe = (expr, arg) => page.evaluate(expr, arg);
  const waitProbe = (expr, arg, timeout = 60000) => page.waitForFunction(expr, arg, { timeout, polling: 50 });

  await registerSample(page);

  await setSlider(page, 30);
  await waitProbe(() => window.__viewer.sessionFrames > 0 || window.__viewer.errors.length);
  result.framesBefore = await probe(() => window.__viewer.sessionFrames);
  // A FAST session too (on the file's own weights): the drain closes it with the other.
  await page.click("#fast");
  await waitProbe(() => window.__viewer.fastReady || window.__viewer.errors.length, undefined, 120000);
  result.fastFramesBefore = await probe(() => window.__viewer.fastFrames);
  signal("posed");
  step("posed");

  // The server drains (its open session is closed with 4014), then is gone.
  await waitFile("down", 60000);
  await setSlider(page, -40);
  await sleep(500);  // the page's first attempts find nothing listening
  result.statusWhileDown = await page.$eval("#status", (e) => e.textContent);
  signal("moved");
  step("moved");

  // The restarted server answers the pose asked for while it was away, and the FAST session is
  // open again on it.
  await waitProbe(([n, f]) => (window.__viewer.sessionFrames > n && window.__viewer.fastFrames > f) ||
    window.__viewer.errors.length, [result.framesBefore, result.fastFramesBefore], 30000);
  result.framesAfter = await probe(() => window.__viewer.sessionFrames);
  result.fastFramesAfter = await probe(() => window.__viewer.fastFrames);
  result.status = await page.$eval("#status", (e) => e.textContent);
  result.pageErrors = await probe(() => window.__viewer.errors);
  step("resent");
});
