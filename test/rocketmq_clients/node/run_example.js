// Run one of the client's own TypeScript examples (examples/*.ts, verbatim
// from apache/rocketmq-clients) with node: each .ts file is compiled to
// CommonJS by TypeScript's transpileModule (no type check, as ts-node's
// transpile-only mode does) when it is required.
//
//   node run_example.js examples/ProducerNormalMessageExample.ts
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const out = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  });
  module._compile(out.outputText, filename);
};

require(path.resolve(process.argv[2]));
