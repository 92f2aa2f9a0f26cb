#!/usr/bin/env node
// The webgpu lane in headless Chromium (issue 29 item 2; docs/web.md, The
// WebGPU lane): Debian's chromium with --enable-unsafe-webgpu, whose
// adapter here is SwiftShader (CPU emulation of a GPU), through the
// loader and the page as `make serve-web` serves them.
//
//   node tests/web/webgpu_test.mjs TINYLM WORKDIR [SITE]
//
// Checked against native TINYLM on the same artifact and conversation,
// never against a value written here: the lane passes its start-up
// self-tests (the module's, the WGSL probes, the tiny forward pass in check
// mode); on the demo model (build/demo's when current, else expanded and
// converted here as make demo does) greedy ids equal `tinylm run --lane
// fast`'s, the receipt names the profile webgpu/1 and verifies; the
// observation records of a prompt are within the profile of native fast
// ones (`tinylm observe --compare --model`); a planted WGSL fault (the last
// block of each row dropped) fails the product probes and the lane falls
// back to simd with the reason; without --enable-unsafe-webgpu there is no
// adapter and the page shows the fallback and why. llvmpipe (Mesa's
// software Vulkan through ANGLE) when installed, else a skip line.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveWeb } from '../../scripts/serve_web.mjs';
import { checker, launchChromium } from './chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const Q4 = path.join(ROOT, 'tests', 'golden', 'slm', 'tiny-q4.slm');
const WEBGPU = ['--enable-unsafe-webgpu', '--no-sandbox'];
const LLVMPIPE = ['--use-angle=vulkan', '--use-webgpu-adapter=opengles'];
const LVP_ICD = '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json'; // mesa-vulkan-drivers
// The demo model's question (its synthetic task: sums), answered greedily.
const CONVERSATION = { messages: [{ role: 'user', content: 'What is 17 + 25?' }], enable_thinking: false };
const MAX_TOKENS = 8;
const OBSERVE_PROMPT = 'What is 3 + 4?';

let TINYLM, WORK;
const { check, counts } = checker();
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const t0 = Date.now();
const took = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

function tinylm(args, opts = {}) {
  return spawnSync(TINYLM, args, { encoding: 'utf8', timeout: 300000, ...opts });
}

// The demo model as make demo builds it (scripts/demo_model.sh: build/demo's
// artifact, made there first when missing or stale).
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
  fs.writeFileSync(path.join(dir, 'api.html'), '<!doctype html><meta charset="utf-8"><title>webgpu</title>\n');
}

// In the page: loads url on opts' lane, runs calls, returns what they gave
// (a model's error as { error }). Bytes come back as arrays.
async function inPage(page, url, opts, calls) {
  return page.evaluate(async ({ url, opts, calls }) => {
    const { loadModel } = await import('./tinylm.js');
    const out = {};
    let m;
    try {
      const t = performance.now();
      m = await loadModel(url, opts);
      out.loadMs = performance.now() - t;
    } catch (e) {
      return { error: `${e.code}: ${e.detail ?? e.message}`, receipt: e.capabilityReceipt ?? null };
    }
    out.receipt = m.capabilityReceipt;
    out.inWorker = !m.rt;
    out.capabilityCbor = Array.from(m.capabilityReceiptCbor);
    out.capabilityId = m.capabilityReceiptId;
    try {
      if (calls.generate) {
        const r = await m.generate(calls.generate);
        out.reply = { ids: r.ids, receiptId: r.receiptId, receipt: Array.from(r.receipt), stop: r.stop, timings: r.timings };
      }
      if (calls.observe) out.observe = Array.from(await m.observe(calls.observe));
      if (calls.stats) out.stats = await m.gpuStats();
      if (calls.loseDevice) {
        // As a GPU reset or a driver crash would: the next reply must fail typed.
        m.rt.gpu.device.destroy();
        try {
          await m.generate(calls.generate);
          out.afterLoss = 'no error';
        } catch (e) {
          out.afterLoss = `${e.code}: ${e.detail ?? e.message}`;
        }
      }
    } catch (e) {
      out.error = `${e.code}: ${e.detail ?? e.message}`;
    } finally {
      await m.dispose();
    }
    return out;
  }, { url, opts, calls });
}

function nativeRun(model, conv, n) {
  const file = path.join(WORK, 'conv.json');
  fs.writeFileSync(file, JSON.stringify(conv));
  const p = tinylm(['run', model, '--messages', file, '--json', '-n', String(n), '--temperature', '0', '--lane', 'fast', '-t', '1']);
  if (p.status !== 0) throw new Error(`tinylm run: exit ${p.status}: ${p.stderr}`);
  return JSON.parse(p.stdout);
}

