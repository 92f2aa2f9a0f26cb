#!/usr/bin/env node
// Writes tests/vectors/tok/tokenizer_test_hf.h: the expected values of the
// tokenizer unit tests (src/core/tok/tokenizer_test.c) that concern HF
// semantics, from the oracle itself (Hugging Face `tokenizers` through
// @anush008/tokenizers), so that every one of them can be reproduced.
//
//   node tools/oracle/tok_unit_cases.mjs [--check] [--keep DIR]
//
// The unit tests build small tokenizer sections by hand
// (tests/support/tok_build.h): ids 0..255 are the single bytes, each merge's
// result is the next id (or an existing token), the added tokens follow in
// order. For each vocabulary below this script writes the tokenizer.json HF
// would load for the same section -- the pinned Qwen3 tokenizer.json with
// its normalizer (NFC), pre-tokenizer (Qwen2 split + ByteLevel) and decoder
// (ByteLevel) kept, and its vocabulary, merges and added tokens replaced --
// and encodes every case with it. --keep DIR keeps those files.
//
// The header holds the vocabularies (which the C test builds its sections
// from) and, per case, the input bytes, the oracle's ids and byte offsets,
// and for valid input its raw and visible decodes of those ids. --check
// regenerates in memory and fails if the committed header differs (the
// tok-unit-cases stage of make test).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ROOT, TOKENIZER_DIR, byteLevelString, cpOffsetsToBytes, parseArgs, tokenBytes,
} from './tok_lib.mjs';
import { checkTokenizerFiles, oracleVersions } from './tok_oracle.mjs';

const opts = parseArgs(process.argv.slice(2), { check: false, keep: '' });
const HEADER = 'tests/vectors/tok/tokenizer_test_hf.h';

// ---------------------------------------------------------------------------
// The vocabularies, in tokenizer.json's byte-level notation for merges.
// Added-token flags are tokenizer.h's TL_TOK_ADDED_* names without prefix.
const VOCABS = {
  basic: {
    why: 'the vocabulary most cases use',
    merges: ['h e', 'l l', 'll o', 'he llo', 'Ġ w', 'o r', 'Ġw or', 'l d', 'Ġwor ld',
      'Ã ©', /* é */ 'ð Ł' /* F0 9F */],
    added: [['<s>', ['SPECIAL']], ['<think>', []], ['<a', []], ['<ab>', []], ['éé', []]],
  },
  flags: {
    why: 'one added token per flag: lstrip, rstrip, single_word, normalized',
    merges: [],
    added: [['<L>', ['LSTRIP']], ['<R>', ['RSTRIP']], ['<W>', ['SINGLE_WORD']], ['<é>', ['NORMALIZED']],
      ['<N>', ['NORMALIZED', 'LSTRIP']]],
  },
};

// The cases: [vocabulary, input (a JS string; \u0000 included), why].
const CASES = [
  ['basic', 'hello world', 'two merged words'],
  ['basic', '', 'empty input: no tokens'],
  ['basic', '  world', '\\s+(?!\\S) leaves one space for " world"'],
  ['basic', 'a\u0000b', 'U+0000 is ordinary text'],
  ['basic', 'a\u{1F600}', 'a token covering part of a character (F0 9F) gets the whole character'],
  ['basic', 'xe\u0301y', 'NFC: e U+0301 becomes é, aligned with the e alone'],
  ['basic', 'x\u00e9y', 'precomposed: the same token, its own bytes'],
  ['basic', '\u0958', 'U+0958 decomposes to U+0915 U+093C: six bytes, all aligned with it'],
  ['basic', 'he<s>llo<think>world', 'added tokens split the raw text'],
  ['basic', 'x<ab>', 'leftmost-longest: <ab> over <a'],
  ['basic', 'x<ab', 'the shorter added token when the longer does not match'],
  ['basic', '<thin', 'a partial added token is text'],
  ['basic', '<s><s>', 'adjacent added tokens'],
  ['basic', 'e<s>\u0301', 'not normalized: split before NFC, so U+0301 composes with nothing'],
  ['basic', '<s>hello<think> world', 'raw decode keeps <s>; visible drops only special tokens'],
  ['basic', '  \t\n\r\n x', 'whitespace runs'],
  ['basic', '<s>he<think>llo</think>', 'round trip with added tokens'],
  ['basic', '\u{1F600}\u{1F600}', 'round trip of astral characters'],
  ['basic', 'caf\u00e9 na\u00efve', 'round trip of precomposed letters'],
  ['basic', "I'm here, y'all!  ", 'contractions and trailing spaces'],
  ['basic', 'x\u00e9\u00e9', 'an added token whose characters are all byte-level ones decodes through the alphabet: E9 E9 (ill-formed)'],
  ['flags', 'a \u3000<L>b', 'lstrip takes the whitespace before it (U+3000 included)'],
  ['flags', 'a<R> \t b', 'rstrip takes the whitespace after it'],
  ['flags', '<R>  <L>', 'lstrip stops at the previous split\'s end'],
  ['flags', ' <W>.', 'single_word: not next to a word character'],
  ['flags', 'x<W>', 'single_word: after a word character it is text'],
  ['flags', '<W>_', 'single_word: before _ (a word character) it is text'],
  ['flags', '<e\u0301>', 'normalized: matched on the NFC text, offsets through the alignment'],
  ['flags', 'x  <N>', 'normalized and lstrip'],
];

