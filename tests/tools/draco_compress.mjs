// Compresses a .glb's meshes with KHR_draco_mesh_compression, as web pipelines do, using
// glTF-Transform and Google's draco3dgltf encoder (both pinned in tests/package.json): a third
// party's Draco glTF for the reader's tests.
//
//   node tests/tools/draco_compress.mjs IN.glb OUT.glb
import { NodeIO } from '@gltf-transform/core';
import { KHRDracoMeshCompression, KHRONOS_EXTENSIONS } from '@gltf-transform/extensions';
import draco3d from 'draco3dgltf';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node draco_compress.mjs IN.glb OUT.glb');
  process.exit(2);
}
const io = new NodeIO().registerExtensions(KHRONOS_EXTENSIONS).registerDependencies({
  'draco3d.decoder': await draco3d.createDecoderModule(),
  'draco3d.encoder': await draco3d.createEncoderModule(),
});
const document = await io.read(input);
document.createExtension(KHRDracoMeshCompression).setRequired(true).setEncoderOptions({
  method: KHRDracoMeshCompression.EncoderMethod.EDGEBREAKER,
  encodeSpeed: 5,
  decodeSpeed: 5,
});
await io.write(output, document);
console.log(`${output}: written with KHR_draco_mesh_compression`);
