#!/usr/bin/env node
// Structured output in the browser (issue 39; docs/web.md, Structured
// output): the page's JSON Schema mode and the loader's grammar API in
// headless Chromium (Debian's chromium through npm playwright-core, with
// --enable-unsafe-webgpu for the webgpu lane where an adapter comes).
//
//   node tests/web/structured_test.mjs TINYLM WORKDIR [SITE]
//
// The oracles: native `TINYLM run --json-schema FILE --json` on the same
// artifact, conversation, seed and temperature (ids, receipt id, stop,
// grammar digest; nothing expected is written here), and ajv (npm, draft
// 2020-12) for whether each reply is an instance of the schema. Checked:
// the same constrained request (a small schema, seed 7, temperature 1)
// typed into the page gives native's ids and receipt id on the scalar,
// simd and threads lanes for the tiny golden artifact (its 346-token
// vocabulary; also with thinking on and a think budget of 3, the thought
// shown apart and the JSON after it), and on the simd and threads lanes for the demo model
// (Qwen3's 151,936-token vocabulary; build/demo's artifact, made as make
// demo makes it when missing; not on the scalar lane, whose strict
// numerics take ~0.3 s a token on it); and on the webgpu lane (SwiftShader
// here) for the tiny q8 artifact, whose ids equal native fast's, its
// receipt (webgpu/1) verifying and naming the grammar; every reply parses and ajv accepts
// it; the page shows it pretty-printed with the grammar's digest beside
// the receipt id, and the downloaded receipt verified by native `tinylm
// receipt show` names that digest; a schema that is not JSON is shown
// under the box without a request; a keyword the engine does not enforce
// is unsupported_feature with native's message, under the box and, from
// the loader in the page, a TinylmError with kind json_schema; a grammar
// compiled once (compileGrammar) serves two replies with the same ids as
// one compiled per reply, and once freed is stale_handle; a GBNF grammar
// and a regex give native --grammar's and --regex's replies. A screenshot of
// the page after the demo model's replies is left in WORKDIR/page.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import { serveWeb } from '../../scripts/serve_web.mjs';
import { checker, launchChromium } from './chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TINY = path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-f32.slm');
// The webgpu lane's products are q8/q4 ones: the tiny q8 artifact there
// (SwiftShader decodes the demo model at ~0.6 s a token).
const TINY_Q8 = path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-q8.slm');
// The browser lanes and the native runs that give their bits (docs/web.md).
const NATIVE_LANE = {
  scalar: ['--lane', 'scalar'],
  simd: ['--lane', 'fast', '-t', '1'],
  threads: ['--lane', 'fast', '-t', '2'],
  webgpu: ['--lane', 'fast', '-t', '1'],
};
const THREADS = 2;
// The request: a small schema whose every instance is a few dozen bytes
// (the engine allows at most 20 whitespace bytes between two tokens), so
// a reply at temperature 1 ends within MAX_TOKENS.
const SCHEMA = {
  type: 'object',
  properties: {
    answer: { type: 'integer', minimum: 0, maximum: 999 },
    unit: { enum: ['apples', 'pears'] },
  },
  required: ['answer', 'unit'],
  additionalProperties: false,
};
const SCHEMA_TEXT = JSON.stringify(SCHEMA, null, 2);
const PROMPT = 'What is 17 + 25?';
const SEED = 7;
const MAX_TOKENS = 256;
// A keyword the engine does not enforce (docs/structured.md): refused.
const UNSUPPORTED = { type: 'string', contentEncoding: 'base64' };
// The other two kinds of text, through the loader's grammar and regex.
const GBNF = 'root ::= "answer: " [0-9] [0-9]? "."\n';
const REGEX = '(apples|pears) x[1-9]';

let TINYLM, WORK;
const { check, counts } = checker();
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const t0 = Date.now();
const took = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;
const ajv = new Ajv2020({ strict: true });
const validate = ajv.compile(SCHEMA);

function tinylm(args) {
  return spawnSync(TINYLM, args, { encoding: 'utf8', timeout: 300000 });
}

