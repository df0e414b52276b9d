// The viewer's Shapes controls: a character with morph targets (--morph) shows them by name with
// their default weights; moving a shape's slider poses over the session with that weight, a joint
// slider then keeps it, and "Bind pose" puts the shapes back at their defaults. The bundled sample
// (--glb), which has none, hides the controls. Writes OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_shapes.mjs --url=http://127.0.0.1:PORT --glb=FILE.glb --out=DIR --morph=FILE.glb
import { args, registerFiles, result, setSlider, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  await page.evaluate(() => { window.__viewer.keepSessionFrame = true; });
  const shapes = () => page.evaluate(() => ({
    hidden: document.querySelector("#shapes").hidden,
    names: [...document.querySelectorAll("#shape option")].map((o) => o.textContent),
    weight: Number(document.querySelector("#shape-weight").value),
  }));
  // Waits for the session's answer to what `move` sends.
  const sessionFrame = async (move) => {
    await page.evaluate(() => { window.__viewer.sessionFrame = null; });
    await move();
    await page.waitForFunction(() => window.__viewer.sessionFrame || window.__viewer.errors.length, null,
                               { timeout: 30000, polling: 50 });
    return page.evaluate(() => window.__viewer.sessionFrame);
  };

  result.rig = await registerFiles(page, args.morph);
  result.status = await page.$eval("#status", (e) => e.textContent);
  result.opened = await shapes();
  result.diag = await page.evaluate(() => window.__viewer.diag);
  await page.selectOption("#shape", "1");
  result.chosen = await shapes();
  step("registered");

  result.shaped = await sessionFrame(() => page.$eval("#shape-weight", (e) => {
    e.value = "0.75";
    e.dispatchEvent(new Event("input"));
  }));
  step("shaped");
  result.bent = await sessionFrame(() => setSlider(page, 40));
  step("bent");

  await page.evaluate(() => { window.__viewer.lastPose = null; });
  await page.click("#rest");
  await page.waitForFunction(() => window.__viewer.lastPose || window.__viewer.errors.length, null,
                             { timeout: 30000, polling: 50 });
  result.rest = await page.evaluate(() => window.__viewer.lastPose);
  result.afterRest = await shapes();
  step("bind pose");

  await registerFiles(page, args.glb);
  result.without = await shapes();
  result.errors = await page.evaluate(() => window.__viewer.errors);
  step("a rig without shapes");
});
