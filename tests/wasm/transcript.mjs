// Runs the wasm32 transcript and writes it to stdout, the record count to
// stderr (as the native transcript binary does).
//   node tests/wasm/transcript.mjs build/wasm/transcript.wasm
import { readFileSync, writeSync } from 'node:fs';

const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {});
const e = instance.exports;
const cap = 1 << 20;
const out = e.tl_wasm_alloc(cap);
const scratch = e.tl_wasm_alloc(5 << 20); // TL_TRANSCRIPT_SCRATCH
const records = e.tl_wasm_alloc(4);
if (!out || !scratch || !records) throw new Error('wasm memory could not grow');
const len = e.tl_wasm_transcript(out, cap, scratch, records) >>> 0;
if (len === 0) {
  console.error('transcript failed');
  process.exit(1);
}
writeSync(1, new Uint8Array(e.memory.buffer, out, len));
console.error(String(new Uint32Array(e.memory.buffer, records, 1)[0]));