// The demo model as make demo builds it (scripts/demo_model.sh).
function demoModel() {
  const p = spawnSync(path.join(ROOT, 'scripts', 'demo_model.sh'), [TINYLM, path.join(ROOT, 'build', 'demo')],
    { encoding: 'utf8', timeout: 600000 });
  if (p.status !== 0) throw new Error(`scripts/demo_model.sh: exit ${p.status}: ${p.stderr}`);
  return p.stdout.trim();
}

// The built site without its bundled models, with these ones.
function makeSite(dir, site, models) {
  fs.rmSync(dir, { recursive: true, force: true });
  const bundled = new Set([path.join(site, 'models'), path.join(site, 'models.json')]);
  fs.cpSync(site, dir, { recursive: true, filter: (from) => !bundled.has(from) });
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  for (const [name, file] of Object.entries(models)) {
    try {
      fs.linkSync(file, path.join(dir, 'models', name));
    } catch {
      fs.copyFileSync(file, path.join(dir, 'models', name));
    }
  }
  fs.writeFileSync(path.join(dir, 'models.json'), JSON.stringify({ models: [] }));
}

// Native `tinylm run --json` of the page's request on lane's numerics,
// constrained by schema (a file path): its JSON document, or { error }.
// thinkBudget: thinking on (the chat template's enable_thinking), with
// --think-budget. schemaFile: a file for --json-schema, or the flags of
// another grammar (['--regex', TEXT], ['--grammar', FILE]).
function nativeRun(model, lane, schemaFile, thinkBudget = null) {
  const conv = path.join(WORK, 'conv.json');
  fs.writeFileSync(conv, JSON.stringify({ messages: [{ role: 'user', content: PROMPT }], enable_thinking: thinkBudget !== null }));
  const args = ['run', model, '--messages', conv, '--json', '-n', String(MAX_TOKENS), '--seed', String(SEED),
    '--temperature', '1', ...(Array.isArray(schemaFile) ? schemaFile : ['--json-schema', schemaFile]), ...NATIVE_LANE[lane],
    ...(thinkBudget !== null ? ['--think-budget', String(thinkBudget)] : [])];
  const p = tinylm(args);
  const doc = JSON.parse(p.stdout || 'null');
  if (p.status !== 0 && !doc?.error) throw new Error(`tinylm ${args.join(' ')}: exit ${p.status}: ${p.stderr}`);
  return doc;
}

// The answer of a reply: its text after any <think> block.
const answer = (text) => text.replace(/^\s*<think>[\s\S]*?<\/think>\s*/, '');

// ajv's verdict on a reply's answer: null when it is an instance of
// SCHEMA, else why not.
function invalid(text) {
  let v;
  try {
    v = JSON.parse(answer(text));
  } catch (e) {
    return `not JSON: ${e.message}`;
  }
  return validate(v) ? null : ajv.errorsText(validate.errors);
}

// --- driving the page ------------------------------------------------------
const idle = (page) => page.waitForFunction(() => !window.tinylmPage.state.busy, null, { timeout: 180000 });

async function load(page, url, lane) {
  await page.fill('#model-url', url);
  await page.selectOption('#lane', lane);
  await page.fill('#threads', String(THREADS));
  await page.click('#load');
  await idle(page);
  return page.evaluate(() => ({
    lane: window.tinylmPage.state.model?.capabilityReceipt?.lane ?? null,
    error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
  }));
}

// Types the request into the page (JSON Schema mode, the schema text,
// thinking off or on with a budget, seed, temperature 1) and sends it on
// a new conversation: what the page then shows and holds.
async function send(page, schemaText, thinkBudget = null) {
  await page.click('#clear');
  await page.selectOption('#output-mode', 'schema');
  await page.fill('#schema', schemaText);
  await page.setChecked('#thinking', thinkBudget !== null);
  await page.fill('#think-budget', thinkBudget !== null ? String(thinkBudget) : '');
  await page.fill('#temperature', '1');
  await page.fill('#top-k', '');
  await page.fill('#seed', String(SEED));
  await page.fill('#max-tokens', String(MAX_TOKENS));
  await page.fill('#prompt', PROMPT);
  await page.evaluate(() => { window.lastBefore = window.tinylmPage.state.lastReply; });
  await page.click('#send');
  await idle(page);
  return page.evaluate(() => {
    const last = [...document.querySelectorAll('#transcript .msg.assistant')].pop();
    const reply = window.tinylmPage.state.lastReply;
    return {
      reply: reply === window.lastBefore ? null : reply,
      body: last?.querySelector('.body')?.textContent ?? null,
      think: last?.querySelector('.think')?.hidden === false ? last.querySelector('.think').textContent : null,
      meta: last?.querySelector('.meta')?.textContent ?? '',
      json: last?.classList.contains('json') ?? false,
      error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
      // What is seen: the box's text where it is rendered.
      schemaError: document.getElementById('schema-error').checkVisibility() ? document.getElementById('schema-error').textContent : '',
    };
  });
}

