// Runs the Khronos glTF Validator (npm package gltf-validator, pinned in tests/package.json) on
// each file given: prints one line per file with its error and warning counts, then one line per
// error or warning ("  ERROR CODE pointer: message"). Exit status: 0 when no file has an error,
// 1 when one does, 2 for a usage or I/O problem. Infos and hints are counted, not listed.
'use strict';
const fs = require('fs');
const path = require('path');
const validator = require('gltf-validator');

async function main(files) {
  if (files.length === 0) {
    console.error('usage: node validate_gltf.js FILE.glb|FILE.gltf ...');
    return 2;
  }
  let failed = false;
  for (const file of files) {
    const bytes = new Uint8Array(fs.readFileSync(file));
    const report = await validator.validateBytes(bytes, {
      uri: path.basename(file),
      maxIssues: 1000,
      externalResourceFunction: (uri) => new Promise((resolve, reject) => {
        fs.readFile(path.resolve(path.dirname(file), decodeURIComponent(uri)),
                    (err, data) => (err ? reject(err.toString()) : resolve(new Uint8Array(data))));
      }),
    });
    const issues = report.issues;
    console.log(`${path.basename(file)}: ${issues.numErrors} errors, ${issues.numWarnings} warnings, ` +
                `${issues.numInfos} infos, ${issues.numHints} hints`);
    for (const m of issues.messages) {
      if (m.severity > 1) continue;
      console.log(`  ${m.severity === 0 ? 'ERROR' : 'WARNING'} ${m.code} ${m.pointer || ''}: ${m.message}`);
    }
    if (issues.numErrors > 0) failed = true;
  }
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  console.error(String(err));
  process.exit(2);
});
