// Runs the core's unit tests inside the wasm32 module under node:
//   node tests/wasm/run_unit.mjs build/wasm/unit_tests.wasm [FILTER]
// Exit status: 0 when every case passed.
import { readFileSync } from 'node:fs';

const [path, filter] = process.argv.slice(2);
if (!path) {
  console.error('usage: run_unit.mjs MODULE.wasm [FILTER]');
  process.exit(2);
}
let memory;
const decoder = new TextDecoder();
const env = {
  tl_host_write: (ptr, len) => {
    process.stdout.write(decoder.decode(new Uint8Array(memory.buffer, ptr, len)));
  },
};
const { instance } = await WebAssembly.instantiate(readFileSync(path), { env });
const e = instance.exports;
memory = e.memory;
let filterPtr = 0;
if (filter) {
  const bytes = new TextEncoder().encode(filter + '\0');
  filterPtr = e.tl_wasm_alloc(bytes.length);
  new Uint8Array(memory.buffer, filterPtr, bytes.length).set(bytes);
}
process.exitCode = e.tl_wasm_run_tests(filterPtr) === 0 ? 0 : 1;