// `tinylm receipt show --json` of bytes: { p, doc }.
function receiptShow(bytes, name) {
  const file = path.join(WORK, name);
  fs.writeFileSync(file, Uint8Array.from(bytes));
  const p = tinylm(['receipt', 'show', '--json', file]);
  let doc = null;
  try { doc = JSON.parse(p.stdout); } catch { /* reported by the caller */ }
  return { p, doc };
}

const allOk = (tests) => (tests ?? []).length > 0 && tests.every((t) => t.ok);
const names = (tests) => (tests ?? []).map((t) => t.name);
const WGSL_TESTS = ['wgsl-subnormal', 'wgsl-negative-zero', 'wgsl-i32-block-sums', 'wgsl-q8-product', 'wgsl-q4-product', 'forward-webgpu'];

// One adapter's checks: the demo model and the q4 one through the API.
async function adapterChecks(page, label, opts, expectFallback) {
  const demo = 'models/demo.slm';
  const native = nativeRun(path.join(WORK, 'site', demo), CONVERSATION, MAX_TOKENS);
  let since = Date.now();
  // check: every product of the demo passes also held to W-3 (check mode)
  const got = await inPage(page, demo, { lane: 'webgpu', ...opts, webgpu: { ...opts.webgpu, check: true } },
    { generate: { messages: CONVERSATION.messages, enableThinking: false, maxTokens: MAX_TOKENS, temperature: 0 },
      observe: { prompt: OBSERVE_PROMPT }, stats: true });
  console.log(`note: ${label}: load ${((got.loadMs ?? 0) / 1000).toFixed(1)} s, the whole demo check ${took(since)}`);
  const r = got.receipt;
  if (!check(`${label}: the demo model loads on the webgpu lane`, !got.error && r?.lane === 'webgpu',
    got.error ?? JSON.stringify(r?.refused))) return;
  const tests = r.selfTests.webgpu;
  check(`${label}: every self-test passed, the WGSL probes and forward-webgpu among them`,
    allOk(tests) && WGSL_TESTS.every((n) => names(tests).includes(n)), JSON.stringify(tests));
  const g = r.webgpu;
  check(`${label}: the receipt records the adapter (${g?.adapter?.architecture}, fallback ${g?.adapter?.isFallback})`,
    !!g && g.adapter.isFallback === expectFallback && /^[0-9a-f]{64}$/.test(g.wgslSha256) &&
    g.limits.maxStorageBufferBindingSize > 0 && Array.isArray(g.compilation), JSON.stringify(g));
  check(`${label}: the probes' outcomes are recorded (${JSON.stringify(g?.probes)})`,
    ['kept', 'flushed'].includes(g?.probes?.['subnormal-product']) && g?.probes?.['negative-zero'] === 'preserved', JSON.stringify(g?.probes));
  const cap = receiptShow(got.capabilityCbor, `${label}-capability.cbor`);
  check(`${label}: tinylm receipt show verifies the capability receipt`, cap.p.status === 0, cap.p.stderr);
  if (!check(`${label}: the demo reply came`, !!got.reply, got.error)) return;
  check(`${label}: greedy ids equal native tinylm run --lane fast (${native.ids.length} tokens)`,
    same(got.reply.ids, native.ids), `webgpu ${JSON.stringify(got.reply.ids)} native ${JSON.stringify(native.ids)}`);
  const run = receiptShow(got.reply.receipt, `${label}-run.cbor`);
  check(`${label}: the run receipt verifies and names the profile webgpu/1`,
    run.p.status === 0 && run.p.stdout.includes('"webgpu/1"'), run.p.stderr || run.p.stdout.slice(0, 400));
  check(`${label}: so its id is not the fast/4 run's`, got.reply.receiptId !== native.receipt_id);
  check(`${label}: the products ran on the device${got.inWorker ? ' (the loader\'s worker: the page is isolated)' : ''}, each within W-3 of fast/4's in check mode: ${JSON.stringify(got.stats)}`,
    got.stats?.products > 0 && got.stats.elements > 10112 && got.stats.failures === 0 && got.stats.maxBoundRatio <= 1,
    JSON.stringify(got.stats));
  // The observation records against native fast's, judged by the profile.
  if (check(`${label}: observe() gave a document`, Array.isArray(got.observe), got.error)) {
    const mine = path.join(WORK, `${label}-observe.cbor`), theirs = path.join(WORK, 'native-fast.cbor');
    const model = path.join(WORK, 'site', demo);
    const p = tinylm(['observe', model, '--prompt', OBSERVE_PROMPT, '-o', theirs, '--force', '--lane', 'fast', '-t', '1']);
    fs.writeFileSync(mine, Uint8Array.from(got.observe));
    const c = tinylm(['observe', '--compare', theirs, mine, '--model', model, '--json']);
    let v = null;
    try { v = JSON.parse(c.stdout); } catch { /* reported below */ }
    check(`${label}: observe --compare judges every record within the profile (${v?.verdict})`,
      p.status === 0 && v?.verdict === 'within_profile', `${p.stderr}${c.stderr}${c.stdout.slice(0, 400)}`);
  }
  // q4 products: the tiny q4 artifact against native.
  since = Date.now();
  const q4conv = { messages: [{ role: 'user', content: 'hello' }], enable_thinking: false };
  const q4native = nativeRun(path.join(WORK, 'site', 'models', 'q4.slm'), q4conv, MAX_TOKENS);
  // On the page's own thread this time (JSPI there too), not the loader's worker.
  const q4 = await inPage(page, 'models/q4.slm', { lane: 'webgpu', worker: false, ...opts },
    { generate: { messages: q4conv.messages, enableThinking: false, maxTokens: MAX_TOKENS, temperature: 0 }, loseDevice: true });
  check(`${label}: q4 artifact on the page's thread: greedy ids equal native fast (${took(since)})`,
    q4.receipt?.lane === 'webgpu' && q4.inWorker === false && same(q4.reply?.ids, q4native.ids),
    q4.error ?? `webgpu ${JSON.stringify(q4.reply?.ids)} native ${JSON.stringify(q4native.ids)}`);
  check(`${label}: the device lost, the next reply is worker_failure naming the loss (${q4.afterLoss})`,
    /^worker_failure: .*WebGPU device was lost/.test(q4.afterLoss ?? ''), String(q4.afterLoss));
}

