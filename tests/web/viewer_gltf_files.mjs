// The browser viewer given a .gltf whose buffers are separate files (the glTF sample models,
// Blender's "glTF Separate"): chosen alone, the page says which file it also needs; chosen with
// them, it registers the character. Writes OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_gltf_files.mjs --url=http://127.0.0.1:PORT --glb=UNUSED --out=DIR
//        --gltf=FILE.gltf --bins=A.bin,B.bin,...
import { args, registerFiles, result, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  await page.setInputFiles("#file", args.gltf);
  await page.waitForFunction(() => document.querySelector("#status").className === "error", null,
                             { timeout: 60000, polling: 50 });
  result.alone = await page.$eval("#status", (e) => e.textContent);
  step("refused alone");
  result.rig = await registerFiles(page, [args.gltf, ...args.bins.split(",")]);
  result.status = await page.$eval("#status", (e) => e.textContent);
  step("registered");
});
