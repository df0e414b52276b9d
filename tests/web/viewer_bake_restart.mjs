// The browser viewer while the replica it talks to restarts in a deployment with a shared store
// (an api replica and bake workers on Redis): a bake the page started and watches goes on, a
// unary Pose asked for while no server listens is sent once one does, and the page shows the bake
// done and the pose, without an error. tests/e2e/viewer_test.cc restarts the replica between the
// steps; the two sides meet through files in OUT:
//   this script writes OUT/queued (the page watches its bake, queued: no worker runs yet), waits
//   for OUT/down (the replica stopped), switches the method to DQS (a unary Pose) and writes
//   OUT/moved, then waits for the bake to finish and the pose to arrive.
//
//   node tests/web/viewer_bake_restart.mjs --url=http://127.0.0.1:PORT --glb=samples/CesiumMan/CesiumMan.glb --out=DIR
import { registerSample, result, signal, sleep, step, waitFile, withViewer } from "./harness.mjs";

// The browser logs every fetch that cannot connect while the server is away: expected here.
const expected = (text) => text.includes("net::ERR_CONNECTION_REFUSED");
await withViewer({ viewport: { width: 800, height: 500 }, expected }, async (page) => {
  const probe = (expr, arg) => page.evaluate(expr, arg);
  const waitProbe = (expr, arg, timeout = 60000) => page.waitForFunction(expr, arg, { timeout, polling: 50 });

  await registerSample(page);

  // A BBW bake: queued, and watched.
  await page.selectOption("#bake-method", "bbw");
  await page.click("#bake");
  await waitProbe(() => window.__viewer.progress.length > 0 || window.__viewer.errors.length);
  result.statusQueued = await page.$eval("#status", (e) => e.textContent);
  signal("queued");
  step("queued");

  // The replica drains and is gone; the user switches to DQS meanwhile (a unary Pose).
  await waitFile("down", 60000);
  await page.selectOption("#method", "DQS");
  await sleep(500);  // the page's first attempts find nothing listening
  result.statusWhileDown = await page.$eval("#status", (e) => e.textContent);
  result.posesWhileDown = await probe(() => window.__viewer.poses);
  signal("moved");
  step("moved");

  // The restarted replica answers the pose; a worker bakes, and the watch sees the bake done
  // (the page then poses once more, with the bake's weights).
  await waitProbe(() => (window.__viewer.bakeDone && window.__viewer.poses >= 2) || window.__viewer.errors.length,
                  undefined, 60000);
  result.bakeName = await probe(() => window.__viewer.bakeName);
  result.poses = await probe(() => window.__viewer.poses);
  result.lastPose = await probe(() => window.__viewer.lastPose);
  result.status = await page.$eval("#status", (e) => e.textContent);
  result.pageErrors = await probe(() => window.__viewer.errors);
  step("done");
});