// The downloaded reply receipt through native `tinylm receipt show --json`:
// the sampler node's grammar digest (hex) and whether it verified.
async function receiptGrammar(page, name) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-reply')]);
  const file = path.join(WORK, name);
  await dl.saveAs(file);
  const p = tinylm(['receipt', 'show', '--json', file]);
  let doc = null;
  try { doc = JSON.parse(p.stdout); } catch { /* below */ }
  const sampler = doc?.nodes?.find((n) => n.type === 'sampler');
  return { ok: p.status === 0, id: doc?.root ?? null, grammar: sampler?.metadata?.grammar ?? null, stderr: p.stderr };
}

// One model on one lane through the page, against native; thinkBudget:
// thinking on with that budget.
async function pageCase(page, label, url, model, lane, schemaFile, thinkBudget = null) {
  const since = Date.now();
  const native = nativeRun(model, lane, schemaFile, thinkBudget);
  check(`${label}: native run gives a reply ajv accepts (${native.ids?.length} tokens, stop ${native.stop})`,
    native.stop === 'eos' && invalid(native.text) === null, `${native.stop} ${invalid(native.text)} ${JSON.stringify(native.text)}`);
  let t = Date.now();
  // The thinking case follows the same model on the same lane: kept loaded.
  if (thinkBudget === null) {
    const got = await load(page, url, lane);
    if (!check(`${label}: loads on the ${lane} lane (${took(t)})`, got.lane === lane, got.error || `lane ${got.lane}`)) return null;
  }
  t = Date.now();
  const shown = await send(page, SCHEMA_TEXT, thinkBudget);
  console.log(`note: ${label}: reply ${took(t)}, prefill ${shown.reply?.timings?.prefillUs} us, decode ${shown.reply?.timings?.decodeUs} us`);
  const r = shown.reply;
  if (!check(`${label}: the reply came`, !!r, shown.error)) return null;
  check(`${label}: ids, receipt id and stop equal native run's (${r.ids.length} tokens, ${took(since)})`,
    same(r.ids, native.ids) && r.receiptId === native.receipt_id && r.stop === native.stop,
    `page ${JSON.stringify([r.ids, r.receiptId, r.stop])} native ${JSON.stringify([native.ids, native.receipt_id, native.stop])}`);
  check(`${label}: the grammar digest is native's (${r.grammarDigest?.slice(0, 16)}…)`,
    /^[0-9a-f]{64}$/.test(r.grammarDigest ?? '') && r.grammarDigest === native.grammar, `${r.grammarDigest} native ${native.grammar}`);
  check(`${label}: ajv accepts the reply`, invalid(r.text) === null, `${invalid(r.text)}: ${JSON.stringify(r.text)}`);
  let pretty = null;
  try { pretty = JSON.stringify(JSON.parse(answer(r.text)), null, 2); } catch { /* not JSON: the check above failed */ }
  if (thinkBudget !== null)
    check(`${label}: the thought is shown apart (${JSON.stringify(shown.think?.slice(0, 24))}…), the answer below it`,
      r.text.startsWith('<think>') && shown.think !== null && r.text.includes(shown.think) && !shown.body.includes('<think>'), JSON.stringify(shown));
  check(`${label}: shown pretty-printed, the digest beside the receipt id`,
    shown.json && shown.body === pretty && shown.meta.includes(`grammar ${r.grammarDigest.slice(0, 16)}`) &&
    shown.meta.includes(`receipt ${r.receiptId.slice(0, 16)}`), JSON.stringify(shown));
  return r;
}

