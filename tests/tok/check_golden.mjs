#!/usr/bin/env node
// Compares tinylm's tokenizer with the committed golden vectors
// (tests/tok/golden.jsonl, written by tools/oracle/tok_golden.mjs). Needs no
// oracle: only the goldens, tinylm and the pinned tokenizer files (whose
// SHA-256 must equal the ones the goldens were made from).
//
//   node tests/tok/check_golden.mjs TINYLM TOK.slm [--golden FILE] [--show N]
//        [--limit N]
//
// One `TINYLM encode TOK.slm --jsonl` process encodes every case; one
// `TINYLM decode TOK.slm --jsonl` process decodes every golden id list in
// raw and visible mode. Per case it compares ids, byte offsets, both decodes
// and, for invalid UTF-8, the error offset. Prints a summary per category,
// each failing case with the first differing token index, and last the line
// `N passed, N failed` (N = cases; each tinylm run that exits non-zero, is
// killed or answers too many lines, and each precondition that does not
// hold, adds one failure). Exit status 1 on any failure.
// --limit N checks the first N cases only (the harness self-test).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT, TOKENIZER_SHA256, tokenizerFileHashes, runTinylmJsonl, firstDiff, pairEq, sha256,
  tokenBytes, showBytes, parseArgs,
} from '../../tools/oracle/tok_lib.mjs';

const opts = parseArgs(process.argv.slice(2), { golden: 'tests/tok/golden.jsonl', show: 3, limit: 0 });
if (opts._.length !== 2) {
  console.error('usage: node tests/tok/check_golden.mjs TINYLM TOK.slm [--golden FILE] [--show N] [--limit N]');
  process.exit(2);
}
const [tinylm, slm] = opts._;

const goldenLines = readFileSync(join(ROOT, opts.golden), 'utf8').split('\n').filter((l) => l !== '');
const header = JSON.parse(goldenLines[0]);
const cases = goldenLines.slice(1, opts.limit > 0 ? 1 + opts.limit : undefined).map((l) => JSON.parse(l));
if (header.tinylm_tokenizer_goldens !== 1) {
  console.error(`${opts.golden}: not a tokenizer golden file (header ${goldenLines[0].slice(0, 80)})`);
  process.exit(2);
}

// The tokenizer files must be the ones the goldens came from: tok.slm is
// converted from them, and a silently different file would make every
// comparison meaningless.
let hashFailures = 0;
const now = tokenizerFileHashes();
for (const [f, rec] of Object.entries(header.tokenizer_files)) {
  const have = now[f] ? now[f].sha256 : null;
  if (rec.sha256 !== TOKENIZER_SHA256[f] || have !== rec.sha256) {
    console.log(`FAIL tokenizer file ${rec.path}: sha256 ${have ?? '(missing)'}; goldens recorded ${rec.sha256}; pinned ${TOKENIZER_SHA256[f]}`);
    hashFailures++;
  }
}
if (hashFailures) {
  console.log('FAIL the tokenizer files differ from the ones the goldens were made with: run `make setup` (npm ci)');
}
// The goldens must be those of the committed corpus.
try {
  const corpusSha = sha256(readFileSync(join(ROOT, header.corpus.path)));
  if (corpusSha !== header.corpus.sha256) {
    console.log(`FAIL ${header.corpus.path} changed since the goldens were made (sha256 ${corpusSha}, ` +
      `goldens recorded ${header.corpus.sha256}): run \`make tokenizer-goldens\``);
    hashFailures++;
  }
} catch (e) {
  console.log(`FAIL cannot read the corpus ${header.corpus.path}: ${e.message}`);
  hashFailures++;
}

// --- run tinylm -------------------------------------------------------------
const enc = await runTinylmJsonl(tinylm, 'encode', slm, cases.map((c) => ({ hex: c.hex })));
const decReq = [];
for (const c of cases) {
  if (c.ids === undefined) continue;
  decReq.push({ ids: c.ids, mode: 'raw' }, { ids: c.ids, mode: 'visible' });
}
const dec = await runTinylmJsonl(tinylm, 'decode', slm, decReq);
// A run that exits non-zero or by a signal failed, even when every answer
// line was right (a leak report at exit changes the status); so did one that
// printed more lines than it was asked for. Each such run is one failure.
let runFailures = 0;
for (const [what, r] of [['encode', enc], ['decode', dec]]) {
  if (r.code !== 0 || r.signal || r.extraLines) {
    console.log(`FAIL tinylm ${what} --jsonl exited ${r.signal ?? r.code}${r.extraLines ? `, ${r.extraLines} extra output lines` : ''}`);
    if (r.stderr) console.log(r.stderr.split('\n').slice(0, 5).map((l) => `  | ${l}`).join('\n'));
    runFailures++;
  }
}