// ---------------------------------------------------------------------------
// The section tok_build.h builds: token bytes by id, merges, added tokens.
function buildVocab(v) {
  const tokens = [];
  for (let b = 0; b < 256; b++) tokens.push(Buffer.from([b]));
  const find = (buf) => tokens.findIndex((t) => t.equals(buf));
  const merges = v.merges.map((m) => {
    const [x, y] = m.split(' ').map(tokenBytes);
    const xy = Buffer.concat([x, y]);
    if (find(xy) < 0) tokens.push(xy);
    return [x, y];
  });
  const added = v.added.map(([content, flags]) => {
    tokens.push(Buffer.from(content, 'utf8'));
    return { id: tokens.length - 1, content, flags };
  });
  return { tokens, merges, added };
}

// tokenizer.json for that section.
function tokenizerJson(base, built) {
  const addedIds = new Set(built.added.map((a) => a.id));
  const vocab = {};
  built.tokens.forEach((t, id) => { if (!addedIds.has(id)) vocab[byteLevelString(t)] = id; });
  const j = structuredClone(base);
  j.model.vocab = vocab;
  j.model.merges = built.merges.map(([x, y]) => (Array.isArray(base.model.merges[0]) ? [byteLevelString(x), byteLevelString(y)]
    : `${byteLevelString(x)} ${byteLevelString(y)}`));
  j.added_tokens = built.added.map((a) => ({
    id: a.id, content: a.content, single_word: a.flags.includes('SINGLE_WORD'),
    lstrip: a.flags.includes('LSTRIP'), rstrip: a.flags.includes('RSTRIP'),
    normalized: a.flags.includes('NORMALIZED'), special: a.flags.includes('SPECIAL'),
  }));
  return j;
}

// ---------------------------------------------------------------------------
checkTokenizerFiles();
const tk = createRequire(join(ROOT, 'package.json'))('@anush008/tokenizers');
const base = JSON.parse(readFileSync(join(ROOT, TOKENIZER_DIR, 'tokenizer.json'), 'utf8'));
const dir = opts.keep || mkdtempSync(join(tmpdir(), 'tinylm-tok-unit-'));
mkdirSync(dir, { recursive: true });
const oracles = {};
for (const [name, v] of Object.entries(VOCABS)) {
  const file = join(dir, `${name}.tokenizer.json`);
  writeFileSync(file, JSON.stringify(tokenizerJson(base, buildVocab(v)), null, 1));
  oracles[name] = tk.Tokenizer.fromFile(file);
}

const results = [];
for (const [vocab, text, why] of CASES) {
  const enc = await oracles[vocab].encode(text, null, { addSpecialTokens: false });
  const ids = Array.from(enc.getIds());
  const offsets = cpOffsetsToBytes(text, enc.getOffsets().map(([s, e]) => [s, e]));
  const raw = Buffer.from(await oracles[vocab].decode(ids, false), 'utf8');
  const visible = Buffer.from(await oracles[vocab].decode(ids, true), 'utf8');
  results.push({ vocab, text: Buffer.from(text, 'utf8'), why, ids, offsets, raw, visible });
}
if (!opts.keep) rmSync(dir, { recursive: true, force: true });

