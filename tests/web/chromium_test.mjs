#!/usr/bin/env node
// The chat page in real Chromium (issue 13 item 9): Debian's chromium,
// headless, driven through npm playwright-core, against the page as
// `make serve-web` serves it (scripts/serve_web.mjs, in-process here).
//
//   node tests/web/chromium_test.mjs TINYLM WORKDIR [SITE]
//
// TINYLM is a native build of the CLI: every output of the page is checked
// against `TINYLM run --json` on the same artifact, conversation and
// settings (ids and receipt id), never against a value written here. The
// site is SITE (default build/web/, as `make web` builds it), copied to
// WORKDIR with the tiny golden artifacts (tests/golden/slm/tiny-f32.slm,
// tiny-q8.slm) and a models.json of its own, once as built and once with
// one byte of a module changed. A screenshot of the page after a few
// replies is left in WORKDIR/page.png.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveWeb } from '../../scripts/serve_web.mjs';
import { launchChromium } from './chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let SITE = path.join(ROOT, 'build', 'web');
const MODEL = path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-f32.slm');
const MODEL_Q8 = path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-q8.slm');
// make web-pooltrap: the threads module whose pool worker 1 traps in its 200th call.
const POOLTRAP = process.env.TL_WEB_POOLTRAP || path.join(ROOT, 'build', 'web-pooltrap', 'tinylm-threads.wasm');
// The browser lanes and the native run that must give the same bits:
// the loader runs the strict lane on the scalar module and the fast lane
// on the SIMD128 ones (docs/web.md), whose profile gives the same bits at
// any thread count.
const NATIVE_LANE = {
  scalar: ['--lane', 'scalar'],
  simd: ['--lane', 'fast', '-t', '1'],
  threads: ['--lane', 'fast', '-t', '2'],
};
const THREADS = 2;

let TINYLM;
let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  if (detail.length > 600) detail = `${detail.slice(0, 600)} …`;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
  return ok;
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// --- the sites ---------------------------------------------------------------
function makeSite(dir, tamper) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  for (const f of fs.readdirSync(SITE)) {
    // The bundled demo model is not needed here; the tiny one is.
    if (f === 'models' || f === 'models.json') continue;
    fs.copyFileSync(path.join(SITE, f), path.join(dir, f));
  }
  fs.copyFileSync(MODEL, path.join(dir, 'models', 'tiny.slm'));
  fs.copyFileSync(MODEL_Q8, path.join(dir, 'models', 'q8.slm'));
  const bytes = fs.readFileSync(MODEL);
  // A truncated and a byte-flipped artifact for the page's error messages.
  fs.writeFileSync(path.join(dir, 'models', 'truncated.slm'), bytes.subarray(0, bytes.length - 1000));
  const flipped = Buffer.from(bytes);
  flipped[flipped.length - 100] ^= 0x01; // inside the tensor data
  fs.writeFileSync(path.join(dir, 'models', 'flipped.slm'), flipped);
  // The bundled list make web writes, with one entry whose id is not its bytes'.
  const id = createHash('sha256').update(bytes).digest('hex');
  fs.writeFileSync(path.join(dir, 'models.json'), JSON.stringify({ models: [
    { name: 'tiny (bundled)', url: 'models/tiny.slm', bytes: bytes.length, artifactId: id },
    { name: 'mislabelled', url: 'models/flipped.slm', bytes: flipped.length, artifactId: id },
  ] }));
  if (tamper) {
    const file = path.join(dir, tamper);
    const b = fs.readFileSync(file);
    b[b.length >> 1] ^= 0x01;
    fs.writeFileSync(file, b);
  }
}

// --- native reference --------------------------------------------------------
function nativeRun(work, conversation, settings, lane, model = MODEL) {
  const conv = path.join(work, 'conv.json');
  fs.writeFileSync(conv, JSON.stringify(conversation));
  const args = ['run', model, '--messages', conv, '--json', '-n', String(settings.maxTokens),
    '--seed', String(settings.seed), ...NATIVE_LANE[lane]];
  // The settings the page sent; the others are the artifact's defaults on both sides.
  if ('temperature' in settings) args.push('--temperature', String(settings.temperature));
  if ('topK' in settings) args.push('--top-k', String(settings.topK));
  const p = spawnSync(TINYLM, args, { encoding: 'utf8', timeout: 120000 });
  if (p.status !== 0) throw new Error(`tinylm ${args.join(' ')}: exit ${p.status}: ${p.stderr}`);
  return JSON.parse(p.stdout);
}

// --- driving the page ------------------------------------------------------------
async function openPage(ctx, url) {
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.goto(url);
  await page.evaluate(() => window.tinylmPage.ready);
  return page;
}
const idle = (page) => page.waitForFunction(() => !window.tinylmPage.state.busy, null, { timeout: 120000 });

async function load(page, { url = 'models/tiny.slm', pick = null, lane = '', threads = THREADS, budget = '' } = {}) {
  await page.fill('#model-url', url);
  if (pick !== null) await page.selectOption('#model-list', { index: pick });
  await page.selectOption('#lane', lane);
  await page.fill('#threads', String(threads));
  await page.fill('#budget', String(budget));
  await page.click('#load');
  await idle(page);
  return page.evaluate(() => ({
    loaded: !!window.tinylmPage.state.model,
    artifactId: window.tinylmPage.state.model?.artifactId ?? null,
    receipt: window.tinylmPage.state.model?.capabilityReceipt ?? null,
    status: document.getElementById('model-status').textContent,
    error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
    panel: document.getElementById('caps-panel').innerText,
  }));
}

// Clicks a download button of the page, saves the file as WORKDIR/name and
// reads it with native `tinylm receipt show --json`: { p (the process),
// doc (its JSON, null when it printed none) }.
async function showDownloaded(page, button, work, name) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
  const file = path.join(work, name);
  await dl.saveAs(file);
  const p = spawnSync(TINYLM, ['receipt', 'show', '--json', file], { encoding: 'utf8' });
  let doc = null;
  try { doc = JSON.parse(p.stdout); } catch { /* the caller reports p */ }
  return { p, doc };
}

