// The browser viewer given a character file exported with scenery (a mesh that no skin or joint
// moves, which CreateRig refuses unless told to leave such meshes out) and a second scene: the
// page registers the default scene with the scenery left out, its status line names what was left
// out and which scene was read, and a chooser offers the file's scenes. Then the same file whose
// default scene is the scenery alone: refused, naming the scene with the character, which the
// chooser then registers. Writes OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_scenery.mjs --url=http://127.0.0.1:PORT --glb=UNUSED --scenery=FILE.gltf
//        --props_first=FILE.gltf --out=DIR
import { args, result, step, withViewer } from "./harness.mjs";

// The browser logs the refused CreateRig (HTTP 400): expected here.
const expected = (text) => text.includes("status of 400");
await withViewer({ viewport: { width: 800, height: 500 }, expected }, async (page) => {
  const scenes = () => page.evaluate(() => ({
    shown: !document.getElementById("scene-row").hidden,
    options: [...document.querySelectorAll("#scene option")].map((o) => o.textContent),
    chosen: document.getElementById("scene").value,
  }));
  const registered = () =>
    page.waitForFunction(() => window.__viewer.registered, null, { timeout: 60000, polling: 50 });
  const status = () => page.$eval("#status", (e) => e.textContent);

  await page.setInputFiles("#file", args.scenery);
  await registered();
  result.rig = await page.evaluate(() => window.__viewer.registered);
  result.status = await status();
  result.scenes = await scenes();
  step("registered");

  const errors = await page.evaluate(() => window.__viewer.errors.length);
  await page.setInputFiles("#file", args.props_first);
  await page.waitForFunction((n) => window.__viewer.errors.length > n, errors, { timeout: 60000, polling: 50 });
  result.refused = await status();
  result.refusedScenes = await scenes();
  step("refused the default scene");

  await page.evaluate(() => { window.__viewer.registered = null; });  // the first file's rig
  await page.selectOption("#scene", "0");
  await registered();
  result.chosenRig = await page.evaluate(() => window.__viewer.registered);
  result.chosenStatus = await status();
  result.chosenScenes = await scenes();
  step("registered the scene chosen");
});