// In the page: the loader itself (the page is cross-origin isolated, so
// the model runs in the loader's host worker, tinylm-worker.js).
async function loaderChecks(page, schemaFile) {
  const since = Date.now();
  const badFile = path.join(WORK, 'unsupported.json');
  const nativeBad = nativeRun(TINY, 'simd', badFile);
  const gbnfFile = path.join(WORK, 'answer.gbnf');
  fs.writeFileSync(gbnfFile, GBNF);
  const got = await page.evaluate(async ({ schema, bad, prompt, seed, max, gbnf, regex }) => {
    const { loadModel, TinylmError } = await import('./tinylm.js');
    const m = await loadModel('models/tiny.slm', { lane: 'simd' });
    const out = { inWorker: !m.rt };
    const req = { messages: [{ role: 'user', content: prompt }], enableThinking: false, seed, temperature: 1, maxTokens: max };
    try {
      await m.generate({ ...req, jsonSchema: bad });
      out.bad = 'no error';
    } catch (e) {
      out.bad = { typed: e instanceof TinylmError, code: e.code, detail: e.detail, kind: e.kind, offset: e.offset };
    }
    const once = await m.generate({ ...req, jsonSchema: schema });
    const g = await m.compileGrammar({ jsonSchema: JSON.stringify(schema) });
    const a = await m.generate({ ...req, grammar: g });
    const b = await m.generate({ ...req, grammar: g });
    await m.freeGrammar(g);
    try {
      await m.generate({ ...req, grammar: g });
      out.freed = 'no error';
    } catch (e) {
      out.freed = `${e.code}: ${e.detail}`;
    }
    const pick = (r) => ({ ids: r.ids, receiptId: r.receiptId, grammarDigest: r.grammarDigest, text: r.text });
    Object.assign(out, { g, once: pick(once), a: pick(a), b: pick(b) });
    out.gbnf = pick(await m.generate({ ...req, grammar: gbnf }));
    out.regex = pick(await m.generate({ ...req, regex }));
    await m.dispose();
    return out;
  }, { schema: SCHEMA, bad: UNSUPPORTED, prompt: PROMPT, seed: SEED, max: MAX_TOKENS, gbnf: GBNF, regex: REGEX });
  const bad = got.bad;
  check(`loader: an unsupported keyword is a TinylmError unsupported_feature, kind json_schema, with native's message (${took(since)})`,
    nativeBad.error === 'unsupported_feature' && bad?.typed && bad.code === nativeBad.error && bad.kind === 'json_schema' &&
    nativeBad.detail.endsWith(`: ${bad.detail}`) && bad.detail.includes('contentEncoding') && Number.isInteger(bad.offset),
    `page ${JSON.stringify(bad)} native ${JSON.stringify(nativeBad)}`);
  const native = nativeRun(TINY, 'simd', schemaFile);
  check(`loader: in its host worker (${got.inWorker}), a reply compiled for itself equals native run`,
    got.inWorker && same(got.once.ids, native.ids) && got.once.receiptId === native.receipt_id && got.once.grammarDigest === native.grammar,
    JSON.stringify(got.once));
  check('loader: a grammar compiled once serves two replies, each as the one compiled for itself',
    got.g.kind === 'json_schema' && got.g.digest === native.grammar && same(got.a, got.once) && same(got.b, got.once),
    JSON.stringify({ g: got.g, a: got.a, b: got.b }));
  check(`loader: a freed grammar is stale_handle (${got.freed})`, /^stale_handle: /.test(got.freed), got.freed);
  for (const [kind, flags] of [['gbnf', ['--grammar', gbnfFile]], ['regex', ['--regex', REGEX]]]) {
    const n = nativeRun(TINY, 'simd', flags);
    const r = got[kind];
    check(`loader: a ${kind} grammar's reply (${JSON.stringify(r.text)}) equals native run ${flags[0]}'s, digest included`,
      n.stop === 'eos' && same(r.ids, n.ids) && r.receiptId === n.receipt_id && r.grammarDigest === n.grammar,
      `page ${JSON.stringify(r)} native ${JSON.stringify(n)}`);
  }
}

