// Compresses a .glb's meshes with KHR_draco_mesh_compression, as web pipelines do, using
// glTF-Transform and Google's draco3dgltf encoder (both pinned in tests/package.json): a third
// party's Draco glTF for the reader's tests.
//
//   node tests/tools/draco_compress.mjs IN.glb OUT.glb [sequential]
//
// Edgebreaker by default (the smaller files, vertices reordered); "sequential" keeps the vertex
// order, as glTF-Transform also chooses for meshes with morph targets.
import { NodeIO } from '@gltf-transform/core';
import { KHRDracoMeshCompression, KHRONOS_EXTENSIONS } from '@gltf-transform/extensions';
import draco3d from 'draco3dgltf';

const [input, output, method = 'edgebreaker'] = process.argv.slice(2);
if (!input || !output || !['edgebreaker', 'sequential'].includes(method)) {
  console.error('usage: node draco_compress.mjs IN.glb OUT.glb [sequential]');
  process.exit(2);
}
const io = new NodeIO().registerExtensions(KHRONOS_EXTENSIONS).registerDependencies({
  'draco3d.decoder': await draco3d.createDecoderModule(),
  'draco3d.encoder': await draco3d.createEncoderModule(),
});
const document = await io.read(input);
document.createExtension(KHRDracoMeshCompression).setRequired(true).setEncoderOptions({
  method: method === 'sequential' ? KHRDracoMeshCompression.EncoderMethod.SEQUENTIAL
                                  : KHRDracoMeshCompression.EncoderMethod.EDGEBREAKER,
  encodeSpeed: 5,
  decodeSpeed: 5,
});
await io.write(output, document);
console.log(`${output}: written with KHR_draco_mesh_compression (${method})`);