// --- compare ----------------------------------------------------------------
// id → token string, from every golden case (for readable reports).
const vocab = new Map();
for (const c of cases) if (c.ids) c.ids.forEach((id, i) => vocab.set(id, c.tokens[i]));
const showTok = (id) => (vocab.has(id) ? `${id}:${JSON.stringify(showBytes(tokenBytes(vocab.get(id)), 40))}` : `${id}`);
const window = (ids, i, offs) => ids.slice(Math.max(0, i - 2), i + 3)
  .map((id, k) => `${showTok(id)}${offs ? `@${JSON.stringify(offs[Math.max(0, i - 2) + k] ?? null)}` : ''}`).join(' ');

const byCat = new Map();
let passed = 0, failed = 0, d = 0;
for (const [ci, c] of cases.entries()) {
  const got = enc.results[ci];
  const problems = [];
  if (c.invalid_utf8_offset !== undefined) {
    if (got.error !== 'invalid_utf8' || got.offset !== c.invalid_utf8_offset) {
      problems.push(`expected {"error":"invalid_utf8","offset":${c.invalid_utf8_offset}}, got ${JSON.stringify(got).slice(0, 200)}`);
    }
  } else {
    if (!Array.isArray(got.ids)) {
      problems.push(`encode: expected ${c.ids.length} ids, got ${JSON.stringify(got).slice(0, 200)}`);
    } else {
      const i = firstDiff(c.ids, got.ids);
      if (i >= 0) {
        problems.push(`ids differ at token ${i} (expected ${c.ids.length} tokens, got ${got.ids.length})\n` +
          `      expected: ${window(c.ids, i)}\n      got:      ${window(got.ids, i)}`);
      } else if (!Array.isArray(got.offsets) || got.offsets.length !== c.offsets.length) {
        problems.push(`offsets: expected ${c.offsets.length} pairs, got ${JSON.stringify(got.offsets)?.slice(0, 200)}`);
      } else {
        const j = firstDiff(c.offsets, got.offsets, pairEq);
        if (j >= 0) {
          problems.push(`byte offsets differ at token ${j} (${showTok(c.ids[j])}): expected ` +
            `[${c.offsets[j]}] (code points [${c.offsets_cp[j]}]), got ${JSON.stringify(got.offsets[j])}\n` +
            `      expected: ${window(c.ids, j, c.offsets)}\n      got:      ${window(got.ids, j, got.offsets)}`);
        }
      }
    }
    for (const [mode, want] of [['raw', c.decode_raw_hex], ['visible', c.decode_visible_hex]]) {
      const r = dec.results[d++];
      if (r.hex !== want) {
        const w = Buffer.from(want, 'hex');
        const g = typeof r.hex === 'string' ? Buffer.from(r.hex, 'hex') : null;
        if (!g) problems.push(`decode ${mode}: got ${JSON.stringify(r).slice(0, 200)}`);
        else {
          const k = firstDiff([...w], [...g]);
          problems.push(`decode ${mode} differs at byte ${k} (expected ${w.length} bytes, got ${g.length}): ` +
            `expected …${showBytes(w.subarray(Math.max(0, k - 8), k + 16), 60)}, got …${showBytes(g.subarray(Math.max(0, k - 8), k + 16), 60)}`);
        }
      }
    }
  }
  if (!byCat.has(c.category)) byCat.set(c.category, { pass: 0, fail: [] });
  const cat = byCat.get(c.category);
  if (problems.length) { failed++; cat.fail.push({ c, problems }); } else { passed++; cat.pass++; }
}

const catWidth = Math.max(...[...byCat.keys()].map((k) => k.length));
for (const [name, cat] of byCat) {
  const n = cat.pass + cat.fail.length;
  console.log(`${cat.fail.length ? 'FAIL' : 'ok  '} ${name.padEnd(catWidth)} ${String(cat.pass).padStart(4)}/${n}`);
  for (const { c, problems } of cat.fail.slice(0, opts.show)) {
    const input = Buffer.from(c.hex, 'hex');
    console.log(`  FAIL ${c.name}  input: "${showBytes(input, 100)}"`);
    for (const p of problems) console.log(`    ${p}`);
  }
  if (cat.fail.length > opts.show) {
    console.log(`  … and ${cat.fail.length - opts.show} more: ${cat.fail.slice(opts.show).map((f) => f.c.name.split('/')[1]).join(' ')}`);
  }
}
failed += hashFailures + runFailures;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
