#!/usr/bin/env node
// The promotion report (docs/report.md) in real Chromium: Debian's
// chromium, headless, through npm playwright-core (tests/web/chromium.mjs).
//
//   node tests/report/chromium_test.mjs SHOTS_DIR PAGE.html...
//
// Each page (written by tests/report/report_test.py) is opened from
// file://, once as is and once with JavaScript disabled:
//   * nothing but the file itself is requested, nothing fails to load, and
//     nothing is printed to the console as an error or thrown;
//   * the decision, the claims table (one visible row per claim, each
//     showing its claim's name and verdict), the custody table and every
//     chart are visible, with the same text either way: the page needs no
//     script;
//   * a full-page screenshot of each, SHOTS_DIR/NAME.png (NAME the page's
//     file name without .html), for the note.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium } from '../web/chromium.mjs';

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  if (typeof detail !== 'string') detail = JSON.stringify(detail);
  if (detail.length > 600) detail = `${detail.slice(0, 600)} …`;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
  return ok;
}

// What a reader sees: every element's visibility and text, read in the page.
function visible() {
  const shown = (e) => {
    if (!e) return false;
    const r = e.getBoundingClientRect();
    const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none';
  };
  const decision = document.querySelector('section#decision');
  const claims = [...document.querySelectorAll('table#claims tr[data-claim]')];
  const custody = [...document.querySelectorAll('table#custody tr[data-field]')];
  const charts = [...document.querySelectorAll('figure.chart')];
  return {
    decision: decision ? { shown: shown(decision), value: decision.dataset.decision, text: decision.innerText } : null,
    claims: claims.map((r) => ({ shown: shown(r), claim: r.dataset.claim, verdict: r.dataset.verdict, text: r.innerText })),
    custody: custody.map((r) => ({ shown: shown(r), field: r.dataset.field, value: r.dataset.value, text: r.innerText })),
    charts: charts.map((f) => ({ shown: shown(f), svg: shown(f.querySelector('svg')), cls: f.className })),
    tables: [...document.querySelectorAll('table')].map((t) => ({ id: t.id, cls: t.className, shown: shown(t), rows: t.rows.length })),
    text: document.body.innerText,
  };
}

async function open(browser, file, javaScriptEnabled) {
  const url = pathToFileURL(path.resolve(file)).href;
  const ctx = await browser.newContext({ javaScriptEnabled, viewport: { width: 1200, height: 900 } });
  const page = await ctx.newPage();
  const requests = [];
  const problems = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url, { waitUntil: 'load' });
  const seen = await page.evaluate(visible);
  return { ctx, page, url, requests, problems, seen };
}

function checkSeen(label, seen) {
  const d = seen.decision;
  check(`${label}: the decision is shown and says it`, d && d.shown &&
    (d.value === 'promoted' ? /promoted/i.test(d.text) && !/not[ _]promoted/i.test(d.text) : /not[ _]promoted/i.test(d.text)), d);
  const hidden = seen.claims.filter((r) => !r.shown || !r.text.includes(r.claim) || !r.text.toLowerCase().includes(r.verdict.replace('_', ' ')) && !r.text.includes(r.verdict));
  check(`${label}: every claim row is shown with its name and verdict (${seen.claims.length})`, seen.claims.length > 0 && hidden.length === 0, hidden.slice(0, 3));
  const custody = seen.custody.filter((r) => !r.shown || !r.text.includes(r.value));
  check(`${label}: the custody table shows each field's value (${seen.custody.length})`, seen.custody.length > 0 && custody.length === 0, custody.slice(0, 3));
  const charts = seen.charts.filter((c) => !c.shown || !c.svg);
  check(`${label}: every chart is drawn (${seen.charts.length})`, seen.charts.length > 0 && charts.length === 0, charts);
  const tables = seen.tables.filter((t) => !t.shown);
  check(`${label}: every table is shown (${seen.tables.length})`, tables.length === 0, tables);
}

async function main() {
  const [shots, ...pages] = process.argv.slice(2);
  if (!shots || pages.length === 0) {
    console.log('usage: node tests/report/chromium_test.mjs SHOTS_DIR PAGE.html...');
    return 2;
  }
  const browser = await launchChromium();
  if (!browser) return 0;
  fs.mkdirSync(shots, { recursive: true });
  try {
    for (const file of pages) {
      const name = path.basename(file, '.html');
      if (!check(`${name}: the page exists`, fs.existsSync(file), file)) continue;
      const js = await open(browser, file, true);
      check(`${name}: the only request is the file itself`, js.requests.length === 1 && js.requests[0] === js.url, js.requests);
      check(`${name}: no console error, page error or failed request`, js.problems.length === 0, js.problems);
      checkSeen(name, js.seen);
      const shot = path.join(shots, `${name}.png`);
      await js.page.screenshot({ path: shot, fullPage: true });
      check(`${name}: a full-page screenshot ${shot}`, fs.statSync(shot).size > 0);
      await js.ctx.close();

      const nojs = await open(browser, file, false);
      check(`${name}, JavaScript disabled: the only request is the file itself`, nojs.requests.length === 1 && nojs.requests[0] === nojs.url, nojs.requests);
      check(`${name}, JavaScript disabled: no console error or failed request`, nojs.problems.length === 0, nojs.problems);
      checkSeen(`${name}, JavaScript disabled`, nojs.seen);
      check(`${name}, JavaScript disabled: the same text as with it`, nojs.seen.text === js.seen.text);
      await nojs.ctx.close();
    }
  } finally {
    await browser.close();
  }
  return failed ? 1 : 0;
}

main().then((rc) => {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(rc);
}, (e) => {
  console.log(`FAIL ${e.stack || e}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