const pageError = (page) => page.$eval('#error', (e) => (e.hidden ? '' : e.textContent));

async function send(page, text, s) {
  if (await page.$eval('#prompt', (e) => e.disabled)) return { reply: null, error: 'no model is loaded' };
  await page.fill('#temperature', String(s.temperature ?? ''));
  await page.fill('#top-k', String(s.topK ?? ''));
  await page.fill('#seed', String(s.seed));
  await page.fill('#max-tokens', String(s.maxTokens));
  // UNTOUCHED: the box as the page has it (its default on a fresh page).
  if (s.enableThinking !== UNTOUCHED) await page.setChecked('#thinking', !!s.enableThinking);
  await page.evaluate(() => { window.tinylmPage.state.lastReply = null; });
  await page.fill('#prompt', text);
  await page.click('#send');
  await idle(page);
  const got = await page.evaluate(() => ({
    reply: window.tinylmPage.state.lastReply,
    error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
  }));
  return { ...got, typed: { text, settings: s } };
}

const UNTOUCHED = 'untouched';
// The thinking the typed settings ask for: the page's default is on
// (Qwen3's own: its template thinks unless enable_thinking is false).
const thinkingOf = (s) => (s.enableThinking === UNTOUCHED ? true : !!s.enableThinking);

// The page's reply equals native's on the conversation and the settings the
// test TYPED (not those the page says it used: a page that ignored its seed
// field would report the seed it used and agree with itself).
function compareNative(work, name, got, lane) {
  if (!check(`${name}: the page replied`, !!got.reply, got.error)) return;
  const r = got.reply;
  const { text, settings: s } = got.typed;
  const typed = { seed: s.seed, maxTokens: s.maxTokens };
  if (s.temperature !== undefined && s.temperature !== '') typed.temperature = s.temperature;
  if (s.topK !== undefined && s.topK !== '') typed.topK = s.topK;
  const msgs = r.conversation?.messages ?? [];
  const last = msgs[msgs.length - 1];
  if (!check(`${name}: the conversation ends with the text typed, thinking as ticked`,
    last?.role === 'user' && last.content === text && r.conversation.enable_thinking === thinkingOf(s),
    JSON.stringify(r.conversation))) return;
  const n = nativeRun(work, r.conversation, typed, lane);
  check(`${name}: ids equal native tinylm run (${n.ids.length} tokens)`, same(r.ids, n.ids),
    `page ${JSON.stringify(r.ids)} native ${JSON.stringify(n.ids)}`);
  check(`${name}: receipt id equals native`, r.receiptId === n.receipt_id, `page ${r.receiptId} native ${n.receipt_id}`);
  check(`${name}: stop reason equals native`, r.stop === n.stop, `page ${r.stop} native ${n.stop}`);
}

// Presses Stop as soon as the next reply's first streamed text appears.
function stopOnFirstToken(page) {
  return page.evaluate(() => {
    const t = document.getElementById('transcript');
    new MutationObserver((_, obs) => {
      const s = t.querySelector('.msg.streaming .body');
      if (s && s.textContent.length) {
        document.getElementById('stop').click();
        obs.disconnect();
      }
    }).observe(t, { subtree: true, characterData: true, childList: true });
  });
}

const GREEDY = { temperature: 0, topK: 0, seed: 0, maxTokens: 12 };
const SAMPLED = { temperature: 0.9, topK: 40, seed: 5, maxTokens: 16 };