// The schema box: shown in JSON Schema mode only; JSON checked as typed;
// the engine's refusal under it.
async function schemaBoxChecks(page) {
  const seen = async (mode) => {
    await page.selectOption('#output-mode', mode);
    return page.evaluate(() => ['schema-box', 'schema-error', 'think-budget'].map((id) => {
      const el = document.getElementById(id);
      return `${id} ${el.checkVisibility() ? 'shown' : 'not shown'}${el.disabled ? ' disabled' : ''}`;
    }).join(', '));
  };
  const text = await seen('text'), json = await seen('json'), schema = await seen('schema');
  check(`page: Reply as text: ${text}; JSON: ${json}; JSON Schema: ${schema}`,
    text === 'schema-box not shown, schema-error not shown, think-budget shown disabled' &&
    json === 'schema-box not shown, schema-error not shown, think-budget shown' &&
    schema === 'schema-box shown, schema-error not shown, think-budget shown');
  const notJson = await send(page, '{"type": "object",');
  check(`page: a schema that is not JSON is shown under the box, nothing sent (${notJson.schemaError})`,
    notJson.reply === null && /not JSON/.test(notJson.schemaError) && /invalid_argument/.test(notJson.error), JSON.stringify(notJson));
  const badFile = path.join(WORK, 'unsupported.json');
  const nativeBad = nativeRun(TINY, 'simd', badFile);
  const refused = await send(page, JSON.stringify(UNSUPPORTED, null, 2));
  check('page: an unsupported keyword: the engine\'s refusal naming it under the box and in the error line',
    refused.reply === null && refused.schemaError === `${nativeBad.error}: ${nativeBad.detail.slice(nativeBad.detail.indexOf(': ') + 2)}` &&
    refused.error.includes('contentEncoding') && refused.error.includes('refused, never ignored'), `${JSON.stringify(refused)} native ${JSON.stringify(nativeBad)}`);
  const fixed = await send(page, SCHEMA_TEXT);
  check('page: with the schema corrected the box is clear and the reply comes', !!fixed.reply && fixed.schemaError === '', JSON.stringify(fixed));
}

// The webgpu lane (SwiftShader here): the request on the tiny q8 artifact
// gives native fast's ids; its receipt names webgpu/1 and the grammar.
async function webgpuCheck(page, schemaFile) {
  const since = Date.now();
  const got = await page.evaluate(async ({ schema, prompt, seed, max }) => {
    const { loadModel } = await import('./tinylm.js');
    let m;
    const t = performance.now();
    try {
      m = await loadModel('models/q8.slm', { lane: 'webgpu' });
    } catch (e) {
      return { error: `${e.code}: ${e.detail}` };
    }
    try {
      if (m.lane !== 'webgpu') return { lane: m.lane, refused: m.capabilityReceipt.refused };
      const r = await m.generate({ messages: [{ role: 'user', content: prompt }], enableThinking: false, seed, temperature: 1,
        maxTokens: max, jsonSchema: schema });
      return { lane: m.lane, ids: r.ids, text: r.text, stop: r.stop, grammarDigest: r.grammarDigest, receipt: Array.from(r.receipt),
        loadMs: performance.now() - t - (r.timings.prefillUs + r.timings.decodeUs) / 1000, timings: r.timings,
        stats: await m.gpuStats() };
    } catch (e) {
      return { error: `${e.code}: ${e.detail}` };
    } finally {
      await m.dispose();
    }
  }, { schema: SCHEMA, prompt: PROMPT, seed: SEED, max: MAX_TOKENS });
  if (got.lane !== 'webgpu' && !got.error) {
    console.log(`skip: webgpu lane: no adapter here (${JSON.stringify(got.refused)})`);
    return;
  }
  if (!check(`webgpu: the tiny q8 artifact's constrained reply came (${took(since)})`, !got.error, got.error)) return;
  console.log(`note: webgpu: load ${(got.loadMs / 1000).toFixed(1)} s, prefill ${got.timings.prefillUs} us, decode ${got.timings.decodeUs} us`);
  const native = nativeRun(TINY_Q8, 'webgpu', schemaFile);
  check(`webgpu: the products ran on the device (${got.stats?.products} products, no failure)`,
    got.stats?.products > 0 && got.stats.failures === 0, JSON.stringify(got.stats));
  check(`webgpu: ids equal native fast's (${got.ids.length} tokens), ajv accepts the reply`,
    same(got.ids, native.ids) && got.stop === native.stop && invalid(got.text) === null,
    `webgpu ${JSON.stringify(got.ids)} native ${JSON.stringify(native.ids)} ${invalid(got.text)}`);
  const file = path.join(WORK, 'webgpu-run.cbor');
  fs.writeFileSync(file, Uint8Array.from(got.receipt));
  const p = tinylm(['receipt', 'show', '--json', file]);
  let doc = null;
  try { doc = JSON.parse(p.stdout); } catch { /* below */ }
  const grammar = doc?.nodes?.find((n) => n.type === 'sampler')?.metadata?.grammar;
  check('webgpu: the receipt verifies, names webgpu/1 and the grammar digest',
    p.status === 0 && p.stdout.includes('"webgpu/1"') && grammar === native.grammar && got.grammarDigest === native.grammar,
    p.stderr || `${grammar} ${got.grammarDigest} native ${native.grammar}`);
}

