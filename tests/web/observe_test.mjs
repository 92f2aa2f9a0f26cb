#!/usr/bin/env node
// Observation records across lanes (issue 13 item 10, docs/observe.md).
//
//   node tests/web/observe_test.mjs TINYLM WORKDIR SITE MUTANT
//
// TINYLM is a native build of the CLI; SITE the browser site (`make web`:
// build/web); MUTANT the test-only SIMD128 module with its planted kernel
// fault and its own manifest (`make web-mutant`: build/web-mutant).
//
// Natively: the fast lane's records are identical across kernel variants
// (TINYLM_KERNELS) and thread counts (-t 1/2/3); the strict lane compared
// with the fast lane is "different_profile", never a divergence; bad input
// to observe and --compare is a typed error. In headless Chromium (the
// site served as `make serve-web` serves it): the tiny models' records in
// each browser lane (scalar, simd, threads) equal native's, record by
// record, lane for lane by profile (the scalar module runs the strict
// lane, or the fast profile when asked; simd and threads the fast
// profile); and a site whose SIMD128 module carries the planted fault is
// located by `tinylm observe --compare` at the stage, layer and position
// the fault first touches (worked out here from the model's config).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serveWeb } from '../../scripts/serve_web.mjs';
import { launchChromium } from './chromium.mjs';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const MODELS = {
  f32: path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-f32.slm'),
  q8: path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-q8.slm'),
};
const PROMPT = 'Hello world, this is a test of the lanes';

let TINYLM;
let WORK;
let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  if (detail.length > 800) detail = `${detail.slice(0, 800)} …`;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
  return ok;
}

function tinylm(args, env = {}) {
  return spawnSync(TINYLM, args, { encoding: 'utf8', timeout: 120000, env: { ...process.env, ...env } });
}

// A native observation document; its path.
let serial = 0;
function nativeObserve(model, lane, extra = [], env = {}) {
  const out = path.join(WORK, `native-${serial++}.cbor`);
  const p = tinylm(['observe', MODELS[model], '--prompt', PROMPT, '-o', out, ...lane, ...extra], env);
  if (p.status !== 0) throw new Error(`tinylm observe ${lane.join(' ')}: exit ${p.status}: ${p.stderr}`);
  return out;
}

// tinylm observe --compare A B --json: the parsed verdict and exit status.
function compare(a, b) {
  const p = tinylm(['observe', '--compare', a, b, '--json']);
  let v = null;
  try {
    v = JSON.parse(p.stdout);
  } catch {
    v = { verdict: `unparsed: ${p.stdout}${p.stderr}` };
  }
  v.status = p.status;
  return v;
}

const FAST = ['--lane', 'fast'];
const STRICT = ['--lane', 'scalar'];

