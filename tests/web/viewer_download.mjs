// The browser viewer saving the rig as a skinned .glb: once with the rig's own weights, once after
// a bone heat bake with that bake's; then each character of --more registered and saved with its
// own weights, and the stored rig --dense (dense weights) chosen from the list and saved. Saves the
// downloads as OUT/own.glb, OUT/baked.glb, OUT/more-0.glb, ... and OUT/dense.glb and writes
// OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_download.mjs --url=http://127.0.0.1:PORT --glb=CHARACTER.glb --more=A.gltf,B.glb
//        --dense=rigs/RIG --out=DIR
import { args, registerFiles, registerSample, result, step, withViewer } from "./harness.mjs";

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

  result.more = [];
  for (const [i, file] of args.more.split(",").entries()) {
    result.more.push({ rig: await registerFiles(page, file), ...await save(`more-${i}.glb`) });
  }
  step("saved the others");

  await page.selectOption("#rigs", args.dense);
  // Its display name is "dense": the page says so once it has opened it.
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("dense: "), null,
                             { timeout: 60000, polling: 50 });
  result.dense = await save("dense.glb");
  step("saved the rig of dense weights");
});
