// The kernel micro-benchmark under node (bench/kernel_bench_wasm.c): the
// SIMD128 variant in wasm32, with the same shapes and
// method as build/gcc/kernel_bench (one thread, width 1024, hot = 256 rows
// 2000 times, cold = COLD_MB of rows 3 times, tile = the hot rows times 16
// tokens 200 times; best of 3 trials, per second of CPU time), and the
// ceiling of the tiles' integer products (tl_kbench_dot_peak). Given
// kernel_bench's output, also prints SIMD128 beside AVX2 with the ratios.
//   node bench/wasm_kernel_bench.mjs MODULE.wasm [COLD_MB] [NATIVE_OUTPUT]
import { readFileSync } from 'node:fs';

const [modulePath, coldArg, nativePath] = process.argv.slice(2);
const coldMB = Number(coldArg ?? 256);
const names = ['f32', 'f16', 'bf16', 'q8', 'q4'];
const { instance } = await WebAssembly.instantiate(readFileSync(modulePath), {});
const e = instance.exports;

// CPU seconds of this process (node's own threads idle once the module is
// compiled and warm).
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const figures = {}; // figures[isa][type] = [hot GB/s, hot Mrows/s, cold GB/s, cold Mrows/s, tile GMAC/s]
console.log(`wasm kernel throughput under node ${process.version}, one thread, width 1024 (GB/s of weights, Mrows/s; per CPU second)`);
console.log(`${'isa'.padEnd(13)} ${'type'.padEnd(5)} ${'hot (256 rows)'.padStart(16)} ${'cold'.padStart(16)} ${'tile (16 tokens)'.padStart(16)}`);
for (const isa of ['wasm-simd128']) {
  figures[isa] = {};
  for (let type = 0; type < 5; type++) {
    const rowBytes = e.tl_kbench_row_bytes(type);
    const coldRows = Math.floor((coldMB * 1e6) / rowBytes);
    e.tl_wasm_reset();
    const hot = e.tl_kbench_weights(type, 256);
    const cold = e.tl_kbench_weights(type, coldRows);
    if (!hot || !cold) throw new Error('wasm memory could not grow');
    const row = [];
    for (const [w, rows, reps] of [[hot, 256, 2000], [cold, coldRows, 3]]) {
      let best = Infinity;
      if (e.tl_kbench_run(type, w, rows, 1) !== 0) throw new Error(`no ${isa} variant`);
      for (let trial = 0; trial < 3; trial++) {
        const t0 = cpu();
        e.tl_kbench_run(type, w, rows, reps);
        best = Math.min(best, cpu() - t0);
      }
      row.push((rows * rowBytes * reps) / best / 1e9, (rows * reps) / best / 1e6);
    }
    {
      // prefill's product: the hot rows times 16 tokens at once
      let best = Infinity;
      for (let trial = 0; trial < 3; trial++) {
        const t0 = cpu();
        if (e.tl_kbench_tile(type, hot, 256, 200) !== 0) throw new Error(`no ${isa} variant`);
        best = Math.min(best, cpu() - t0);
      }
      row.push((200 * 16 * 256 * 1024) / best / 1e9);
    }
    figures[isa][names[type]] = row;
    const f = row.map((v) => v.toFixed(1).padStart(7));
    console.log(`${isa.padEnd(13)} ${names[type].padEnd(5)} ${f[0]} ${f[1]}  ${f[2]} ${f[3]}  ${f[4]} GMAC/s`);
  }
}

{
  // the ceiling of the q8/q4 tiles' integer products: dots and adds with
  // every operand in a register (bench/kernel_bench_wasm.c)
  const reps = 4e7;
  let best = Infinity;
  e.tl_kbench_dot_peak(1, 1000);
  for (let trial = 0; trial < 3; trial++) {
    const t0 = cpu();
    e.tl_kbench_dot_peak(trial, reps);
    best = Math.min(best, cpu() - t0);
  }
  console.log(`i32x4.dot_i16x8_s + i32x4.add, operands in registers: ${(8 * reps / best / 1e9).toFixed(2)} G dots/s = ` +
    `${(8 * 8 * reps / best / 1e9).toFixed(1)} G multiply-adds/s (the tiles' ceiling)`);
}

if (nativePath) {
  const avx2 = {};
  for (const line of readFileSync(nativePath, 'utf8').split('\n')) {
    const m = line.trim().split(/\s+/);
    if (m[0] === 'avx2' && m.length >= 7) avx2[m[1]] = m.slice(2, 7).map(Number);
  }
  console.log('\nSIMD128 (node) beside AVX2 (native), GB/s of weights per CPU second, one thread');
  console.log('(tile: G multiply-adds per CPU second of 16 tokens at once; AVX2 has no tile kernel and runs its rows token by token)');
  console.log(`${'type'.padEnd(5)} ${'AVX2 hot'.padStart(9)} ${'SIMD128'.padStart(8)} ${'ratio'.padStart(6)}   ${'AVX2 cold'.padStart(9)} ${'SIMD128'.padStart(8)} ${'ratio'.padStart(6)}   ${'AVX2 tile'.padStart(9)} ${'SIMD128'.padStart(8)} ${'ratio'.padStart(6)}`);
  for (const t of names) {
    const a = avx2[t];
    const s = figures['wasm-simd128'][t];
    if (!a) {
      console.log(`${t.padEnd(5)} (no avx2 figure in ${nativePath})`);
      continue;
    }
    const cell = (v) => v.toFixed(1).padStart(8);
    console.log(`${t.padEnd(5)} ${cell(a[0]).padStart(9)} ${cell(s[0])} ${(s[0] / a[0]).toFixed(2).padStart(6)}   ${cell(a[2]).padStart(9)} ${cell(s[2])} ${(s[2] / a[2]).toFixed(2).padStart(6)}   ${cell(a[4]).padStart(9)} ${cell(s[4])} ${(s[4] / a[4]).toFixed(2).padStart(6)}`);
  }
}
