// wasm32 hash throughput under node: the same file, hashed inside the core
// module's memory (the copy into wasm memory is not timed).
//   node bench/wasm_hash_bench.mjs build/wasm/tinylm_core.wasm FILE [RUNS]
import { readFileSync } from 'node:fs';

const [modulePath, file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 3);
const { instance } = await WebAssembly.instantiate(readFileSync(modulePath), {});
const e = instance.exports;
const input = readFileSync(file);
const ptr = e.tl_wasm_alloc(input.length);
const out = e.tl_wasm_alloc(32);
if (!ptr || !out) throw new Error('wasm memory could not grow to hold the input');
new Uint8Array(e.memory.buffer, ptr, input.length).set(input);

function measure(label, fn) {
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    const st = fn();
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    if (st !== 0) throw new Error(`${label} failed with status ${st}`);
    best = Math.min(best, dt);
  }
  const mbps = input.length / best / 1e6;
  console.log(`${label.padEnd(28)} ${mbps.toFixed(1).padStart(10)} MB/s  (${best.toFixed(3)} s for ${input.length} bytes, best of ${runs})`);
}
measure('wasm sha256 (scalar)', () => e.tl_wasm_sha256(ptr, input.length, out));
measure('wasm blake3 (portable)', () => e.tl_wasm_blake3(ptr, input.length, out, 32));
console.log(`${'wasm memory'.padEnd(28)} ${(e.memory.buffer.byteLength / 1024).toFixed(0).padStart(10)} KiB`);