function nativeChecks() {
  // Kernel variants this CPU runs: each one that starts is compared; one it
  // cannot run is refused by tinylm (unsupported_feature) and listed.
  for (const model of ['f32', 'q8']) {
    const base = nativeObserve(model, FAST, ['-t', '1']);
    for (const t of ['2', '3']) {
      const v = compare(base, nativeObserve(model, FAST, ['-t', t]));
      check(`native ${model}: fast lane -t 1 and -t ${t} give identical records`, v.verdict === 'identical' && v.status === 0 &&
        v.records.compared === v.a.records && v.a.records > 0, JSON.stringify(v));
    }
    for (const k of ['scalar', 'avx2', 'avx512']) {
      const out = path.join(WORK, `native-${serial++}.cbor`);
      const p = tinylm(['observe', MODELS[model], '--prompt', PROMPT, '-o', out, ...FAST, '-t', '2'], { TINYLM_KERNELS: k });
      if (p.status !== 0 && /unsupported_feature/.test(p.stderr)) {
        console.log(`skip: native ${model}: kernel variant ${k} does not run on this CPU`);
        continue;
      }
      const v = compare(base, out);
      check(`native ${model}: TINYLM_KERNELS=${k} -t 2 gives the records of the default variant at -t 1`,
        v.verdict === 'identical' && v.b.isa === k, JSON.stringify(v));
    }
    const strict = nativeObserve(model, STRICT);
    const v = compare(base, strict);
    check(`native ${model}: strict against fast is different_profile (named, exit 1), not a divergence`,
      v.verdict === 'different_profile' && v.status === 1 && v.a.profile !== v.b.profile && !!v.first_divergence, JSON.stringify(v));
    const again = compare(strict, nativeObserve(model, STRICT));
    check(`native ${model}: the strict lane twice gives identical records`, again.verdict === 'identical', JSON.stringify(again));
  }
  // Another prompt or artifact: not comparable, and said so.
  const a = nativeObserve('q8', FAST);
  const other = path.join(WORK, 'other-prompt.cbor');
  let p = tinylm(['observe', MODELS.q8, '--ids', '1 2 3', '-o', other]);
  check('native: --ids observes given ids', p.status === 0, p.stderr);
  let v = compare(a, other);
  check('native: another prompt is different_input (prompt), exit 1', v.verdict === 'different_input' && v.different === 'prompt' && v.status === 1, JSON.stringify(v));
  v = compare(a, nativeObserve('f32', FAST));
  check('native: another artifact is different_input (artifact)', v.verdict === 'different_input' && v.different === 'artifact', JSON.stringify(v));

  // Bad input: typed errors, exit codes, nothing written where refused.
  const bad = (name, args, code, rc = 1) => {
    const r = tinylm(args);
    check(`native: ${name}: exit ${rc}, error: ${code}`, r.status === rc && r.stderr.startsWith(`error: ${code}:`), `${r.status} ${r.stderr}`);
  };
  const doc = fs.readFileSync(a);
  const truncated = path.join(WORK, 'truncated.cbor');
  fs.writeFileSync(truncated, doc.subarray(0, doc.length - 7));
  const notObs = path.join(WORK, 'not-observe.cbor');
  // A valid deterministic CBOR map that is not this format: {"format": "x"}.
  fs.writeFileSync(notObs, Buffer.from([0xa1, 0x66, ...Buffer.from('format'), 0x61, 0x78]));
  bad('--compare with a truncated document', ['observe', '--compare', a, truncated], 'invalid_cbor');
  bad('--compare with another format', ['observe', '--compare', a, notObs], 'invalid_argument');
  const junk = path.join(WORK, 'junk.cbor');
  fs.writeFileSync(junk, Buffer.from([0xff, 0x00, 0x01]));
  bad('--compare with bytes that are not CBOR', ['observe', '--compare', junk, a], 'invalid_cbor');
  // The model file starts with a CBOR byte string (its magic), then more.
  bad('--compare with the model file', ['observe', '--compare', a, MODELS.q8], 'invalid_argument');
  // A document's declared model layers size the comparison; its records must
  // justify them (layers x positions <= records). The fuzz seed
  // tests/fuzz/corpus/observe/layers-beyond-records.cbor (338 bytes: 4,000,000
  // layers, 2 ids, 1 record) made --compare take 2.9 GB over 30 s and call it
  // identical; refused at once under a 1 GB address-space cap (ulimit -v), which
  // an allocation sized by the declared layers would exceed.
  {
    const crafted = path.join(ROOT, 'tests', 'fuzz', 'corpus', 'observe', 'layers-beyond-records.cbor');
    const t0 = Date.now();
    const r = spawnSync('bash', ['-c', 'ulimit -v 1000000 && exec "$@"', 'bash', TINYLM, 'observe', '--compare', crafted, crafted],
      { encoding: 'utf8', timeout: 60000 });
    const secs = (Date.now() - t0) / 1000;
    check('native: --compare on a small document declaring millions of layers: exit 1, error: invalid_argument naming model layers, ' +
      'within 10 s and 1 GB', r.status === 1 && r.stderr.startsWith('error: invalid_argument:') && r.stderr.includes('model layers') && secs < 10,
    `${r.status} ${secs}s ${r.stderr}`);
  }
  bad('--compare with a missing file', ['observe', '--compare', a, path.join(WORK, 'nope.cbor')], 'io');
  bad('--compare with one document', ['observe', '--compare', a], 'usage', 2);
  bad('an id outside the vocabulary', ['observe', MODELS.q8, '--ids', '1 99999', '-o', path.join(WORK, 'x.cbor')], 'invalid_argument');
  bad('--ids that are not numbers', ['observe', MODELS.q8, '--ids', '1 x', '-o', path.join(WORK, 'x.cbor')], 'usage', 2);
  bad('an empty prompt', ['observe', MODELS.q8, '--prompt', '', '-o', path.join(WORK, 'x.cbor')], 'invalid_argument');
  bad('no -o', ['observe', MODELS.q8, '--prompt', 'hi'], 'usage', 2);
  bad('both --prompt and --ids', ['observe', MODELS.q8, '--prompt', 'hi', '--ids', '1', '-o', path.join(WORK, 'x.cbor')], 'usage', 2);
  check('native: nothing written where refused', !fs.existsSync(path.join(WORK, 'x.cbor')));
  const before = fs.readFileSync(MODELS.q8);
  bad('-o the model itself', ['observe', MODELS.q8, '--prompt', 'hi', '-o', MODELS.q8, '--force'], 'invalid_argument');
  check('native: the model is unchanged', before.equals(fs.readFileSync(MODELS.q8)));
  bad('an existing -o without --force', ['observe', MODELS.q8, '--prompt', 'hi', '-o', a], 'invalid_argument');
}