async function main() {
  if (process.argv.length !== 4 && process.argv.length !== 5) {
    console.error('usage: node tests/web/webgpu_test.mjs TINYLM WORKDIR [SITE]');
    return 2;
  }
  TINYLM = path.resolve(process.argv[2]);
  WORK = path.resolve(process.argv[3]);
  const site = path.resolve(process.argv[4] ?? path.join(ROOT, 'build', 'web'));
  if (!fs.existsSync(path.join(site, 'webgpu.js'))) {
    console.log(`FAIL ${site}/webgpu.js is missing (make web)`);
    return 1;
  }
  fs.mkdirSync(WORK, { recursive: true });
  let since = Date.now();
  const demo = demoModel();
  console.log(`note: demo model ${path.relative(ROOT, demo)} (${took(since)})`);
  makeSite(path.join(WORK, 'site'), site, { 'demo.slm': demo, 'q4.slm': Q4 });
  const server = await serveWeb({ root: path.join(WORK, 'site') });
  const api = `${server.url}/api.html`;
  const browser = await launchChromium(WEBGPU);
  if (!browser) {
    await server.close();
    return 0;
  }
  try {
    // --- SwiftShader, the adapter every machine here has ------------------
    const page = await browser.newPage();
    page.setDefaultTimeout(180000);
    await page.goto(api);
    await adapterChecks(page, 'swiftshader', {}, true);

    // --- a planted WGSL fault: the product probes catch it ----------------
    since = Date.now();
    const bad = await inPage(page, 'models/demo.slm', { lane: 'webgpu', webgpu: { fault: 'drop-last-block' } }, {});
    const r = bad.receipt;
    const refusal = r?.refused?.find((x) => x.lane === 'webgpu');
    check(`planted WGSL fault: the lane falls back to simd (${took(since)})`, r?.lane === 'simd', bad.error ?? JSON.stringify(r?.refused));
    check('planted WGSL fault: refused as self_test_failed, naming the product probes',
      refusal?.code === 'self_test_failed' && /wgsl-q8-product/.test(refusal.why) && /wgsl-q4-product/.test(refusal.why), JSON.stringify(refusal));
    check('planted WGSL fault: the probes that do not depend on it passed; forward-webgpu never ran',
      ['wgsl-subnormal', 'wgsl-negative-zero'].every((n) => r?.selfTests?.webgpu?.find((t) => t.name === n)?.ok) &&
      !names(r?.selfTests?.webgpu).includes('forward-webgpu'), JSON.stringify(r?.selfTests?.webgpu));
    if (bad.capabilityCbor) {
      const cap = receiptShow(bad.capabilityCbor, 'fault-capability.cbor');
      check('planted WGSL fault: the capability receipt (webgpu refused, its probes recorded) verifies', cap.p.status === 0 && !!r.webgpu, cap.p.stderr);
    }

    // --- a deviation the profile allows: every product one ulp off ----------
    since = Date.now();
    const ulp = await inPage(page, 'models/q4.slm', { lane: 'webgpu', worker: false, webgpu: { fault: 'one-ulp' } },
      { generate: { prompt: 'hello', maxTokens: 4, temperature: 0 }, stats: true });
    const up = ulp.receipt?.webgpu?.probes ?? {};
    check(`one ulp off: the lane loads, its product probes within W-3 not bit-equal (${took(since)})`,
      ulp.receipt?.lane === 'webgpu' && /^within W-3 \(/.test(up['q8-product'] ?? '') && /^within W-3 \(/.test(up['q4-product'] ?? ''),
      ulp.error ?? JSON.stringify({ refused: ulp.receipt?.refused, probes: up }));
    check('one ulp off: a reply, every product differing from fast/4 by a bound ratio below 1, no failure',
      !!ulp.reply && ulp.stats?.notBitEqual === ulp.stats?.elements && ulp.stats.elements > 0 && ulp.stats.maxBoundRatio > 0 &&
      ulp.stats.maxBoundRatio < 1 && ulp.stats.failures === 0, ulp.error ?? JSON.stringify(ulp.stats));

    // --- the page: its lane option ------------------------------------------
    since = Date.now();
    const ui = await browser.newPage();
    ui.setDefaultTimeout(180000);
    const errors = [];
    ui.on('pageerror', (e) => errors.push(e.message));
    await ui.goto(`${server.url}/index.html`);
    const shown = await loadOnPage(ui);
    check(`page: the WebGPU lane option loads the demo model on the webgpu lane (${took(since)})`,
      shown.lane === 'webgpu' && /adapter/.test(shown.panel) && /swiftshader/.test(shown.panel), JSON.stringify(shown));
    check('page: no script errors', errors.length === 0, errors.join('; '));
  } finally {
    await browser.close();
  }

  // --- no adapter: Chromium without --enable-unsafe-webgpu ------------------
  since = Date.now();
  const plain = await launchChromium(['--no-sandbox']);
  try {
    const ui = await plain.newPage();
    ui.setDefaultTimeout(180000);
    await ui.goto(`${server.url}/index.html`);
    const shown = await loadOnPage(ui);
    check(`no adapter: the page falls back to simd and shows why (${took(since)})`,
      shown.lane === 'simd' && /webgpu: unsupported_feature/.test(shown.panel) && /adapter/.test(shown.panel), JSON.stringify(shown));
  } finally {
    await plain.close();
  }

  // --- llvmpipe, where Mesa's Vulkan drivers are installed ------------------
  if (!fs.existsSync(LVP_ICD)) {
    console.log(`skip: llvmpipe adapter: ${LVP_ICD} is missing (apt-get install mesa-vulkan-drivers libvulkan1)`);
  } else {
    const lb = await launchChromium([...WEBGPU, ...LLVMPIPE]);
    try {
      const page = await lb.newPage();
      page.setDefaultTimeout(180000);
      await page.goto(api);
      await adapterChecks(page, 'llvmpipe', { webgpu: { featureLevel: 'compatibility' } }, false);
    } finally {
      await lb.close();
    }
  }
  await server.close();
  console.log(`note: stage time ${took(t0)}`);
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  return counts.failed === 0 ? 0 : 1;
}

// The page's Load with the WebGPU lane: the lane it got and its panel.
async function loadOnPage(ui) {
  await ui.evaluate(() => window.tinylmPage.ready);
  await ui.fill('#model-url', 'models/demo.slm');
  await ui.selectOption('#lane', 'webgpu');
  await ui.click('#load');
  await ui.waitForFunction(() => !window.tinylmPage.state.busy, null, { timeout: 180000 });
  return ui.evaluate(() => ({
    lane: window.tinylmPage.state.model?.capabilityReceipt?.lane ?? null,
    error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
    panel: document.getElementById('caps-panel').innerText,
  }));
}

main().then((rc) => process.exit(rc), (e) => {
  console.log(`FAIL ${e.stack || e}`);
  console.log(`${counts.passed} passed, ${counts.failed + 1} failed`);
  process.exit(1);
});
