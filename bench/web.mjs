// The browser lanes beside native (issue 13, item 11): one artifact's
// prefill and decode tokens/s in headless Chromium through the loader
// (web/tinylm.js), for each lane (scalar, simd, threads, webgpu), and
// native `tinylm run` on the same prompt at the same thread count, in one
// run (each lane's reply timed after a 4-token warm-up reply and a reset).
// Every reply is greedy, so each lane's ids and receipt id must equal
// native's on the same numerics (the scalar lane's default is the strict
// lane: native `--lane scalar`), or the run fails: a figure from a wrong
// computation is not a figure. The webgpu lane (profile webgpu/1, its
// receipt id its own) must give native fast's ids; on the software
// adapters here its figures are CPU emulation, not a GPU's, and the table
// says so.
//
//   node bench/web.mjs TINYLM SITE MODEL.slm [WORDS DECODE THREADS]
//
// SITE: the built site (make web: build/web); WORDS: prompt words (about
// one token each; default 48); DECODE: tokens to generate (16); THREADS:
// the threads lane's and native's thread count (2). The scalar lane (the
// MVP module, the strict lane by default) is slow on a 0.6B-shape model:
// it gets a quarter of the prompt and decode. TL_WEB_BENCH_LANES (a comma
// list) runs only the lanes it names.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { serveWeb } from '../scripts/serve_web.mjs';

const CHROMIUM = '/usr/bin/chromium';
const [tinylm, site, model, words = '48', decode = '16', threadsArg = '2'] = process.argv.slice(2);
if (!tinylm || !site || !model) {
  console.error('usage: node bench/web.mjs TINYLM SITE MODEL.slm [WORDS DECODE THREADS]');
  process.exit(2);
}
const threads = Number(threadsArg);
// TL_WEB_BENCH_LANES=simd,threads: only those lanes (the scalar lane takes
// minutes on a 0.6B-shape model).
const only = process.env.TL_WEB_BENCH_LANES ? process.env.TL_WEB_BENCH_LANES.split(',') : null;
const VOCAB = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
const prompt = (n) => Array.from({ length: n }, (_, i) => VOCAB[i % VOCAB.length]).join(' ');

function native(text, maxTokens, t, numerics) {
  const p = spawnSync(tinylm, ['run', model, '--raw', '--prompt', text, '-n', String(maxTokens),
    '--temperature', '0', '-t', String(t), '--lane', numerics === 'strict' ? 'scalar' : 'fast',
    '--json'], { encoding: 'utf8' });
  if (p.status !== 0) throw new Error(`native run failed: ${p.stderr}`);
  return JSON.parse(p.stdout);
}

