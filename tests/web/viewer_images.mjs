// The browser viewer given .glb files (or .vrm) with embedded images (textures): it sends each without
// its images and registers it. Writes, per file, the rig it registered and the bytes it sent to
// OUT/result.json for tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_images.mjs --url=http://127.0.0.1:PORT --glb=UNUSED --out=DIR --glbs=A.glb,B.vrm
import { args, registerFiles, result, save, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  result.files = [];
  for (const file of args.glbs.split(",")) {
    // Files of one rig follow each other (CesiumMan and its .vrm): registerFiles waits for each.
    await registerFiles(page, file);
    result.files.push(await page.evaluate(() => ({
      rig: window.__viewer.registered, uploadBytes: window.__viewer.uploadBytes,
      status: document.querySelector("#status").textContent,
    })));
    save();
  }
  step("registered");
});
