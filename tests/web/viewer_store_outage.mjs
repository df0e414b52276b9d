// The browser viewer while its server's Redis store is out: a pose session opened meanwhile is
// closed by the server with 4014 and a .glb registered meanwhile is refused UNAVAILABLE (both
// name the store); the page says so, opens the session and sends the file again until the store
// is back, then opens the new rig, without an error. tests/e2e/viewer_test.cc stops and restarts
// Redis between the steps; the two sides meet through files in OUT:
//   this script writes OUT/ready (a first rig registered), waits for OUT/down (Redis stopped),
//   moves a joint slider, registers --glb2 and writes OUT/moved, then waits for the second rig.
//
//   node tests/web/viewer_store_outage.mjs --url=http://127.0.0.1:PORT --glb=samples/CesiumMan/CesiumMan.glb --glb2=OTHER.glb --out=DIR
import { args, registerSample, result, setSlider, signal, sleep, step, waitFile, withViewer } from "./harness.mjs";

// The browser logs every refused attempt (503) while the store is out: expected here.
const expected = (text) => text.includes("the server responded with a status of 503");
await withViewer({ viewport: { width: 800, height: 500 }, expected }, async (page) => {
  const probe = (expr, arg) => page.evaluate(expr, arg);
  await registerSample(page);
  result.firstRig = await probe(() => window.__viewer.registered);
  signal("ready");

  await waitFile("down", 60000);
  // A joint slider: its pose session's first frame needs the rig from the store (the server
  // keeps no rig in memory, --cache_mb=0), so the server closes it with 4014 and the reason.
  await setSlider(page, 30);
  await sleep(1000);
  result.sessionStatusWhileDown = await page.$eval("#status", (e) => e.textContent);
  result.sessionFramesWhileDown = await probe(() => window.__viewer.sessionFrames);
  await page.setInputFiles("#file", args.glb2);
  await sleep(1000);  // the page's first attempts meet the store's outage
  result.statusWhileDown = await page.$eval("#status", (e) => e.textContent);
  result.registeredWhileDown = await probe(() => window.__viewer.registered);
  signal("moved");
  step("moved");

  await page.waitForFunction((first) => window.__viewer.registered !== first || window.__viewer.errors.length,
                             result.firstRig, { timeout: 60000, polling: 50 });
  result.secondRig = await probe(() => window.__viewer.registered);
  result.status = await page.$eval("#status", (e) => e.textContent);
  result.pageErrors = await probe(() => window.__viewer.errors);
  step("opened");
});