async function main() {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    console.log('== browser lanes: skipped (npm playwright-core is not installed; scripts/setup.sh runs npm ci)');
    return 0;
  }
  if (!fs.existsSync(CHROMIUM) || !fs.existsSync(path.join(site, 'manifest.json'))) {
    console.log(`== browser lanes: skipped (needs ${CHROMIUM} and a built site at ${site}: make web)`);
    return 0;
  }
  // The site with the model beside it (a hard link, else a copy: the
  // server serves nothing outside its root).
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tinylm-webbench-'));
  fs.cpSync(site, root, { recursive: true });
  const served = path.join(root, 'bench-model.slm');
  try {
    fs.linkSync(model, served);
  } catch {
    fs.copyFileSync(model, served);
  }
  const server = await serveWeb({ root });
  // --enable-unsafe-webgpu: Chromium's WebGPU on Linux (SwiftShader here).
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--enable-unsafe-webgpu'] });
  const rows = [];
  let bad = 0;
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(30 * 60 * 1000);
    await page.goto(`${server.url}/index.html`);
    const lanes = [['scalar', 1], ['simd', 1], ['threads', threads], ['webgpu', 1]];
    for (const [lane, t] of lanes.filter(([l]) => !only || only.includes(l))) {
      const n = lane === 'scalar' ? Math.max(4, Math.floor(Number(words) / 4)) : Number(words);
      const m = lane === 'scalar' ? Math.max(2, Math.floor(Number(decode) / 4)) : Number(decode);
      const text = prompt(n);
      const got = await page.evaluate(async ({ lane, t, text, m }) => {
        const { loadModel } = await import('./tinylm.js');
        const t0 = performance.now();
        const model = await loadModel('bench-model.slm', { lane, threads: t });
        const loadMs = performance.now() - t0;
        // A short reply first, then a fresh session: V8 compiles a wasm
        // function with its optimizing tier only once it has run a while
        // (dynamic tiering), so a first reply times baseline code too.
        await model.generate({ prompt: text, maxTokens: 4, temperature: 0 });
        await model.reset();
        const out = await model.generate({ prompt: text, maxTokens: m, temperature: 0 });
        const used = model.capabilityReceipt.lane, numerics = model.numerics;
        const adapter = used === 'webgpu' ? model.capabilityReceipt.webgpu.adapter : null;
        const refused = model.capabilityReceipt.refused.map((r) => `${r.lane}: ${r.why}`).join('; ');
        await model.dispose();
        return { used, numerics, adapter, refused, loadMs, ids: out.ids, receiptId: out.receiptId, promptTokens: out.promptTokens,
          prefill: out.timings.prefillTokensPerS, decode: out.timings.decodeTokensPerS };
      }, { lane, t, text, m });
      const ref = native(text, m, t, got.numerics);
      // webgpu/1 names itself in the receipt: its id is not fast/4's.
      const same = got.used === lane && JSON.stringify(got.ids) === JSON.stringify(ref.ids) &&
        (lane === 'webgpu' || got.receiptId === ref.receipt_id);
      if (got.used !== lane) console.log(`${lane}: fell back to ${got.used} (${got.refused})`);
      if (!same) bad++;
      rows.push({ lane, t, got, ref, same });
    }
  } finally {
    await browser.close();
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
  console.log(`== browser lanes (headless Chromium, ${path.basename(model)}) beside native tinylm run, greedy`);
  console.log('lane     numerics threads prompt | prefill browser native ratio | decode browser native ratio | load s | same ids+receipt (webgpu: ids)');
  const f = (x) => x.toFixed(1).padStart(8);
  for (const { lane, t, got, ref, same } of rows) {
    const p = ref.timings.prefill_tokens_per_s, d = ref.timings.decode_tokens_per_s;
    console.log(`${lane.padEnd(8)} ${got.numerics.padEnd(8)} ${String(t).padStart(7)} ${String(got.promptTokens).padStart(6)} |` +
      `        ${f(got.prefill)} ${f(p)} ${(got.prefill / p).toFixed(2).padStart(5)} |` +
      `       ${f(got.decode)} ${f(d)} ${(got.decode / d).toFixed(2).padStart(5)} |` +
      ` ${(got.loadMs / 1000).toFixed(1).padStart(6)} | ${same ? 'yes' : 'NO'}`);
    if (got.adapter) {
      const a = got.adapter;
      const name = [a.vendor, a.architecture].filter(Boolean).join(' ');
      console.log(`         webgpu adapter: ${name}${a.isFallback || /swiftshader/i.test(name)
        ? ` (software adapter${/swiftshader/i.test(name) ? ' (SwiftShader)' : ''}: CPU emulation, not a GPU figure)` : ''}`);
    }
  }
  const byLane = Object.fromEntries(rows.map((r) => [r.lane, r.got]));
  if (byLane.simd && byLane.scalar)
    console.log(`simd over scalar (browser): prefill ${(byLane.simd.prefill / byLane.scalar.prefill).toFixed(1)}x, ` +
      `decode ${(byLane.simd.decode / byLane.scalar.decode).toFixed(1)}x`);
  return bad === 0 ? 0 : 1;
}

main().then((rc) => process.exit(rc), (e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