async function main() {
  if (process.argv.length !== 4 && process.argv.length !== 5) {
    console.error('usage: node tests/web/structured_test.mjs TINYLM WORKDIR [SITE]');
    return 2;
  }
  TINYLM = path.resolve(process.argv[2]);
  WORK = path.resolve(process.argv[3]);
  const site = path.resolve(process.argv[4] ?? path.join(ROOT, 'build', 'web'));
  if (!fs.existsSync(path.join(site, 'manifest.json'))) {
    console.log(`FAIL ${site}/manifest.json is missing (make web-modules web-page)`);
    return 1;
  }
  fs.mkdirSync(WORK, { recursive: true });
  const schemaFile = path.join(WORK, 'schema.json');
  fs.writeFileSync(schemaFile, SCHEMA_TEXT);
  fs.writeFileSync(path.join(WORK, 'unsupported.json'), JSON.stringify(UNSUPPORTED));
  let since = Date.now();
  const demo = demoModel();
  console.log(`note: demo model ${path.relative(ROOT, demo)} (${took(since)})`);
  makeSite(path.join(WORK, 'site'), site, { 'tiny.slm': TINY, 'q8.slm': TINY_Q8, 'demo.slm': demo });
  const server = await serveWeb({ root: path.join(WORK, 'site') });
  const browser = await launchChromium(['--enable-unsafe-webgpu', '--no-sandbox']);
  if (!browser) {
    await server.close();
    return 0;
  }
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(180000);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/index.html`);
    await page.evaluate(() => window.tinylmPage.ready);
    check('page: cross-origin isolated (the threads lane is offered)', await page.evaluate(() => crossOriginIsolated));
    for (const lane of ['scalar', 'simd', 'threads'])
      await pageCase(page, `tiny, ${lane}`, 'models/tiny.slm', TINY, lane, schemaFile);
    // Thinking on: the thought free for the budget, then the schema.
    await pageCase(page, 'tiny, threads, thinking with a budget of 3', 'models/tiny.slm', TINY, 'threads', schemaFile, 3);
    await schemaBoxChecks(page);
    let last = null;
    for (const lane of ['simd', 'threads']) last = await pageCase(page, `demo, ${lane}`, 'models/demo.slm', demo, lane, schemaFile);
    if (last) {
      const rec = await receiptGrammar(page, 'demo-reply.cbor');
      check('page: the downloaded receipt verifies with the reply\'s id and names its grammar digest',
        rec.ok && rec.id === last.receiptId && rec.grammar === last.grammarDigest, JSON.stringify(rec));
    }
    check('page: no script errors', errors.length === 0, errors.join('; '));
    await page.screenshot({ path: path.join(WORK, 'page.png'), fullPage: true });
    const api = await browser.newPage();
    api.setDefaultTimeout(180000);
    await api.goto(`${server.url}/index.html`);
    await loaderChecks(api, schemaFile);
    since = Date.now();
    await webgpuCheck(api, schemaFile);
    console.log(`note: webgpu ${took(since)}`);
  } finally {
    await browser.close();
    await server.close();
  }
  console.log(`note: stage time ${took(t0)}`);
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  return counts.failed === 0 ? 0 : 1;
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`FAIL ${e.stack || e}`);
  console.log(`${counts.passed} passed, ${counts.failed + 1} failed`);
  process.exit(1);
});