// --- the browser ---------------------------------------------------------------
function makeSite(dir, site, overlay) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  for (const f of fs.readdirSync(site)) {
    if (f === 'models' || f === 'models.json') continue;
    fs.copyFileSync(path.join(site, f), path.join(dir, f));
  }
  // The mutant's module and its own manifest replace the built ones.
  if (overlay) for (const f of fs.readdirSync(overlay)) fs.copyFileSync(path.join(overlay, f), path.join(dir, f));
  for (const [name, file] of Object.entries(MODELS)) fs.copyFileSync(file, path.join(dir, 'models', `${name}.slm`));
  fs.writeFileSync(path.join(dir, 'observe.html'), '<!doctype html><meta charset="utf-8"><title>observe</title>\n');
}

// Loads a model on a lane in the page, observes PROMPT, returns the
// document's bytes (and the lane's capability receipt) or the error.
async function pageObserve(page, model, opts, args = { prompt: PROMPT }) {
  return page.evaluate(async ({ model: m, opts: o, args: a }) => {
    const { loadModel } = await import('./tinylm.js');
    let lm = null;
    try {
      lm = await loadModel(`models/${m}.slm`, o);
      const doc = await lm.observe(a);
      return { bytes: Array.from(doc), receipt: lm.capabilityReceipt, numerics: lm.numerics };
    } catch (e) {
      return { error: `${e.code}: ${e.message}`, receipt: e.capabilityReceipt ?? lm?.capabilityReceipt ?? null };
    } finally {
      await lm?.dispose();
    }
  }, { model, opts, args });
}

function saveDoc(name, got) {
  const file = path.join(WORK, `${name}.cbor`);
  fs.writeFileSync(file, Buffer.from(got.bytes));
  return file;
}

// Each browser lane and the native run of the same profile.
const BROWSER_LANES = [
  { name: 'scalar', opts: { lane: 'scalar' }, native: STRICT },
  { name: 'scalar, fast numerics', opts: { lane: 'scalar', numerics: 'fast' }, native: [...FAST, '-t', '1'] },
  { name: 'simd', opts: { lane: 'simd' }, native: [...FAST, '-t', '1'] },
  // (An isolated page runs every lane in a worker; this one on its thread.)
  { name: 'simd, on the page thread', opts: { lane: 'simd', worker: false }, native: [...FAST, '-t', '1'] },
  { name: 'threads at 2', opts: { lane: 'threads', threads: 2 }, native: [...FAST, '-t', '2'] },
  { name: 'threads at 3', opts: { lane: 'threads', threads: 3 }, native: [...FAST, '-t', '1'] },
];

// The stage the planted fault (q8 rows whose width is a multiple of 64
// lose a result, kernels_wasm_simd.c) first reaches in model's forward
// pass: the first projection, in the order of the computation, whose
// input width is such a multiple; every position passes through it.
function mutantTarget(model) {
  const p = tinylm(['inspect', MODELS[model], '--json']);
  const c = JSON.parse(p.stdout).config;
  const widths = [ // stage: the width of the rows its weights are made of
    ['q', c.hidden_size], ['k', c.hidden_size], ['v', c.hidden_size], ['o_proj', c.num_attention_heads * c.head_dim],
    ['gate', c.hidden_size], ['up', c.hidden_size], ['down', c.intermediate_size],
  ];
  const hit = widths.find(([, n]) => n % 64 === 0);
  return hit ? { stage: hit[0], layer: 0, position: 0 } : null;
}

