// The WebGPU lane's glue inside the wasm32 modules (web/wasm/gpu.c,
// docs/webgpu-profile.md) under node, with the device played by the CPU
// (web/products_ref.js: F-4/F-5 in JavaScript, written from
// docs/fast-profile.md), so that what the C side asks of a device and how
// it judges the answers is checked without a GPU:
//   node tests/web/gpu_glue_test.mjs WEB_DIR
// - self-test 6 (the tiny q8 and q4 models with their products on the
//   device, in check mode) passes with the exact device, and the products
//   it saw are F-4's bits (the JS reference equals the SIMD128 kernels);
// - a device one ulp off on every product is within webgpu/1's bound
//   (W-3): passes, with every element counted as different;
// - a device whose products are halved on a row, or NaN, is outside it:
//   self_test_failed, with the failures counted;
// - a device that refuses the weights (out of memory) or fails a call
//   fails the self-test; with the device off self-test 6 is
//   unsupported_feature.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuDevice } from '../../web/products_ref.js';

const [webDir] = process.argv.slice(2);
if (!webDir) {
  console.error('usage: gpu_glue_test.mjs WEB_DIR');
  process.exit(2);
}
let passed = 0, failed = 0;
function check(name, ok, detail = '') {
  if (ok) { passed++; console.log(`ok   ${name}`); }
  else { failed++; console.log(`FAIL ${name}${detail ? ': ' + detail : ''}`); }
}

const bytes = readFileSync(join(webDir, 'tinylm-simd.wasm'));
const compiled = await WebAssembly.compile(bytes);

// A fresh module whose device is made by makeDevice(memory getter).
async function instance(makeDevice) {
  let x = null;
  const memory = () => x.memory;
  const env = { tl_host_now_ms: () => 0, tl_host_token: () => 0, tl_host_text: () => 0, tl_host_prefill: () => 0,
                ...makeDevice(memory) };
  x = (await WebAssembly.instantiate(compiled, { env })).exports;
  return x;
}

function stats(x) {
  const p = x.malloc(40);
  const st = x.tl_wasm_gpu_stats(p, 1);
  const v = new Float64Array(x.memory.buffer.slice(p, p + 40));
  x.free(p);
  return { st, products: v[0], elements: v[1], different: v[2], maxRatio: v[3], failures: v[4] };
}

const nextUp = (v) => {
  const b = new Float32Array([v]), u = new Uint32Array(b.buffer);
  if (v === 0) return 1.401298464324817e-45;
  u[0] += v > 0 ? 1 : -1; // away from zero: one ulp
  return b[0];
};

{
  const x = await instance((m) => cpuDevice(m));
  check('device off: self-test 6 is unsupported_feature (3)', x.tl_wasm_self_test(6) === 3);
  x.tl_wasm_gpu_enable(1);
  for (let i = 0; i <= 5; i++) check(`device on: self-test ${i} still passes`, x.tl_wasm_self_test(i) === 0);
  const st = x.tl_wasm_self_test(6);
  const s = stats(x);
  check('exact device: self-test 6 passes', st === 0, `status ${st}`);
  check('exact device: products went to the device and were checked', s.products >= 10 && s.elements > 1000,
        JSON.stringify(s));
  check('exact device: F-4 in JavaScript equals the SIMD128 kernels bit for bit', s.different === 0 && s.maxRatio === 0,
        JSON.stringify(s));
  check('stats out of the heap: bounds (6)', x.tl_wasm_gpu_stats(8, 0) === 6);
}
{
  const x = await instance((m) => cpuDevice(m, (v) => nextUp(v)));
  x.tl_wasm_gpu_enable(1);
  const st = x.tl_wasm_self_test(6);
  const s = stats(x);
  check('one ulp off: within webgpu/1 (self-test 6 passes)', st === 0, `status ${st} ${JSON.stringify(s)}`);
  console.log(`     one ulp off: ${JSON.stringify(s)}`);
  check('one ulp off: every element counted different, largest ratio below 1',
        s.different === s.elements && s.maxRatio > 0 && s.maxRatio < 1, JSON.stringify(s));
}
for (const [name, mutate] of [
  ['row 0 of every product halved', (v, w) => (w.r === 0 ? v * 0.5 : v)],
  ['NaN', (v, w) => (w.r === 1 ? NaN : v)],
]) {
  const x = await instance((m) => cpuDevice(m, mutate));
  x.tl_wasm_gpu_enable(1);
  const st = x.tl_wasm_self_test(6);
  const s = stats(x);
  check(`${name}: outside webgpu/1, self_test_failed (17)`, st === 17, `status ${st}`);
  check(`${name}: failures counted`, s.failures > 0 && s.maxRatio > 1, JSON.stringify(s));
}
{
  const x = await instance((m) => ({ ...cpuDevice(m), tl_host_gpu_upload: () => 9 }));
  x.tl_wasm_gpu_enable(1);
  check('weights refused (out_of_memory): self_test_failed', x.tl_wasm_self_test(6) === 17);
}
{
  const x = await instance((m) => ({ ...cpuDevice(m), tl_host_gpu_products: () => 16 }));
  x.tl_wasm_gpu_enable(1);
  check('a call fails (worker_failure): self_test_failed', x.tl_wasm_self_test(6) === 17);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