// ---------------------------------------------------------------------------
// C source for the header.
const cstr = (buf) => {
  let s = '"';
  let hexRun = false; // a hex digit right after \xNN would extend the escape
  for (const b of buf) {
    const c = String.fromCharCode(b);
    if (b === 0x22 || b === 0x5c) s += `\\${c}`;
    else if (b >= 0x20 && b < 0x7f && !(hexRun && /[0-9a-fA-F]/.test(c))) s += c;
    else {
      s += `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`;
      hexRun = true;
      continue;
    }
    hexRun = false;
  }
  return `${s}"`;
};
const comment = (s) => s.replace(/\*\//g, '* /');
const v = oracleVersions();
const lines = [
  '/* Generated by tools/oracle/tok_unit_cases.mjs from Hugging Face tokenizers',
  ` * (crate tokenizers ${v['crate:tokenizers'] ?? '?'}, @anush008/tokenizers ${v['@anush008/tokenizers']}) on the`,
  ' * pinned Qwen3 tokenizer.json with the vocabulary, merges and added tokens',
  ' * replaced by those below. Do not edit: change the script and run it;',
  ' * make test checks that this file is current (tok-unit-cases). */',
  '#ifndef TL_TOKENIZER_TEST_HF_H',
  '#define TL_TOKENIZER_TEST_HF_H',
  '#include <stddef.h>',
  '#include <stdint.h>',
  '',
  'typedef struct hf_added {',
  '  const char *content;',
  '  uint32_t flags;',
  '} hf_added;',
  'typedef struct hf_vocab {',
  '  const char *const *merges; /* tokenizer.json byte-level notation */',
  '  size_t n_merges;',
  '  const hf_added *added;',
  '  size_t n_added;',
  '} hf_vocab;',
  '',
];
const vocabIndex = {};
for (const [k, [name, voc]] of Object.entries(Object.entries(VOCABS))) {
  vocabIndex[name] = Number(k);
  lines.push(`/* ${name}: ${comment(voc.why)} */`);
  lines.push(`static const char *const hf_${name}_merges[] = {${voc.merges.length ? voc.merges.map((m) => cstr(Buffer.from(m, 'utf8'))).join(', ') : 'NULL'}};`);
  lines.push(`static const hf_added hf_${name}_added[] = {`);
  for (const [content, flags] of voc.added) {
    lines.push(`    {${cstr(Buffer.from(content, 'utf8'))}, ${flags.length ? flags.map((f) => `TL_TOK_ADDED_${f}`).join(' | ') : '0'}},`);
  }
  lines.push('};');
}
lines.push('static const hf_vocab HF_VOCABS[] = {');
for (const [name, voc] of Object.entries(VOCABS)) {
  lines.push(`    {hf_${name}_merges, ${voc.merges.length}, hf_${name}_added, ${voc.added.length}},`);
}
lines.push('};');
for (const name of Object.keys(VOCABS)) {
  lines.push(`#define HF_VOCAB_${name.toUpperCase()} ${vocabIndex[name]}`);
}
lines.push('');
lines.push('typedef struct hf_case {');
lines.push('  unsigned vocab; /* index into HF_VOCABS */');
lines.push('  /* the input; HF\'s raw and visible decodes of the ids, as the Rust');
lines.push('   * String it returns (ill-formed UTF-8 shown as U+FFFD) */');
lines.push('  const char *text, *raw, *visible;');
lines.push('  size_t len, raw_len, visible_len, n;');
lines.push('  const uint32_t (*toks)[3]; /* id, byte start, byte end */');
lines.push('  const char *why;');
lines.push('} hf_case;');
results.forEach((r, k) => {
  if (r.ids.length === 0) return;
  lines.push(`static const uint32_t hf_case_${k}[][3] = {`);
  for (let i = 0; i < r.ids.length; i++) lines.push(`    {${r.ids[i]}, ${r.offsets[i][0]}, ${r.offsets[i][1]}},`);
  lines.push('};');
});
lines.push('static const hf_case HF_CASES[] = {');
results.forEach((r, k) => {
  lines.push(`    {HF_VOCAB_${r.vocab.toUpperCase()}, ${cstr(r.text)}, ${cstr(r.raw)}, ${cstr(r.visible)},`);
  lines.push(`     ${r.text.length}, ${r.raw.length}, ${r.visible.length}, ${r.ids.length}, ${r.ids.length ? `hf_case_${k}` : 'NULL'},`);
  lines.push(`     ${cstr(Buffer.from(r.why, 'utf8'))}},`);
});
lines.push('};');
lines.push('');
lines.push('#endif');
const out = lines.join('\n') + '\n';

const path = join(ROOT, HEADER);
if (opts.check) {
  let old = '';
  try { old = readFileSync(path, 'utf8'); } catch { /* missing */ }
  if (old !== out) {
    console.log(`FAIL ${HEADER} is not what the oracle gives now: run node tools/oracle/tok_unit_cases.mjs`);
    process.exit(1);
  }
  console.log(`tok_unit_cases: ${HEADER} is up to date (${results.length} cases)`);
} else {
  writeFileSync(path, out);
  console.log(`tok_unit_cases: wrote ${HEADER} (${results.length} cases)`);
}