async function browserChecks(browser, site, mutant) {
  const plainSite = path.join(WORK, 'site');
  const mutantSite = path.join(WORK, 'mutant-site');
  makeSite(plainSite, site, null);
  makeSite(mutantSite, site, mutant);
  const served = await serveWeb({ root: plainSite });
  const servedMutant = await serveWeb({ root: mutantSite });
  try {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(new URL('observe.html', served.url).href);
    const isolated = await page.evaluate(() => self.crossOriginIsolated);
    check('chromium: the test page is cross-origin isolated (threads can run)', isolated === true);
    for (const model of ['f32', 'q8']) {
      const natives = new Map();
      for (const lane of BROWSER_LANES) {
        const got = await pageObserve(page, model, lane.opts);
        if (!check(`chromium ${model} ${lane.name}: observe returns a document on the lane asked for`,
          !!got.bytes && got.receipt?.lane === lane.opts.lane && (got.receipt.refused ?? []).length === 0,
          JSON.stringify({ error: got.error, lane: got.receipt?.lane, refused: got.receipt?.refused }))) continue;
        const key = lane.native.join(' ');
        if (!natives.has(key)) natives.set(key, nativeObserve(model, lane.native));
        const v = compare(natives.get(key), saveDoc(`${model}-${lane.name.replace(/\W+/g, '-')}`, got));
        check(`chromium ${model} ${lane.name}: every record equals native ${key} (${v.records?.compared} records)`,
          v.verdict === 'identical' && v.b.host === 'wasm32' && v.records.compared === v.a.records && v.a.records > 0 &&
          v.b.threads === (lane.opts.threads ?? 1),
          JSON.stringify(v));
      }
    }
    // By ids too, and the typed errors of the JS API.
    {
      const got = await pageObserve(page, 'q8', { lane: 'simd' }, { ids: [1, 2, 3, 4] });
      const out = path.join(WORK, 'native-ids.cbor');
      const p = tinylm(['observe', MODELS.q8, '--ids', '1 2 3 4', '-o', out, ...FAST, '-t', '1']);
      const v = got.bytes && p.status === 0 ? compare(out, saveDoc('q8-simd-ids', got)) : { verdict: got.error ?? p.stderr };
      check('chromium q8 simd: observe({ids}) equals native --ids', v.verdict === 'identical', JSON.stringify(v));
      const none = await pageObserve(page, 'q8', { lane: 'simd' }, {});
      check('chromium: observe() without prompt or ids: invalid_argument', /^invalid_argument:/.test(none.error ?? ''), JSON.stringify(none.error));
      const outside = await pageObserve(page, 'q8', { lane: 'simd' }, { ids: [1, 99999] });
      check('chromium: an id outside the vocabulary: invalid_argument', /^invalid_argument:/.test(outside.error ?? ''), JSON.stringify(outside.error));
      const stale = await page.evaluate(async () => {
        const { loadModel } = await import('./tinylm.js');
        const out = {};
        for (const [name, opts] of [['page', { lane: 'simd', worker: false }], ['worker', { lane: 'threads', threads: 2 }]]) {
          const m = await loadModel('models/q8.slm', opts);
          await m.dispose();
          try {
            await m.observe({ prompt: 'hi' });
            out[name] = 'no error';
          } catch (e) {
            out[name] = e.code;
          }
        }
        return out;
      });
      check('chromium: observe on a disposed model: stale_handle (in the page and in a worker)',
        stale.page === 'stale_handle' && stale.worker === 'stale_handle', JSON.stringify(stale));
    }
    check('chromium: no script errors', errors.length === 0, errors.join('; '));
    await ctx.close();

    // The planted fault: the mutant's lane passes its self-tests (the fault
    // misses their shapes), and its records name where it first acts.
    const mctx = await browser.newContext();
    const mpage = await mctx.newPage();
    await mpage.goto(new URL('observe.html', servedMutant.url).href);
    const want = mutantTarget('q8');
    check('the fault\'s first stage follows from the tiny q8 config', !!want, JSON.stringify(want));
    const got = await pageObserve(mpage, 'q8', { lane: 'simd' });
    const r = got.receipt ?? {};
    if (check('mutant: the SIMD128 lane loads and passes every self-test', !!got.bytes && r.lane === 'simd' &&
      (r.selfTests?.simd ?? []).every((t) => t.ok), JSON.stringify({ error: got.error, lane: r.lane, tests: r.selfTests }))) {
      const v = compare(nativeObserve('q8', [...FAST, '-t', '1']), saveDoc('q8-mutant', got));
      const d = v.first_divergence ?? {};
      check('mutant: compare says diverged (exit 1)', v.verdict === 'diverged' && v.status === 1, JSON.stringify(v));
      check(`mutant: the first divergence is stage ${want?.stage}, layer ${want?.layer}, position ${want?.position}`,
        !!want && d.stage === want.stage && d.layer === want.layer && d.position === want.position, JSON.stringify(d));
      check('mutant: both records are named, with different digests and the same count',
        !!d.a && !!d.b && d.a.blake3 !== d.b.blake3 && d.a.count === d.b.count, JSON.stringify(d));
    }
    await mctx.close();
  } finally {
    await served.close();
    await servedMutant.close();
  }
}

async function main() {
  if (process.argv.length !== 6) {
    console.error('usage: node tests/web/observe_test.mjs TINYLM WORKDIR SITE MUTANT');
    return 2;
  }
  TINYLM = path.resolve(process.argv[2]);
  WORK = path.resolve(process.argv[3]);
  const site = path.resolve(process.argv[4]);
  const mutant = path.resolve(process.argv[5]);
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  nativeChecks();
  for (const f of [path.join(site, 'tinylm.js'), path.join(site, 'manifest.json'), path.join(mutant, 'tinylm-simd.wasm'), path.join(mutant, 'manifest.json')]) {
    if (!fs.existsSync(f)) {
      check(`${f} exists (make web-modules web-mutant)`, false);
      return 1;
    }
  }
  const browser = await launchChromium();
  if (browser) {
    try {
      await browserChecks(browser, site, mutant);
    } finally {
      await browser.close();
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`FAIL ${e.stack || e}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