async function main() {
  if (process.argv.length !== 4 && process.argv.length !== 5) {
    console.error('usage: node tests/web/chromium_test.mjs TINYLM WORKDIR [SITE]');
    return 2;
  }
  if (process.argv[4]) SITE = path.resolve(process.argv[4]);
  TINYLM = path.resolve(process.argv[2]);
  const work = path.resolve(process.argv[3]);
  for (const f of ['index.html', 'app.js', 'tinylm.js', 'manifest.json']) {
    if (!fs.existsSync(path.join(SITE, f))) {
      console.log(`FAIL ${SITE}/${f} is missing (make web)`);
      return 1;
    }
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(SITE, 'manifest.json'), 'utf8'));
  fs.mkdirSync(work, { recursive: true });
  makeSite(path.join(work, 'site'), null);
  {
    // The page and loader again under pooltrap/, its threads module the
    // one whose pool worker traps (its manifest says so, so it loads).
    const dir = path.join(work, 'site', 'pooltrap');
    fs.mkdirSync(dir);
    for (const f of fs.readdirSync(SITE)) if (f !== 'models' && f !== 'models.json') fs.copyFileSync(path.join(SITE, f), path.join(dir, f));
    if (!fs.existsSync(POOLTRAP)) {
      console.log(`FAIL ${POOLTRAP} is missing (make web-pooltrap)`);
      return 1;
    }
    const trap = fs.readFileSync(POOLTRAP);
    fs.writeFileSync(path.join(dir, 'tinylm-threads.wasm'), trap);
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    m.modules.threads = { ...m.modules.threads, size: trap.length, sha256: createHash('sha256').update(trap).digest('hex') };
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(m));
  }

  const requests = [];
  const isolated = await serveWeb({ root: path.join(work, 'site'), log: (l) => requests.push(l) });
  const plain = await serveWeb({ root: path.join(work, 'site'), isolation: false });
  let browser = null;
  try {
    await serverChecks(work, isolated.url, plain.url);
    await serverRaceChecks(work);
    browser = await launchChromium();
    if (browser) await browserChecks(browser, work, manifest, isolated, plain, requests);
  } finally {
    await browser?.close();
    await isolated.close();
    await plain.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

// What `make serve-web` promises, over plain HTTP: the isolation headers
// (or their absence), the MIME types, nothing outside the root.
function get(url, { method = 'GET', rawPath = null, headers = {} } = {}) {
  const u = new URL(url);
  return new Promise((ok, fail) => {
    const req = http.request({ host: u.hostname, port: u.port, path: rawPath ?? u.pathname, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => ok({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', fail);
    req.end();
  });
}
async function serverChecks(work, url, plainUrl) {
  fs.writeFileSync(path.join(work, 'outside.txt'), 'not part of the site\n');
  const page = await get(url);
  check('serve: / is the page, text/html, with COOP same-origin and COEP require-corp',
    page.status === 200 && page.headers['content-type'].startsWith('text/html') &&
    page.headers['cross-origin-opener-policy'] === 'same-origin' && page.headers['cross-origin-embedder-policy'] === 'require-corp',
    JSON.stringify(page));
  const wasm = await get(new URL('tinylm-scalar.wasm', url).href);
  check('serve: .wasm is application/wasm', wasm.status === 200 && wasm.headers['content-type'] === 'application/wasm', JSON.stringify(wasm));
  const js = await get(new URL('app.js', url).href);
  check('serve: .js is text/javascript', js.status === 200 && js.headers['content-type'].startsWith('text/javascript'), JSON.stringify(js));
  const plain = await get(plainUrl);
  check('serve --no-isolation: no COOP/COEP', plain.status === 200 && !plain.headers['cross-origin-opener-policy'] &&
    !plain.headers['cross-origin-embedder-policy'], JSON.stringify(plain));
  // The site's folder sits in WORKDIR beside a file the server must not give out.
  for (const raw of ['/../outside.txt', '/%2e%2e/outside.txt', '/models/..%2f..%2foutside.txt', '/%00', '/%zz']) {
    const r = await get(url, { rawPath: raw });
    check(`serve: ${raw} is refused (${r.status})`, r.status === 404 || r.status === 400, JSON.stringify(r));
  }
  const post = await get(url, { method: 'POST' });
  check('serve: POST is 405', post.status === 405, JSON.stringify(post));
  // Symlinks are followed only within the root: one to a file outside it, or
  // to a folder outside it, is not served; one to a file inside it is.
  const site = path.join(work, 'site');
  fs.symlinkSync(path.join(work, 'outside.txt'), path.join(site, 'link-out.txt'));
  fs.symlinkSync(work, path.join(site, 'link-dir'));
  fs.symlinkSync(path.join(site, 'app.js'), path.join(site, 'link-in.js'));
  try {
    for (const raw of ['/link-out.txt', '/link-dir/outside.txt']) {
      const r = await get(url, { rawPath: raw });
      check(`serve: ${raw} (a symlink out of the root) is refused (${r.status})`, r.status === 404 || r.status === 403, JSON.stringify(r));
    }
    const r = await get(new URL('link-in.js', url).href);
    check('serve: a symlink to a file inside the root is served', r.status === 200, JSON.stringify(r));
  } finally {
    for (const f of ['link-out.txt', 'link-dir', 'link-in.js']) fs.rmSync(path.join(site, f), { force: true });
  }
  // DNS rebinding: only requests whose Host names this server (a loopback
  // name with its port) are answered.
  const port = new URL(url).port;
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
    const r = await get(url, { headers: { Host: host } });
    check(`serve: Host ${host} is answered`, r.status === 200, JSON.stringify(r));
  }
  for (const host of [`attacker.example:${port}`, 'attacker.example', `127.0.0.1:${Number(port) === 1 ? 2 : 1}`, `localhost.attacker.example:${port}`]) {
    const r = await get(url, { headers: { Host: host } });
    check(`serve: Host '${host}' is refused (${r.status})`, r.status === 403, JSON.stringify(r));
  }
  const allowed = await serveWeb({ root: site, allowHosts: ['tinylm.test'] });
  try {
    const aport = new URL(allowed.url).port;
    const ok = await get(allowed.url, { headers: { Host: `tinylm.test:${aport}` } });
    const other = await get(allowed.url, { headers: { Host: `attacker.example:${aport}` } });
    check('serve: a host given with --allow-host is answered, others still refused', ok.status === 200 && other.status === 403,
      JSON.stringify([ok.status, other.status]));
  } finally {
    await allowed.close();
  }
}

// A file in the site swapped for a link out of it after the server checked
// its path and before it opened it (a local user racing the server; the
// afterCheck hook makes the race happen every time): what the server opened
// is checked again, and the file outside is not served.
async function serverRaceChecks(work) {
  const site = path.join(work, 'race-site');
  fs.rmSync(site, { recursive: true, force: true });
  fs.mkdirSync(site);
  fs.writeFileSync(path.join(site, 'index.html'), '<p>site</p>\n');
  fs.writeFileSync(path.join(site, 'page.txt'), 'inside the site\n');
  const secret = path.join(work, 'race-secret.txt');
  fs.writeFileSync(secret, 'not part of the site\n');
  const swap = (file) => {
    if (path.basename(file) !== 'page.txt') return;
    fs.rmSync(file);
    fs.symlinkSync(secret, file);
  };
  const served = await serveWeb({ root: site, afterCheck: swap });
  try {
    const r = await get(new URL('page.txt', served.url).href);
    check(`serve: a file swapped for a link out of the root between check and open is refused (${r.status})`,
      r.status === 404 && !r.body.includes('not part of the site'), JSON.stringify(r));
    const idx = await get(served.url);
    check('serve: the race hook leaves other files served', idx.status === 200 && idx.body.includes('site'), JSON.stringify(idx));
  } finally {
    await served.close();
  }
}

async function browserChecks(browser, work, manifest, isolated, plain, requests) {
  // 1. The page loads, cross-origin isolated, and probes every lane.
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await openPage(ctx, isolated.url);
  const caps = await page.evaluate(() => window.tinylmPage.state.caps);
  check('page loads without script errors', page.errors.length === 0, page.errors.join('; '));
  check('served with COOP/COEP: the page is cross-origin isolated', caps?.crossOriginIsolated === true, JSON.stringify(caps));
  check('probe: SIMD128 and threads available in Chromium', caps?.simd128 === true && caps?.threads === true, JSON.stringify(caps));
  const lanes = caps?.lanes ?? [];
  check('probe lists the scalar, simd and threads lanes', ['scalar', 'simd', 'threads'].every((l) => lanes.includes(l)), JSON.stringify(lanes));
  const choice = await page.$eval('#model-list', (e) => e.selectedOptions[0].textContent);
  check('the first bundled model (models.json) is the default choice', choice.startsWith('tiny (bundled) — '), choice);
  {
    // (The mislabelled entry first: once its id is cached, it is served
    // from the cache and its URL is never asked.)
    const bad = await load(page, { url: '', pick: 2, lane: 'scalar' });
    check('a bundled entry whose bytes are not its artifact id: error: hash_mismatch',
      !bad.loaded && bad.error.startsWith('error: hash_mismatch:') && bad.error.includes('the model list says'), bad.error);
    const got = await load(page, { url: '', pick: 1, lane: 'scalar' });
    check('the bundled model loads from the network', got.loaded && got.status.startsWith('Loaded tiny (bundled) from network'), got.status + got.error);
  }
  {
    // Thinking is on by default (issue 28.2: one default everywhere,
    // Qwen3's own), ticked and said beside the settings; the prompt the
    // page's reply computed is the template's rendering with
    // enable_thinking as ticked (tinylm render's tokens), and unticking
    // it renders the other prompt.
    const box = await page.$eval('#thinking', (e) => ({ checked: e.checked, label: e.labels[0].textContent }));
    const said = await page.textContent('#settings-state');
    check('thinking: the box is ticked on a fresh page, labelled, and the settings line says thinking on',
      box.checked && /Thinking: the model reasons/.test(box.label) && said.startsWith('Next reply: thinking on'), JSON.stringify([box, said]));
    const rendered = (think) => {
      const conv = path.join(work, 'render.json');
      fs.writeFileSync(conv, JSON.stringify({ messages: [{ role: 'user', content: 'Hello there' }], add_generation_prompt: true, enable_thinking: think }));
      const p = spawnSync(TINYLM, ['render', MODEL, '--messages', conv, '--json'], { encoding: 'utf8' });
      return p.status === 0 ? JSON.parse(p.stdout).ids.length : -1;
    };
    for (const think of [UNTOUCHED, false]) {
      const on = thinkingOf({ enableThinking: think });
      const how = think === UNTOUCHED ? 'by default' : 'unticked';
      const got = await send(page, 'Hello there', { ...GREEDY, enableThinking: think });
      const want = rendered(on);
      check(`thinking ${how}: the reply's prompt is the template's with enable_thinking ${on} (${want} tokens)`,
        !!got.reply && got.reply.promptTokens === want && want !== rendered(!on), JSON.stringify([got.reply?.promptTokens, want, got.error]));
      const shown = await page.$eval('#transcript', (t) => t.lastElementChild.innerText);
      check(`thinking ${how}: the reply says thinking ${on ? 'on' : 'off'}`, shown.includes(`thinking ${on ? 'on' : 'off'}`), shown);
      const answer = await page.$eval('#transcript', (t) => t.lastElementChild.querySelector('.body').textContent);
      check(`thinking ${how}: the answer area holds no <think> or </think>`, !/<\/?think>/.test(answer), answer);
      compareNative(work, `thinking ${on ? 'on' : 'off'}`, got, 'scalar');
      await page.click('#clear');
    }
  }
  {
    // A reply's think block apart from its answer by the server's rules
    // (docs/server.md, Reasoning): the spec's cases, then every prefix of a
    // streamed reply: no piece of a tag shown, reasoning and answer only
    // grow. (The tiny model writes no block, so its replies above cannot
    // show one; these texts can.) Planted defects caught: a partial
    // "</think>" not held, a partial "<think>" not held (each fails the
    // streamed check).
    const CASES = [
      ['<think>\nadd them\n</think>\n\n12 + 30 = 42.', true, 'add them', '12 + 30 = 42.'],
      ['<think>\n\n</think>\n\nHi', true, '', 'Hi'],
      ['<think>\ncut short', true, 'cut short', ''],
      ['Hi <think>x</think>', true, null, 'Hi <think>x</think>'],
      ['<thi', false, null, ''],
      ['<thi', true, null, '<thi'],
      ['<think>\nhm\n</thi', false, 'hm', ''],
    ];
    const got = await page.evaluate((cases) => cases.map(([t, f]) => window.tinylmPage.replyParts(t, f)), CASES);
    check('page: a reply\'s think block apart from its answer, by the server\'s rules',
      CASES.every((c, i) => got[i].reasoning === c[2] && got[i].answer === c[3]), JSON.stringify(got));
    const full = '<think>\nadd them\n</think>\n\n12 + 30 = 42.';
    const steps = await page.evaluate((t) => [...Array(t.length + 1).keys()].map((n) => window.tinylmPage.replyParts(t.slice(0, n), n === t.length)), full);
    const grows = steps.every((p, n) => n === 0 || ((steps[n - 1].reasoning ?? '') === '' || (p.reasoning ?? '').startsWith(steps[n - 1].reasoning)) &&
      p.answer.startsWith(steps[n - 1].answer));
    check('page: streamed a character at a time, no piece of a tag shown, the parts only grow, the last = the whole reply\'s',
      steps.every((p) => !/[<>]/.test(p.answer + (p.reasoning ?? ''))) && grows && same(steps.at(-1), { reasoning: 'add them', answer: '12 + 30 = 42.' }), JSON.stringify(steps));
  }

  // 2. Each lane passes its self-test and equals native, greedy and seeded.
  for (const lane of ['scalar', 'simd', 'threads']) {
    const got = await load(page, { lane });
    if (!check(`${lane}: the tiny model loads`, got.loaded, got.error)) continue;
    const r = got.receipt || {};
    check(`${lane}: the capability receipt names the lane asked for`, r.lane === lane && r.laneReason === 'requested', JSON.stringify([r.lane, r.laneReason]));
    const threads = lane === 'threads' ? THREADS : 1;
    check(`${lane}: it computes on ${threads} thread(s)`, r.threads === threads && r.threadsRequested === THREADS, JSON.stringify([r.threads, r.threadsRequested]));
    const tests = r.selfTests?.[lane] ?? [];
    check(`${lane}: every self-test passed (${tests.map((t) => t.name).join(', ')})`,
      tests.length > 0 && tests.every((t) => t.ok === true), JSON.stringify(tests));
    check(`${lane}: the receipt's module hash is the manifest's`,
      !!manifest.modules[lane] && r.modules?.[lane]?.sha256 === manifest.modules[lane].sha256, JSON.stringify(r.modules));
    check(`${lane}: the capability panel shows the lane, its self-tests and module hash`,
      got.panel.includes(lane) && tests.every((t) => got.panel.includes(`${t.name} ✓`)) && got.panel.includes(manifest.modules[lane].sha256), got.panel);
    {
      // The capability receipt file, downloaded from the panel: native
      // `tinylm receipt show` recomputes its node id, which is the page's.
      const id = await page.evaluate(() => window.tinylmPage.state.shownReceiptCbor?.id ?? null);
      const { p, doc } = await showDownloaded(page, '#download-caps-cbor', work, `capability-${lane}.cbor`);
      const meta = doc?.nodes?.[0]?.metadata ?? {};
      const modelId = createHash('sha256').update(fs.readFileSync(MODEL)).digest('hex');
      check(`${lane}: the downloaded capability receipt verifies natively, with the page's id, lane, module hash and artifact`,
        p.status === 0 && doc?.verified === true && doc.format === 'tinylm.capability-receipt/1' && !!id && doc.root === id &&
        meta.lane === lane && meta.threads === threads && meta.modules?.some((x) => x.lane === lane && x.sha256 === manifest.modules[lane].sha256) &&
        meta.artifact_id === modelId && meta.self_tests?.filter((t) => t.lane === lane).length === tests.length,
        `${p.status} ${id} ${p.stdout.slice(0, 400)}${p.stderr}`);
      check(`${lane}: the panel shows the capability receipt's id`, got.panel.includes(id ?? '-'), got.panel);
    }
    compareNative(work, `${lane} greedy`, await send(page, 'Hello there', GREEDY), lane);
    await page.click('#clear');
    compareNative(work, `${lane} seeded sampling`, await send(page, 'Tell me a story', SAMPLED), lane);
    await page.click('#clear');
  }
  {
    // Temperature and top-k left empty: the artifact's defaults, not 0.
    const got = await send(page, 'Hello there', { seed: 4, maxTokens: 12 });
    check('empty temperature and top-k are not sent', !!got.reply && !('temperature' in got.reply.settings) && !('topK' in got.reply.settings),
      JSON.stringify(got.reply?.settings));
    compareNative(work, 'artifact defaults', got, 'threads');
    await page.click('#clear');
  }

  // 3. Stop mid-reply, on a lane that computes in the page's model worker
  // and on the threads lane (the loader's own worker and its pool): the
  // turn is dropped and the model stays usable; the next reply equals
  // native's on the conversation without the stopped turn.
  // The stopped turn's receipt (stop 'cancelled', as tinylm run writes one
  // at Ctrl-C) is offered as a finished reply's: downloaded, native
  // `tinylm receipt show` verifies it, and its id and ids are the page's,
  // which are native's first tokens of the same conversation.
  for (const lane of ['simd', 'threads']) {
    await load(page, { lane });
    await stopOnFirstToken(page);
    const stopped = await send(page, 'Count to one hundred', { ...GREEDY, maxTokens: 2000 });
    const msgs = await page.evaluate(() => window.tinylmPage.state.messages.length);
    const r = stopped.reply;
    check(`${lane} stop: the stopped reply is not kept in the conversation`, msgs === 0, JSON.stringify({ stopped, msgs }));
    check(`${lane} stop: no error shown for a stop`, stopped.error === '', stopped.error);
    if (check(`${lane} stop: the stopped turn has a record with stop cancelled and a receipt`,
      r?.stop === 'cancelled' && r.ids.length > 0 && r.ids.length < 2000 && /^[0-9a-f]{64}$/.test(r.receiptId), JSON.stringify(r))) {
      const shown = await page.$eval('#transcript', (t) => t.lastElementChild.innerText);
      check(`${lane} stop: the stopped reply says stopped, its token count, stop: cancelled and its receipt id`,
        shown.includes('stopped (not kept in the conversation)') && shown.includes(`${r.ids.length} tokens · stop: cancelled`) &&
        shown.includes(`receipt ${r.receiptId.slice(0, 16)}`), shown);
      const button = await page.$eval('#download-reply', (b) => ({ disabled: b.disabled, text: b.textContent }));
      check(`${lane} stop: the receipt download is offered, marked cancelled`, !button.disabled && button.text.includes('cancelled'), JSON.stringify(button));
      const { p, doc } = await showDownloaded(page, '#download-reply', work, `stopped-${lane}.cbor`);
      const gen = doc?.nodes?.find((n) => n.metadata?.stop !== undefined)?.metadata ?? {};
      check(`${lane} stop: the downloaded receipt verifies natively, says cancelled, with the page's id and ids`,
        p.status === 0 && doc?.verified === true && doc.root === r.receiptId && gen.stop === 'cancelled' && same(gen.ids, r.ids),
        `${p.status} ${r.receiptId} ${p.stdout.slice(0, 600)}${p.stderr}`);
      const n = nativeRun(work, r.conversation, { ...GREEDY, maxTokens: r.ids.length }, lane);
      check(`${lane} stop: the stopped turn's ids are native's first ${r.ids.length} of the conversation`, same(r.ids, n.ids),
        `page ${JSON.stringify(r.ids)} native ${JSON.stringify(n.ids)}`);
    }
    compareNative(work, `${lane} after stop`, await send(page, 'Hello there', GREEDY), lane);
    // Two turns: the second reply sees the first.
    compareNative(work, `${lane} second turn`, await send(page, 'And then?', GREEDY), lane);
  }
  await page.screenshot({ path: path.join(work, 'page.png'), fullPage: true });

  // 4. Artifacts are cached by their id: after a reload neither the
  // bundled model, nor one loaded from a URL, is fetched again.
  {
    const fetches = (f) => requests.filter((l) => l.endsWith(` /models/${f}`)).length;
    const first = await load(page, { url: 'models/q8.slm', lane: 'scalar' });
    check('cache: a model from a URL loads from the network', first.loaded && first.status.startsWith('Loaded q8.slm from network'), first.status + first.error);
    const before = [fetches('tiny.slm'), fetches('q8.slm')];
    await page.reload();
    await page.evaluate(() => window.tinylmPage.ready);
    const listed = await page.$$eval('#model-list option', (os) => os.map((o) => o.textContent));
    check('cache: after a reload the list offers the cached model beside the bundled one',
      listed.some((t) => t.startsWith('cached: q8.slm — ')) && listed.some((t) => t.startsWith('tiny (bundled) — ')), JSON.stringify(listed));
    const q8 = listed.findIndex((t) => t.startsWith('cached: q8.slm'));
    for (const [name, how] of [['cached q8.slm', { url: '', pick: q8 }], ['q8.slm by its URL', { url: 'models/q8.slm' }],
      ['the bundled model', { url: '', pick: 1 }], ['tiny.slm by its URL', { url: 'models/tiny.slm' }]]) {
      const got = await load(page, { ...how, lane: 'scalar' });
      check(`cache: after a reload ${name} loads from the browser cache`, got.loaded && /from cache/.test(got.status), got.status + got.error);
    }
    check('cache: the reload fetched no model bytes', fetches('tiny.slm') === before[0] && fetches('q8.slm') === before[1],
      `${fetches('tiny.slm') - before[0]} + ${fetches('q8.slm') - before[1]} fetches`);
  }

  // 4a. A cached copy is checked against its id (the SHA-256 of its bytes)
  // before use: an entry whose bytes were changed in the browser's cache
  // (another valid artifact, one flipped byte) is never loaded as the
  // artifact it is filed under; the page fetches the source again, loads
  // the right artifact and repairs the entry.
  {
    const fetches = () => requests.filter((l) => l.endsWith(' /models/q8.slm')).length;
    const q8 = fs.readFileSync(MODEL_Q8);
    const q8Id = createHash('sha256').update(q8).digest('hex');
    const flipped = Buffer.from(q8);
    flipped[flipped.length - 100] ^= 0x01;
    for (const [what, bytes] of [['another valid artifact (tiny-f32)', fs.readFileSync(MODEL)], ['q8 with one byte flipped', flipped]]) {
      const planted = await page.evaluate(async ({ id, b64 }) => {
        const c = await caches.open('tinylm-models-v1');
        const key = (await c.keys()).find((k) => k.url.endsWith(`/${id}.slm`));
        if (!key) return false;
        const raw = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
        await c.put(key, new Response(raw));
        return true;
      }, { id: q8Id, b64: bytes.toString('base64') });
      if (!check(`cache: q8.slm's entry holds ${what} (planted in the browser's cache)`, planted)) continue;
      const before = fetches();
      const got = await load(page, { url: 'models/q8.slm', lane: 'scalar' });
      const loadedId = await page.evaluate(() => window.tinylmPage.state.model?.artifactId ?? null);
      check(`cache: q8.slm's entry holding ${what} is not used: q8.slm is fetched again and loads as itself`,
        got.loaded && got.status.startsWith('Loaded q8.slm from network') && fetches() === before + 1 && loadedId === q8Id,
        `${got.status} ${got.error} fetches +${fetches() - before} id ${loadedId}`);
      const repaired = await page.evaluate(async (id) => {
        const c = await caches.open('tinylm-models-v1');
        const key = (await c.keys()).find((k) => k.url.endsWith(`/${id}.slm`));
        if (!key) return null;
        const d = new Uint8Array(await crypto.subtle.digest('SHA-256', await (await c.match(key)).arrayBuffer()));
        return Array.from(d, (x) => x.toString(16).padStart(2, '0')).join('');
      }, q8Id);
      check(`cache: after it, q8.slm's entry holds q8.slm again`, repaired === q8Id, String(repaired));
    }
  }

  // 4b. The file picker: the file streamed into the module's memory (the
  // File handed to the loader, read chunk by chunk, hashed as it lands),
  // its artifact id computed, the reply native's.
  {
    await page.fill('#model-url', '');
    await page.setInputFiles('#model-file', MODEL);
    await page.selectOption('#lane', 'scalar');
    await page.click('#load');
    await idle(page);
    const status = await page.textContent('#model-status');
    const id = createHash('sha256').update(fs.readFileSync(MODEL)).digest('hex');
    check('file picker: the model loads from the file, with its SHA-256 as artifact id',
      status.startsWith('Loaded tiny-f32.slm from file') && status.includes(`artifact ${id.slice(0, 16)}`), status);
    const memory = await page.evaluate(() => window.tinylmPage.state.model?.capabilityReceipt?.memory ?? null);
    check('file picker: the file was streamed into the module, not copied whole in JS',
      memory?.from === 'stream' && memory.modelBytes === fs.statSync(MODEL).size, JSON.stringify(memory));
    compareNative(work, 'file picker', await send(page, 'Hello there', GREEDY), 'scalar');
    await page.setInputFiles('#model-file', []);
  }

  // 5. Typed errors on the page. A load that fails leaves the model
  // loaded before it (here the file picker's tiny-f32.slm) loaded.
  const tinyId = createHash('sha256').update(fs.readFileSync(MODEL)).digest('hex');
  for (const [file, code] of [['truncated.slm', 'invalid_model'], ['flipped.slm', 'hash_mismatch'], ['absent.slm', 'io']]) {
    const got = await load(page, { url: `models/${file}`, lane: 'scalar' });
    check(`${file}: refused with error: ${code} shown, the model loaded before still loaded`,
      got.error.startsWith(`error: ${code}:`) && got.loaded && got.artifactId === tinyId &&
      got.status.startsWith(`Loading ${file} failed (${code}): tiny-f32.slm (scalar lane`), `${got.status} ${got.error}`);
  }
  const badSetting = await (async () => {
    await load(page, { lane: 'scalar' });
    return send(page, 'Hello there', { ...GREEDY, maxTokens: -3 });
  })();
  check('a max tokens of -3 is refused with error: invalid_argument', badSetting.error.startsWith('error: invalid_argument:'), badSetting.error);
  // A number only too large says so with the largest the field takes; one
  // that is not an integer says that (issue 28.6).
  for (const [s, want] of [
    [{ maxTokens: 2 ** 32 }, "Max tokens: '4294967296' is too large: at most 4294967295"],
    [{ maxTokens: '1e20' }, "Max tokens: '1e20' is too large: at most 4294967295"],
    [{ topK: 2 ** 32 }, "Top-k: '4294967296' is too large: at most 4294967295"],
    [{ seed: 2 ** 53 }, "Seed: '9007199254740992' is too large: at most 9007199254740991"],
    [{ maxTokens: 1.5 }, "Max tokens: '1.5' is not an integer ≥ 1"],
  ]) {
    const got = await send(page, 'Hello there', { ...GREEDY, ...s });
    check(`page settings ${JSON.stringify(s)}: ${want}`, got.error.split('\n')[0] === `error: invalid_argument: ${want}`, got.error);
  }
  {
    // Text JavaScript holds but UTF-8 cannot (a lone surrogate): the page
    // shows the error native run gives for the same conversation.
    await page.fill('#max-tokens', '4');
    await page.evaluate(() => { document.getElementById('prompt').value = 'a\ud800b'; });
    await page.click('#send');
    await idle(page);
    const shown = await pageError(page);
    const conv = path.join(work, 'surrogate.json');
    fs.writeFileSync(conv, JSON.stringify({ messages: [{ role: 'user', content: 'a\ud800b' }], enable_thinking: false }));
    const p = spawnSync(TINYLM, ['run', MODEL, '--messages', conv, '--json', '-n', '4'], { encoding: 'utf8' });
    const native = p.status !== 0 ? JSON.parse(p.stdout) : { error: 'none', detail: '' };
    // native's detail names its file first: "FILE:LINE:COLUMN: what"
    const what = native.detail.split(': ').pop();
    check(`a lone surrogate in the text: the page shows native's error (${native.error}: ${what})`,
      p.status !== 0 && shown.startsWith(`error: ${native.error}:`) && shown.includes(what), `${shown} / ${p.stdout}`);
  }
  {
    // Preflight: a budget below the session's plan is refused with the
    // numbers; the model loaded before (q8, on the simd lane) stays
    // loaded and its replies are still native's, its conversation kept.
    const q8Id = createHash('sha256').update(fs.readFileSync(MODEL_Q8)).digest('hex');
    const a = await load(page, { url: 'models/q8.slm', lane: 'simd' });
    await send(page, 'Hello there', GREEDY);
    const got = await load(page, { lane: 'scalar', budget: 0.01 });
    check('a 0.01 MiB memory budget: refused by preflight with error: out_of_memory and the plan\'s figures',
      got.error.startsWith('error: out_of_memory:') && /KV cache [\d.]+ MB.*total [\d.]+ MB/.test(got.error), got.error);
    check('a failed load keeps the model loaded before it, and says so', a.loaded && got.loaded && got.artifactId === q8Id &&
      got.receipt?.lane === 'simd' && got.status.startsWith('Loading tiny.slm failed (out_of_memory): q8.slm (simd lane'), `${got.status} / ${a.status}`);
    const after = await send(page, 'And then?', GREEDY);
    const msgs = after.reply?.conversation?.messages ?? [];
    check('after the failed load, the kept model answers the conversation\'s next turn', msgs.length === 3, JSON.stringify(msgs));
    if (after.reply) {
      const n = nativeRun(work, after.reply.conversation, { seed: GREEDY.seed, maxTokens: GREEDY.maxTokens, temperature: 0, topK: 0 }, 'simd', MODEL_Q8);
      check('after the failed load, the kept model\'s reply is native\'s (q8, ids and receipt id)',
        same(after.reply.ids, n.ids) && after.reply.receiptId === n.receipt_id, `page ${JSON.stringify(after.reply.ids)} native ${JSON.stringify(n.ids)}`);
    }
    await page.click('#clear');
  }

  // 6. The reply's receipt, downloaded from the page, is a run receipt
  // that native `tinylm receipt show` verifies, with the reply's id.
  {
    await load(page, { lane: 'scalar' });
    const got = await send(page, 'Hello there', GREEDY);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-reply')]);
    const file = path.join(work, 'reply-receipt.cbor');
    await dl.saveAs(file);
    const p = spawnSync(TINYLM, ['receipt', 'show', file], { encoding: 'utf8' });
    check('the downloaded receipt verifies with tinylm receipt show and has the reply\'s id',
      p.status === 0 && !!got.reply && p.stdout.startsWith(`run receipt ${got.reply.receiptId}`), `${p.status} ${p.stdout}${p.stderr}`);
  }

  // 7. The loader's API in the page itself: a disposed model's handle is stale.
  {
    const code = await page.evaluate(async () => {
      const { loadModel } = await import('./tinylm.js');
      const m = await loadModel('models/tiny.slm', { lane: 'scalar' });
      await m.dispose();
      try {
        await m.generate({ prompt: 'Hello', maxTokens: 2 });
        return 'no error';
      } catch (e) {
        return e.code;
      }
    });
    check('generate on a disposed model: stale_handle', code === 'stale_handle', code);
  }

  // 7b. A pool worker of the threads lane that traps mid-reply (the
  // pooltrap/ copy of the page): the reply ends, the page shows
  // error: worker_failure, and the next reply is refused the same way.
  {
    const trapPage = await openPage(ctx, new URL('pooltrap/', isolated.url).href);
    const got = await load(trapPage, { url: '../models/tiny.slm', lane: 'threads' });
    let shown = '';
    for (let i = 0; got.loaded && i < 20 && !shown; i++) shown = (await send(trapPage, 'Hello there', { ...GREEDY, maxTokens: 16 })).error;
    check('a pool worker that traps mid-reply: the page shows error: worker_failure naming the worker',
      got.loaded && shown.startsWith('error: worker_failure:') && shown.includes('pool worker 1 of the threads lane failed during this reply'), got.error + shown);
    const next = await send(trapPage, 'Hello there', GREEDY);
    check('after it, the next reply: error: worker_failure', next.error.startsWith('error: worker_failure:') && next.error.includes('earlier reply'), next.error);
    await trapPage.close();
  }

  // 8. Offline once loaded: the service worker serves the page, the
  // model comes from the cache, and the reply is still native's.
  {
    await page.evaluate(() => navigator.serviceWorker.ready);
    await ctx.setOffline(true);
    await page.reload();
    await page.evaluate(() => window.tinylmPage.ready);
    for (const lane of ['simd', 'threads']) {
      const got = await load(page, { lane });
      check(`offline, ${lane}: the page reloads and the model loads from the cache`,
        got.loaded && /from cache/.test(got.status) && got.receipt?.lane === lane, got.status + got.error);
      compareNative(work, `offline, ${lane}`, await send(page, 'Hello there', GREEDY), lane);
    }
    await ctx.setOffline(false);
  }
  await ctx.close();

  // 9. A module with one byte changed is refused before instantiation; the
  // loader falls back to another lane and the reply still equals native.
  {
    const lane = 'simd';
    const mod = manifest.modules[lane].file;
    makeSite(path.join(work, 'tampered'), mod);
    const tampered = await serveWeb({ root: path.join(work, 'tampered') });
    const tctx = await browser.newContext();
    const tpage = await openPage(tctx, tampered.url);
    const got = await load(tpage, { lane });
    const r = got.receipt || {};
    check(`tampered ${mod}: the model still loads`, got.loaded, got.error);
    check(`tampered ${mod}: the loader fell back from ${lane}`, !!r.lane && r.lane !== lane, JSON.stringify(r.lane));
    check(`tampered ${mod}: the receipt records the refusal as hash_mismatch`,
      (r.refused ?? []).some((x) => x.lane === lane && x.code === 'hash_mismatch'), JSON.stringify(r.refused));
    check(`tampered ${mod}: the panel shows it`, got.panel.includes(`${lane}: hash_mismatch`), got.panel);
    if (r.lane in NATIVE_LANE) compareNative(work, `tampered, fallback ${r.lane}`, await send(tpage, 'Hello there', GREEDY), r.lane);
    await tctx.close();
    await tampered.close();
  }

  // 10. Without cross-origin isolation there is no threads lane: asked for
  // it, the loader falls back and the page shows why.
  {
    const pctx = await browser.newContext();
    const ppage = await openPage(pctx, plain.url);
    const pcaps = await ppage.evaluate(() => window.tinylmPage.state.caps);
    check('no isolation: probe says not cross-origin isolated, no threads', pcaps?.crossOriginIsolated === false && pcaps?.threads === false, JSON.stringify(pcaps));
    const got = await load(ppage, { lane: 'threads' });
    const r = got.receipt || {};
    check('no isolation: the model loads on another lane', got.loaded && !!r.lane && r.lane !== 'threads', JSON.stringify(r.lane) + got.error);
    check('no isolation: the receipt records threads refused for want of isolation',
      (r.refused ?? []).some((x) => x.lane === 'threads' && /cross-origin isolated/.test(x.why)), JSON.stringify(r.refused));
    check('no isolation: the panel shows the reason', /threads: unsupported_feature — .*cross-origin isolated/.test(got.panel), got.panel);
    if (r.lane in NATIVE_LANE) {
      compareNative(work, `no isolation, ${r.lane}`, await send(ppage, 'Hello there', GREEDY), r.lane);
      // No shared memory here: Stop ends the model's worker and the page
      // reloads the model from its cache; the conversation goes on.
      await stopOnFirstToken(ppage);
      const stopped = await send(ppage, 'Count to one hundred', { ...GREEDY, maxTokens: 2000 });
      const after = await ppage.evaluate(() => ({ n: window.tinylmPage.state.messages.length, loaded: !!window.tinylmPage.state.model, t: document.getElementById('transcript').innerText }));
      check('no isolation: stop mid-reply drops the turn and reloads the model', !stopped.reply && after.n === 2 && after.loaded && /reloaded from the cache/.test(after.t),
        JSON.stringify({ stopped, after }));
      compareNative(work, 'no isolation, after stop', await send(ppage, 'And then?', GREEDY), r.lane);
    }
    await pctx.close();
  }

  // 11. Load pressed before the model list has arrived (models.json held
  // back by the test), with no URL or file given: the page says it waits
  // for the list and then loads the list's default, the bundled model
  // (no "no model chosen").
  {
    const lctx = await browser.newContext({ serviceWorkers: 'block' });
    let release;
    const held = new Promise((ok) => { release = ok; });
    let asked = 0;
    await lctx.route('**/models.json', async (route) => {
      asked++;
      await held;
      await route.continue();
    });
    const lpage = await lctx.newPage();
    lpage.errors = [];
    lpage.on('pageerror', (e) => lpage.errors.push(e.message));
    await lpage.goto(isolated.url);
    await lpage.waitForFunction(() => !document.getElementById('load').disabled, null, { timeout: 60000 });
    const before = await lpage.evaluate(() => ({ listed: window.tinylmPage.state.listed, options: document.getElementById('model-list').options.length }));
    await lpage.selectOption('#lane', 'scalar');
    await lpage.click('#load');
    await lpage.waitForFunction(() => /Waiting for the model list/.test(document.getElementById('model-status').textContent), null, { timeout: 60000 });
    check('Load before the model list: the list was not there yet, the page says it waits for it',
      asked === 1 && !before.listed && before.options === 1, JSON.stringify({ asked, before }));
    release();
    await lpage.evaluate(() => window.tinylmPage.ready);
    await idle(lpage);
    const got = await lpage.evaluate(() => ({
      loaded: !!window.tinylmPage.state.model,
      status: document.getElementById('model-status').textContent,
      error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
    }));
    check('Load before the model list: once it arrives, its default (the bundled model) loads, no error',
      got.loaded && got.error === '' && got.status.startsWith('Loaded tiny (bundled) from network'), JSON.stringify(got));
    check('Load before the model list: no script errors', lpage.errors.length === 0, lpage.errors.join('; '));
    await lctx.close();
  }
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`FAIL ${e.stack || e}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
