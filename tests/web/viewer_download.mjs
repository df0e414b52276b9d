// The browser viewer saving the rig as a skinned .glb: once with the rig's own weights, once after
// a bone heat bake with that bake's; then a character of several mesh parts (--multi) with its
// own. Saves the downloads as OUT/own.glb, OUT/baked.glb and OUT/multi.glb and writes
// OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_download.mjs --url=http://127.0.0.1:PORT --glb=CHARACTER.glb --multi=FILE.gltf --out=DIR
import { args, registerSample, result, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  await registerSample(page);
  result.rig = await page.evaluate(() => window.__viewer.registered);
  const save = async (file) => {
    const [download] = await Promise.all([page.waitForEvent("download", { timeout: 60000 }), page.click("#download")]);
    await download.saveAs(`${args.out}/${file}`);
    return { suggested: download.suggestedFilename(), status: await page.$eval("#status", (e) => e.textContent) };
  };
  result.own = await save("own.glb");
  step("saved its own weights");

  await page.selectOption("#bake-method", "boneHeat");
  await page.click("#bake");
  await page.waitForFunction(() => window.__viewer.bakeDone, null, { timeout: 120000, polling: 100 });
  result.bakeName = await page.evaluate(() => window.__viewer.bakeName);
  result.baked = await save("baked.glb");
  step("saved the bake's weights");

  await page.evaluate(() => { window.__viewer.registered = null; });
  await page.setInputFiles("#file", args.multi);
  await page.waitForFunction(() => window.__viewer.registered, null, { timeout: 60000, polling: 50 });
  result.multiRig = await page.evaluate(() => window.__viewer.registered);
  result.multi = await save("multi.glb");
  step("saved a character of several parts");
});
