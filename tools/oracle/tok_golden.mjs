#!/usr/bin/env node
// Tokenizer golden vectors from the oracle (issue 3, item 5).
//
//   node tools/oracle/tok_golden.mjs [--corpus tests/tok/corpus.jsonl]
//                                    [--out tests/tok/golden.jsonl] [--check]
//
// Reads the hand-written corpus, runs Hugging Face `tokenizers` (Node binding
// @anush008/tokenizers) on the pinned Qwen3 tokenizer.json and writes one
// JSON line per case after a header line. `make tokenizer-goldens` runs it;
// --check regenerates in memory and fails if the committed file differs.
//
// Per valid case: name, category, hex (input bytes), ids, tokens (byte-level
// strings as the vocabulary spells them), offsets_cp ([start, end) in code
// points of the input, as the oracle reports them), offsets (the same
// converted to byte offsets into the input bytes: the form tinylm reports),
// decode_raw_hex (decode(ids, skip_special_tokens=false)) and
// decode_visible_hex (decode(ids, skip_special_tokens=true)).
//
// Per invalid-UTF-8 case: name, category, hex, invalid_utf8_offset. The oracle
// cannot take these (a JS string cannot hold invalid UTF-8); the offset is
// the corpus's hand-derived expect_invalid_utf8_offset, which this script
// cross-checks against an independent maximal-subpart validator.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, parseArgs, sha256, utf8FirstInvalid, hexOf } from './tok_lib.mjs';
import { loadOracle, oracleVersions, checkTokenizerFiles } from './tok_oracle.mjs';

const opts = parseArgs(process.argv.slice(2), {
  corpus: 'tests/tok/corpus.jsonl', out: 'tests/tok/golden.jsonl', check: false,
});

function fail(msg) { console.error(`tok_golden: ${msg}`); process.exit(1); }

const corpusBytes = readFileSync(join(ROOT, opts.corpus));
const corpus = corpusBytes.toString('utf8').split('\n').filter((l) => l.trim() !== '').map((l, i) => {
  try { return JSON.parse(l); } catch (e) { fail(`${opts.corpus}:${i + 1}: ${e.message}`); }
});

const seen = new Set();
const oracle = await loadOracle();
const lines = [];
const counts = {};
for (const [i, c] of corpus.entries()) {
  const where = `${opts.corpus}:${i + 1} (${c.name})`;
  if (typeof c.name !== 'string' || !/^[a-z0-9_]+\/[A-Za-z0-9_]+$/.test(c.name)) fail(`${where}: name must be category/slug`);
  if (seen.has(c.name)) fail(`${where}: duplicate name`);
  seen.add(c.name);
  const category = c.name.split('/')[0];
  counts[category] = (counts[category] || 0) + 1;
  let bytes, text;
  if ('text' in c) {
    if ('hex' in c) fail(`${where}: both text and hex`);
    if (typeof c.text !== 'string' || !c.text.isWellFormed()) fail(`${where}: text is not a well-formed string (lone surrogate?)`);
    text = c.text;
    bytes = Buffer.from(text, 'utf8');
  } else if ('hex' in c) {
    if (!/^([0-9a-f]{2})*$/.test(c.hex)) fail(`${where}: hex must be lowercase pairs`);
    bytes = Buffer.from(c.hex, 'hex');
  } else fail(`${where}: needs text or hex`);

  const invalidAt = utf8FirstInvalid(bytes);
  // TextDecoder is a second, independent opinion on well-formedness.
  let tdValid = true;
  try { text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes); } catch { tdValid = false; }
  if (tdValid !== (invalidAt < 0)) fail(`${where}: validators disagree`);

  if (invalidAt >= 0) {
    if (!('expect_invalid_utf8_offset' in c)) fail(`${where}: invalid UTF-8 at ${invalidAt} but no expect_invalid_utf8_offset`);
    if (c.expect_invalid_utf8_offset !== invalidAt) {
      fail(`${where}: hand-derived offset ${c.expect_invalid_utf8_offset} but the validator says ${invalidAt}`);
    }
    lines.push({ name: c.name, category, hex: hexOf(bytes), invalid_utf8_offset: invalidAt });
    continue;
  }
  if ('expect_invalid_utf8_offset' in c) fail(`${where}: expects invalid UTF-8 but the bytes are well-formed`);
  const r = await oracle.run(text);
  lines.push({ name: c.name, category, hex: hexOf(bytes), ...r });
}

const files = checkTokenizerFiles();
const header = {
  tinylm_tokenizer_goldens: 1,
  generator: 'tools/oracle/tok_golden.mjs',
  regenerate: 'make tokenizer-goldens',
  check: 'node tests/tok/check_golden.mjs build/gcc/tinylm TOK.slm',
  oracle: oracleVersions(),
  tokenizer_files: files,
  corpus: { path: opts.corpus, sha256: sha256(corpusBytes), cases: lines.length, per_category: counts },
  encode: 'encode(text, add_special_tokens=true)',
  fields: {
    offsets_cp: '[start,end) in code points of the input, as the oracle reports them',
    offsets: 'offsets_cp converted to byte offsets into the input bytes',
    decode_raw_hex: 'decode(ids, skip_special_tokens=false), UTF-8 bytes',
    decode_visible_hex: 'decode(ids, skip_special_tokens=true), UTF-8 bytes',
    invalid_utf8_offset: 'hand-derived (maximal subpart rule), checked by an independent validator; no oracle run',
  },
};
const out = [header, ...lines].map((o) => JSON.stringify(o)).join('\n') + '\n';
const outPath = join(ROOT, opts.out);
if (opts.check) {
  let old = '';
  try { old = readFileSync(outPath, 'utf8'); } catch { /* missing */ }
  if (old !== out) fail(`${opts.out} is not what the oracle gives now: run make tokenizer-goldens`);
  console.log(`tok_golden: ${opts.out} is up to date (${lines.length} cases)`);
} else {
  writeFileSync(outPath, out);
  console.log(`tok_golden: wrote ${opts.out}: ${lines.length} cases (${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')})`);
}
