// The browser viewer given a character file exported with scenery (a mesh that no skin or joint
// moves, which CreateRig refuses unless told to leave such meshes out): the page registers it
// with the scenery left out and its status line names what was left out (and, of a file with
// several scenes, which one was read). Writes OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_scenery.mjs --url=http://127.0.0.1:PORT --glb=UNUSED --scenery=FILE.gltf --out=DIR
import { args, result, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  await page.setInputFiles("#file", args.scenery);
  await page.waitForFunction(() => window.__viewer.registered, null, { timeout: 60000, polling: 50 });
  result.rig = await page.evaluate(() => window.__viewer.registered);
  result.status = await page.$eval("#status", (e) => e.textContent);
  step("registered");
});
