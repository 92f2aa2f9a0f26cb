#!/usr/bin/env node
// Seeded random-Unicode differential test of tinylm's tokenizer against the
// oracle (Hugging Face `tokenizers` via @anush008/tokenizers), issue 3 item 5.
//
//   node tools/oracle/tok_random.mjs TINYLM TOK.slm [--count N] [--seed S]
//        [--show N] [--shrink N] [--save-failures FILE] [--print I]
//        [--only CLASS,CLASS...]
//
// Generates --count strings (default 100000) from a seeded PRNG, weighted
// toward the classes that trip tokenizers (whitespace kinds, combining and
// NFC-sensitive sequences, Hangul jamo, digits of many scripts, letters
// assigned after Unicode 9.0, added-token fragments, contractions, emoji
// sequences, controls, long runs, invalid UTF-8, and short strings over a
// small alphabet of boundary characters). The oracle encodes all of
// them; one `TINYLM encode TOK.slm --jsonl` process encodes all of them; one
// `TINYLM decode TOK.slm --jsonl` process decodes the oracle's ids in raw
// mode. Compared: ids, byte offsets, the raw decode, and for invalid UTF-8
// the error offset (expected value from an independent validator, since the
// oracle cannot take such input). The first --shrink mismatches are reduced
// by deleting code points while the mismatch persists. Last line:
// `N passed, N failed` (a tinylm run that exits non-zero or is killed adds
// one failure); exit status 1 on any failure.
//
// --print I prints case I (as a JSON string and hex) and exits; it needs no
// TINYLM. With TINYLM = tools/oracle/tok_hf_shim.mjs the oracle is compared
// with itself (a self-test of this script).
import { writeFileSync } from 'node:fs';
import {
  JsonlProc, parseArgs, runTinylmJsonl, utf8FirstInvalid, firstDiff, pairEq, showBytes, tokenBytes, hexOf,
} from './tok_lib.mjs';
import { loadOracle } from './tok_oracle.mjs';

const opts = parseArgs(process.argv.slice(2), {
  count: 100000, seed: 1, show: 10, shrink: 5, save_failures: '', print: -1, batch: 2000, only: '',
});

// ---------------------------------------------------------------------------
// PRNG: sfc32 seeded through splitmix32 (deterministic across platforms).
function makeRng(seed) {
  let s = seed >>> 0;
  const sm = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = sm(), b = sm(), c = sm(), d = sm();
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t >>> 0;
  };
  const r = {
    u32: next,
    int: (n) => Math.floor((next() / 4294967296) * n), // [0, n)
    range: (lo, hi) => lo + Math.floor((next() / 4294967296) * (hi - lo + 1)), // [lo, hi]
    chance: (p) => next() / 4294967296 < p,
    pick: (arr) => arr[Math.floor((next() / 4294967296) * arr.length)],
  };
  return r;
}

// ---------------------------------------------------------------------------
// Character pools. Ranges are [lo, hi] inclusive.
const U = (...cps) => String.fromCodePoint(...cps);
const fromRanges = (rng, ranges) => {
  const [lo, hi] = rng.pick(ranges);
  return rng.range(lo, hi);
};

const WS_SPACE = [' ', '\t', '\n', '\r', '\r\n', '\u000b', '\u000c', '\u0085', '\u00a0', '\u1680',
  '\u2000', '\u2003', '\u2007', '\u2009', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000'];
// Look like spaces but are not \s for the reference (Oniguruma White_Space).
const WS_NOT = ['\u200b', '\u180e', '\u2060', '\ufeff', '\u001c', '\u001d', '\u001e', '\u001f', '\u200c', '\u200d'];

const LETTER_RANGES = [
  [0x41, 0x5a], [0x61, 0x7a], [0xc0, 0xff], [0x100, 0x17f], [0x180, 0x24f], [0x250, 0x2af],
  [0x2b0, 0x2c1], [0x370, 0x3ff], [0x1f00, 0x1ffc], [0x400, 0x4ff], [0x531, 0x556], [0x561, 0x587],
  [0x5d0, 0x5ea], [0x620, 0x64a], [0x671, 0x6d3], [0x710, 0x72f], [0x780, 0x7a5], [0x7ca, 0x7ea],
  [0x904, 0x939], [0x985, 0x9b9], [0xa05, 0xa39], [0xb85, 0xbb9], [0xc05, 0xc39], [0xd05, 0xd3a],
  [0xe01, 0xe30], [0xe81, 0xeb0], [0xf40, 0xf6c], [0x1000, 0x102a], [0x10a0, 0x10ff], [0x1200, 0x135a],
  [0x13a0, 0x13f5], [0x1401, 0x166c], [0x16a0, 0x16ea], [0x1780, 0x17b3], [0x1820, 0x1878],
  [0x3041, 0x3096], [0x30a1, 0x30fa], [0x30fc, 0x30ff], [0x3105, 0x312f], [0x4e00, 0x9fa5],
  [0xa000, 0xa48c], [0xac00, 0xd7a3], [0xff21, 0xff3a], [0xff41, 0xff5a], [0xff66, 0xff9d],
  [0x10400, 0x1044f], [0x1d400, 0x1d6a5], [0x10330, 0x1034a], [0x104b0, 0x104fb], [0x1e900, 0x1e943],
  [0x20000, 0x2a6d6], [0x17000, 0x187ec], [0x12000, 0x12399], [0x13000, 0x1342e],
  [0x1c90, 0x1cba], [0x1cbd, 0x1cbf], // Georgian Mtavruli (11.0)
];
// Letters assigned after Unicode 9.0 (\p{L} for the reference's regex, but
// outside its 9.0 NFC data).
const POST9_LETTERS = [
  [0x0860, 0x086a], [0x09fc, 0x09fc], [0x9fd6, 0x9fea], [0x11d00, 0x11d06], [0x11a00, 0x11a00],
  [0x11a0b, 0x11a32], [0x1b170, 0x1b2fb], [0x2ceb0, 0x2cee0], [0x11800, 0x1182b], [0x10d00, 0x10d23],
  [0x16e40, 0x16e7f], [0x10fe0, 0x10ff6], [0x1e100, 0x1e12c], [0x1e2c0, 0x1e2eb], [0x10fb0, 0x10fc4],
  [0x11900, 0x11906], [0x18b00, 0x18cd5], [0x10e80, 0x10ea9], [0x30000, 0x3134a], [0x10570, 0x1057a],
  [0x1df00, 0x1df1e], [0x1e290, 0x1e2ad], [0x11f04, 0x11f10], [0x1e4d0, 0x1e4eb], [0x31350, 0x323af],
  [0x10d4a, 0x10d65], [0x16100, 0x1611d], [0x16d43, 0x16d6a], [0x1e5d0, 0x1e5ed], [0x11bc0, 0x11be0],
  [0x105c0, 0x105f3], [0x11380, 0x11389], [0x13460, 0x143fa], [0xa7cb, 0xa7cd], [0x0560, 0x0560],
  [0x0870, 0x0887], [0x1e030, 0x1e06d], [0x1aff0, 0x1aff3], [0x10780, 0x10785],
];
const DIGIT_RANGES = [
  [0x30, 0x39], [0x660, 0x669], [0x6f0, 0x6f9], [0x7c0, 0x7c9], [0x966, 0x96f], [0x9e6, 0x9ef],
  [0xbe6, 0xbf2], [0xe50, 0xe59], [0x1040, 0x1049], [0x17e0, 0x17e9], [0x1810, 0x1819], [0xff10, 0xff19],
  [0x1d7ce, 0x1d7ff], [0x104a0, 0x104a9], [0x1e950, 0x1e959],
  [0x2160, 0x2188], [0x3007, 0x3007], [0x3021, 0x3029], [0x16ee, 0x16f0], // Nl
  [0xb2, 0xb3], [0xb9, 0xb9], [0xbc, 0xbe], [0x2070, 0x2070], [0x2074, 0x2079], [0x2080, 0x2089],
  [0x2150, 0x215f], [0x2460, 0x249b], [0x24ea, 0x24ff], [0x2776, 0x2793], [0x1369, 0x137c],
  [0x10107, 0x10133], [0x1d360, 0x1d378], // No
  // assigned after 9.0
  [0x11d50, 0x11d59], [0x11da0, 0x11da9], [0x10d30, 0x10d39], [0x1e140, 0x1e149], [0x1e2f0, 0x1e2f9],
  [0x11950, 0x11959], [0x1fbf0, 0x1fbf9], [0x16ac0, 0x16ac9], [0x11f50, 0x11f59], [0x1e4f0, 0x1e4f9],
  [0x10d40, 0x10d49], [0x16130, 0x16139], [0x16d70, 0x16d79], [0x1e5f1, 0x1e5fa], [0x11bf0, 0x11bf9],
  [0x1ccf0, 0x1ccf9], [0x116d0, 0x116e3], [0x1d2e0, 0x1d2f3], [0x1ec71, 0x1ecb4], [0x11fc0, 0x11fd4],
  [0x1d2c0, 0x1d2d3],
];
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'.split('').concat(
  ['¡', '¿', '«', '»', '–', '—', '…', '‘', '’', '“', '”', '•', '·', '§', '¶', '©', '®', '™', '°', '±',
    '×', '÷', '€', '£', '¥', '₹', '←', '→', '∑', '∞', '≠', '√', '「', '」', '、', '。', '！', '？', '（', '）',
    '─', '│', '⠓', '☺', '★', '♪', '\u{1D11E}', '\u{1F300}']);
const MARKS = [0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x30a, 0x30b, 0x30c, 0x30f, 0x311,
  0x316, 0x317, 0x31b, 0x323, 0x324, 0x325, 0x326, 0x327, 0x328, 0x32d, 0x330, 0x331, 0x334, 0x338,
  0x340, 0x341, 0x342, 0x343, 0x344, 0x345, 0x34f, 0x35c, 0x360, 0x361, 0x5b0, 0x5b4, 0x5bc, 0x5c1,
  0x5c2, 0x64b, 0x64e, 0x650, 0x651, 0x652, 0x670, 0x93c, 0x94d, 0x951, 0x9bc, 0x9be, 0x9cd, 0x9d7,
  0xb3e, 0xb56, 0xb57, 0xbbe, 0xbd7, 0xcc2, 0xcd5, 0xcd6, 0xd3e, 0xd57, 0xdca, 0xdcf, 0xddf,
  0xe48, 0xe49, 0xf71, 0xf72, 0xf74, 0xf80, 0x102e, 0x1b35, 0x20d0, 0x20e3, 0x3099, 0x309a, 0xfe20,
  0x1dc0, 0x1ab0, 0x110ba, 0x11127, 0x1133e, 0x11357, 0x114b0, 0x114ba, 0x114bd, 0x115af, 0x1d165,
  0x1d16e,
  // assigned after 9.0: no combining class, no composition for the reference
  0x898, 0x897, 0x1dfa, 0x1df6, 0x1df7, 0x10efd, 0x10efe, 0x11930, 0x16d67, 0x113b8, 0x113c2,
  0x113c9, 0x1611e, 0x1611f, 0x16120];
const COMPOSE_BASES = 'AEIOUYaeiouyNnCcSsZzGgRrKkWwHhLlDdTt'.split('').concat(
  ['Æ', 'æ', 'Ø', 'ø', 'Ü', 'ü', 'Ô', 'ô', 'Ơ', 'ơ', 'Ư', 'ư', 'Α', 'α', 'Ε', 'ε', 'Ι', 'ι', 'Ω', 'ω',
    'υ', 'И', 'и', 'Е', 'е', 'О', 'о', 'ע', 'ש', 'ا', 'و', 'ي', 'क', 'ख', 'ড', 'ো', 'ে', 'ொ', 'ெ',
    'െ', 'ෙ', 'ᬅ', 'か', 'は', 'ウ', 'ハ', '\u{11099}', '\u{11131}', '\u{11347}', '\u{114B9}',
    '\u{11935}', '\u{16D63}', '\u{113C2}', '\u{1611E}', '\u{1D158}']);
// NFC singletons, composition exclusions, expansions.
const NFC_SPECIAL = [0x2126, 0x212a, 0x212b, 0x1f71, 0x1f73, 0x340, 0x341, 0x343, 0x344, 0x374, 0x37e,
  0x387, 0x958, 0x959, 0x95f, 0x9dc, 0xa33, 0xb5c, 0xf43, 0xf73, 0xf75, 0xf81, 0xfb1d, 0xfb1f, 0xfb2a,
  0xfb4e, 0x2adc, 0x1d15e, 0x1d164, 0x2000, 0x2001, 0x2329, 0x232a, 0xf900, 0xfa10, 0x2f800, 0x2fa1d,
  0xfb01, 0xe9, 0xc5, 0x1e9b, 0x1e9e, 0x390, 0x3b0, 0x11938, 0x16d69, 0x113c5, 0x16121];
const ADDED = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|object_ref_start|>', '<|object_ref_end|>',
  '<|box_start|>', '<|box_end|>', '<|quad_start|>', '<|quad_end|>', '<|vision_start|>', '<|vision_end|>',
  '<|vision_pad|>', '<|image_pad|>', '<|video_pad|>', '<tool_call>', '</tool_call>', '<|fim_prefix|>',
  '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>', '<tool_response>',
  '</tool_response>', '<think>', '</think>'];
const EMOJI_BASE = [0x1f600, 0x1f602, 0x1f44d, 0x1f44b, 0x1f468, 0x1f469, 0x1f9d1, 0x1f467, 0x1f466,
  0x2764, 0x263a, 0x1f3f3, 0x1f3f4, 0x1f308, 0x1f4bb, 0x1f680, 0x1f004, 0x2705, 0x1fae0, 0x1fae8,
  0x1fabe, 0x1f48b, 0x1f525, 0x1f914, 0x2b50, 0x1f1e6];
const UNASSIGNED_ETC = [0x378, 0x379, 0x380, 0x5ff, 0xe000, 0xe123, 0xf8ff, 0xf0000, 0xffffd, 0x100000,
  0x10fffd, 0xfffe, 0xffff, 0xfdd0, 0xfdef, 0x1fffe, 0x10ffff, 0x50000, 0xe0001, 0xe0020, 0xe007f,
  0xfffd, 0x323b0, 0x10940, 0x11db0, 0x16ea0, 0x1e6c0, 0x2fffe, 0xd7ff, 0xe01ef];

function randomScalar(rng) {
  for (;;) {
    const cp = rng.chance(0.6) ? rng.range(0, 0xffff) : rng.range(0x10000, 0x10ffff);
    if (cp < 0xd800 || cp > 0xdfff) return cp;
  }
}
function casePerm(rng, s) {
  return s.split('').map((ch) => (rng.chance(0.5) ? ch.toUpperCase() : ch)).join('');
}
const WORDS = ['the', 'of', 'and', 'to', 'in', 'is', 'you', 'that', 'it', 'he', 'was', 'for', 'on', 'are',
  'with', 'they', 'be', 'at', 'one', 'have', 'this', 'from', 'hello', 'world', 'token', 'model', 'int',
  'return', 'def', 'self', 'Qwen', 'HTTP', 'JSON', 'naïve', 'café', 'Straße', 'москва', '東京', '서울',
  'Ελλάδα', 'مرحبا', 'שלום', 'नमस्ते'];

// A small alphabet of characters that sit on the tokenizer's boundaries;
// short strings over it exercise their interactions densely.
const DENSE = [' ', ' ', '\t', '\n', '\r', '\u000b', '\u00a0', '\u0085', '\u2028', '\u3000', '\u200b', 'a', 'A', "'", "'",
  's', 'S', 't', 'T', 'r', 'e', 'E', 'v', 'm', 'l', 'L', 'd', '1', '9', '\u0661', '\u2160', '\u00b2', '\u0301', '\u0323',
  '\u0338', '!', '.', '<', '>', '|', '_', 'i', 'k', 'h', 'n', '/', '\u00e9', '\u1100', '\u1161', '\u11a8', '\uac00',
  '\u{11D00}', '\u{1FBF0}', '\u{1F600}', '\u200d', '\ufe0f', '\u0000', '\ufeff', '\u037e', '\u212b', '\uf900',
  '\u0898', '\u{10400}', '\u4e2d', '\u3042', '<|im_end|>', '<think>', '</think>', '\u017f', '\u0130', '\u0131'];

// Each generator returns [text, className].
const GEN = [
  [10, 'ascii_word', (r) => (r.chance(0.5) ? r.pick(WORDS) : Array.from({ length: r.range(1, 12) },
    () => String.fromCharCode(r.chance(0.8) ? r.range(0x61, 0x7a) : r.range(0x41, 0x5a))).join(''))],
  [4, 'space_word', (r) => ' '.repeat(r.range(1, 4)) + r.pick(WORDS)],
  [9, 'whitespace', (r) => Array.from({ length: r.range(1, 6) }, () => (r.chance(0.85) ? r.pick(WS_SPACE) : r.pick(WS_NOT))).join('')],
  [6, 'digits', (r) => {
    const [lo, hi] = r.pick(DIGIT_RANGES);
    return Array.from({ length: r.range(1, 8) }, () => U(r.chance(0.7) ? r.range(lo, hi) : fromRanges(r, DIGIT_RANGES))).join('');
  }],
  [6, 'contraction', (r) => {
    const apos = r.chance(0.9) ? "'" : r.pick(['\u2019', '\u02bc', '\uff07']);
    const tail = r.chance(0.85) ? casePerm(r, r.pick(['s', 't', 're', 've', 'm', 'll', 'd'])) : r.pick(['x', 'v', 'r', 'l', 'ſ', 'K', 'ı', 'İ', '1', ' ', '']);
    return (r.chance(0.3) ? r.pick(WORDS) : '') + apos + tail + (r.chance(0.3) ? r.pick(['a', 'S', 'e', 'ab', '\u0301', 'я', "'"]) : '');
  }],
  [6, 'punct', (r) => (r.chance(0.3) ? ' ' : '') + Array.from({ length: r.range(1, 5) }, () => r.pick(PUNCT)).join('') +
    (r.chance(0.3) ? r.pick(['\n', '\r\n', '\r', '\n\n', '\r\r\n']) : '')],
  [9, 'letters', (r) => {
    const [lo, hi] = r.pick(LETTER_RANGES);
    return (r.chance(0.2) ? r.pick([' ', '\t', '\u00a0', '\u3000', '_', '-', '\n']) : '') +
      Array.from({ length: r.range(1, 8) }, () => U(r.range(lo, hi))).join('');
  }],
  [5, 'post9', (r) => (r.chance(0.3) ? r.pick([' ', "'", '!', 'a', '1', '\u0301']) : '') +
    Array.from({ length: r.range(1, 4) }, () => U(fromRanges(r, r.chance(0.8) ? POST9_LETTERS : DIGIT_RANGES.slice(-21)))).join('')],
  [8, 'combining', (r) => {
    const base = r.chance(0.7) ? r.pick(COMPOSE_BASES) : r.pick(['', ' ', '1', '!', '\n', 'ㄱ', '\u{10400}', '<|im_end|>']);
    return base + Array.from({ length: r.range(1, 4) }, () => U(r.pick(MARKS))).join('');
  }],
  [4, 'nfc_special', (r) => Array.from({ length: r.range(1, 3) }, () => U(r.pick(NFC_SPECIAL))).join('') +
    (r.chance(0.4) ? U(r.pick(MARKS)) : '')],
  [5, 'hangul', (r) => Array.from({ length: r.range(1, 5) }, () => {
    const k = r.int(6);
    if (k === 0) return U(r.chance(0.8) ? r.range(0x1100, 0x1112) : r.range(0x1113, 0x115f));
    if (k === 1) return U(r.chance(0.8) ? r.range(0x1161, 0x1175) : r.range(0x1176, 0x11a7));
    if (k === 2) return U(r.chance(0.8) ? r.range(0x11a7, 0x11c2) : r.range(0x11c3, 0x11ff));
    if (k === 3) return U(0xac00 + 28 * r.int(399));
    if (k === 4) return U(r.range(0xac00, 0xd7a3));
    return U(r.pick([0x3131, 0x314f, 0x3164, 0xffa1, 0xa960, 0xd7b0, 0xd7fb, 0x115f, 0x1160]));
  }).join('')],
  [2, 'cjk_compat', (r) => Array.from({ length: r.range(1, 3) }, () => U(r.chance(0.7) ? r.range(0xf900, 0xfad9) : r.range(0x2f800, 0x2fa1d))).join('')],
  [5, 'emoji', (r) => {
    const k = r.int(6);
    const e = () => U(r.pick(EMOJI_BASE));
    if (k === 0) return e() + (r.chance(0.5) ? U(r.range(0x1f3fb, 0x1f3ff)) : '');
    if (k === 1) return Array.from({ length: r.range(2, 4) }, e).join('\u200d');
    if (k === 2) return Array.from({ length: r.range(1, 3) }, () => U(r.range(0x1f1e6, 0x1f1ff))).join('');
    if (k === 3) return r.pick(['0', '1', '#', '*', '9']) + (r.chance(0.7) ? '\ufe0f' : '') + '\u20e3';
    if (k === 4) return e() + r.pick(['\ufe0f', '\ufe0e']) + (r.chance(0.3) ? '\u200d' + e() : '');
    return U(0x1f3f4) + Array.from({ length: r.range(1, 5) }, () => U(r.range(0xe0061, 0xe007a))).join('') + U(0xe007f);
  }],
  [2, 'variation_selector', (r) => (r.chance(0.5) ? r.pick(['a', '葛', '1', ' ', '↔', 'ᠠ']) : '') +
    U(r.chance(0.5) ? r.range(0xfe00, 0xfe0f) : r.chance(0.5) ? r.range(0xe0100, 0xe01ef) : r.pick([0x180b, 0x180c, 0x180d, 0x180f]))],
  [7, 'added', (r) => {
    const t = r.pick(ADDED);
    const k = r.int(6);
    if (k <= 2) return t;
    if (k === 3) return t.slice(0, r.range(1, t.length - 1)); // prefix
    if (k === 4) return t.slice(r.range(1, t.length - 1)); // suffix
    const i = r.int(t.length); // one character changed
    return t.slice(0, i) + r.pick(['<', '|', '_', 'I', ' ', '\u200b', '>']) + t.slice(i + 1);
  }],
  [4, 'control', (r) => Array.from({ length: r.range(1, 3) }, () => U(r.chance(0.6) ? r.range(0, 0x1f) : r.chance(0.3) ? 0x7f : r.range(0x80, 0x9f))).join('')],
  [1, 'bom', () => '\ufeff'],
  [3, 'unassigned', (r) => U(r.pick(UNASSIGNED_ETC))],
  [8, 'dense', (r) => Array.from({ length: r.range(2, 12) }, () => r.pick(DENSE)).join('')],
  [4, 'any', (r) => Array.from({ length: r.range(1, 3) }, () => U(randomScalar(r))).join('')],
];
// --only restricts the mix to the named classes (same weights among them).
const GEN_USED = opts.only ? GEN.filter((g) => opts.only.split(',').includes(g[1])) : GEN;
if (GEN_USED.length === 0) {
  console.error(`--only: no such class; classes: ${GEN.map((g) => g[1]).join(',')}`);
  process.exit(2);
}
const GEN_TOTAL = GEN_USED.reduce((s, g) => s + g[0], 0);
function pickGen(rng) {
  let x = rng.int(GEN_TOTAL);
  for (const g of GEN_USED) { if (x < g[0]) return g; x -= g[0]; }
  return GEN_USED[0];
}

// One case: {bytes, text|null, classes}.
function makeCase(rng) {
  const classes = new Set();
  const n = rng.chance(0.1) ? rng.range(8, 24) : rng.range(1, 7);
  let s = '';
  for (let i = 0; i < n; i++) {
    const [, cls, fn] = pickGen(rng);
    let piece = fn(rng);
    classes.add(cls);
    if (rng.chance(0.012)) { // long run of one fragment
      piece = piece.repeat(rng.range(50, 400));
      classes.add('long_run');
    }
    s += piece;
  }
  let bytes = Buffer.from(s, 'utf8');
  if (rng.chance(0.03)) { // corrupt: invalid UTF-8 of every kind
    const bad = rng.pick([[0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0x81], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80],
      [0xed, 0xbf, 0xbf], [0xf0, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xfe], [0xff], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3], [0xe0, 0xa0]]);
    const at = rng.int(bytes.length + 1);
    bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(bad), bytes.subarray(at)]);
    classes.add('invalid_utf8');
  }
  const valid = utf8FirstInvalid(bytes) < 0;
  return { bytes, text: valid ? bytes.toString('utf8') : null, classes: [...classes] };
}

function generate(seed, count) {
  const rng = makeRng(seed);
  const out = [];
  for (let i = 0; i < count; i++) out.push(makeCase(rng));
  return out;
}

if (opts.print >= 0) {
  const c = generate(opts.seed, opts.print + 1)[opts.print];
  console.log(JSON.stringify({ index: opts.print, classes: c.classes, text: c.text, hex: hexOf(c.bytes) }));
  process.exit(0);
}
if (opts._.length !== 2) {
  console.error('usage: node tools/oracle/tok_random.mjs TINYLM TOK.slm [--count N] [--seed S] [--show N] [--shrink N] [--save-failures FILE] [--print I] [--only CLASS,...]');
  process.exit(2);
}
const [tinylm, slm] = opts._;

// ---------------------------------------------------------------------------
const oracle = await loadOracle();

// Expected results for a list of byte buffers.
async function expected(list, { slim = false } = {}) {
  const out = new Array(list.length);
  const texts = [], where = [];
  list.forEach((b, i) => {
    const bad = utf8FirstInvalid(b);
    if (bad >= 0) out[i] = { invalid: bad };
    else { texts.push(b.toString('utf8')); where.push(i); }
  });
  for (let k = 0; k < texts.length; k += opts.batch) {
    const part = texts.slice(k, k + opts.batch);
    const recs = await oracle.runBatch(part, { slim });
    const raws = await oracle.tok.decodeBatch(recs.map((r) => r.ids), false);
    recs.forEach((r, j) => { r.raw_hex = hexOf(Buffer.from(raws[j], 'utf8')); out[where[k + j]] = r; });
  }
  return out;
}

// tinylm's answers: encode everything, decode the oracle's ids (raw).
async function actual(list, exp) {
  const enc = await runTinylmJsonl(tinylm, 'encode', slm, list.map((b) => ({ hex: hexOf(b) })));
  const decIdx = [], decReq = [];
  exp.forEach((e, i) => { if (e.ids) { decIdx.push(i); decReq.push({ ids: e.ids, mode: 'raw' }); } });
  const dec = await runTinylmJsonl(tinylm, 'decode', slm, decReq);
  const raw = new Array(list.length).fill(null);
  decIdx.forEach((i, k) => { raw[i] = dec.results[k]; });
  return { enc: enc.results, raw, runs: [enc, dec] };
}

// The kind of mismatch between one expected record and tinylm's answers, or
// null when they agree.
function mismatch(e, got, raw) {
  if (e.invalid !== undefined) {
    return got.error === 'invalid_utf8' && got.offset === e.invalid ? null : 'invalid_utf8';
  }
  if (!Array.isArray(got.ids)) return 'encode_error';
  if (firstDiff(e.ids, got.ids) >= 0) return 'ids';
  if (!Array.isArray(got.offsets) || firstDiff(e.offsets, got.offsets, pairEq) >= 0) return 'offsets';
  if (!raw || raw.hex !== e.raw_hex) return 'decode_raw';
  return null;
}

// Delete code points (chunks, then single ones) while the same kind of
// mismatch persists. Each round tests all candidates with one tinylm run.
async function shrink(bytes, kind) {
  let cps = utf8FirstInvalid(bytes) < 0 ? [...bytes.toString('utf8')] : null;
  if (!cps) { // invalid input: shrink bytes instead
    cps = [...bytes].map((b) => Buffer.from([b]));
  }
  const join = (arr) => (typeof arr[0] === 'string' || arr.length === 0 ? Buffer.from(arr.join(''), 'utf8') : Buffer.concat(arr));
  let chunk = Math.max(1, Math.floor(cps.length / 2));
  let rounds = 0;
  while (rounds++ < 200) {
    const cands = [];
    for (let i = 0; i < cps.length; i += chunk) cands.push(cps.slice(0, i).concat(cps.slice(i + chunk)));
    if (cands.length === 0) break;
    const bufs = cands.map(join);
    const exp = await expected(bufs);
    const act = await actual(bufs, exp);
    const k = bufs.findIndex((_, i) => mismatch(exp[i], act.enc[i], act.raw[i]) === kind);
    if (k >= 0) { cps = cands[k]; chunk = Math.min(chunk, Math.max(1, Math.floor(cps.length / 2))); continue; }
    if (chunk === 1) break;
    chunk = Math.max(1, Math.floor(chunk / 2));
  }
  return join(cps);
}

function describe(bytes, e, got, raw) {
  const lines = [`    input: "${showBytes(bytes, 160)}"  hex ${bytes.length <= 64 ? hexOf(bytes) : hexOf(bytes.subarray(0, 64)) + '…'}`];
  if (utf8FirstInvalid(bytes) < 0) lines.push(`    as JSON: ${JSON.stringify(bytes.toString('utf8')).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))}`);
  if (e.invalid !== undefined) {
    lines.push(`    expected {"error":"invalid_utf8","offset":${e.invalid}}, got ${JSON.stringify(got).slice(0, 160)}`);
    return lines.join('\n');
  }
  const tok = (ids, toks) => ids.map((id, i) => `${id}:${JSON.stringify(showBytes(tokenBytes(toks ? toks[i] : ''), 24))}`);
  lines.push(`    pre-tokens (oracle): ${JSON.stringify(oracle.preTokenize(oracle.normalize(bytes.toString('utf8'))).map((p) => showBytes(tokenBytes(p[0]), 40)))}`);
  lines.push(`    expected ids ${JSON.stringify(e.ids)} ${tok(e.ids, e.tokens).join(' ').slice(0, 300)}`);
  lines.push(`    expected offsets ${JSON.stringify(e.offsets)} (code points ${JSON.stringify(e.offsets_cp)})`);
  lines.push(`    got ${JSON.stringify(got).slice(0, 400)}`);
  if (raw && raw.hex !== e.raw_hex) lines.push(`    raw decode: expected ${e.raw_hex.slice(0, 120)}, got ${JSON.stringify(raw).slice(0, 160)}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------
// The main run streams: blocks of --batch cases go through the oracle and
// into one long-running tinylm encode process and one decode process; their
// answers are matched to the pending cases in order as they arrive. Only
// failures are kept, so memory stays bounded for any --count (as long as
// tinylm answers while it reads; if it holds every answer until its input
// ends, the pending cases simply accumulate).
const t0 = Date.now();
let tOracle = 0;
const rngMain = makeRng(opts.seed);
const failures = [];
const byKind = {}, byClass = {}, classTotals = {};
let totalBytes = 0, done = 0;
const encPending = [], decPending = [];
let extra = { encode: 0, decode: 0 };
function finish(c) {
  done++;
  totalBytes += c.bytes.length;
  for (const cl of c.classes) classTotals[cl] = (classTotals[cl] || 0) + 1;
  const kind = mismatch(c.exp, c.got, c.raw);
  if (!kind) return;
  failures.push({ i: c.i, kind, bytes: c.bytes, classes: c.classes });
  byKind[kind] = (byKind[kind] || 0) + 1;
  for (const cl of c.classes) byClass[cl] = (byClass[cl] || 0) + 1;
}
const encProc = new JsonlProc(tinylm, 'encode', slm, (ans) => {
  const c = encPending.shift();
  if (!c) { extra.encode++; return; }
  c.got = ans;
  if (!c.exp.ids || c.raw) finish(c);
});
const decProc = new JsonlProc(tinylm, 'decode', slm, (ans) => {
  const c = decPending.shift();
  if (!c) { extra.decode++; return; }
  c.raw = ans;
  if (c.got) finish(c);
});
for (let base = 0; base < opts.count; base += opts.batch) {
  const block = [];
  for (let i = base; i < Math.min(opts.count, base + opts.batch); i++) {
    const c = makeCase(rngMain);
    c.i = i;
    block.push(c);
  }
  const ta = Date.now();
  const exp = await expected(block.map((c) => c.bytes), { slim: true });
  tOracle += Date.now() - ta;
  block.forEach((c, k) => { c.exp = exp[k]; encPending.push(c); if (c.exp.ids) decPending.push(c); });
  for (const c of block) {
    await encProc.send({ hex: hexOf(c.bytes) });
    if (c.exp.ids) await decProc.send({ ids: c.exp.ids, mode: 'raw' });
  }
}
const runs = [await encProc.end(), await decProc.end()];
// Cases the tool never answered.
for (const c of decPending.splice(0)) c.raw = { error: 'missing_line' };
for (const c of encPending.splice(0)) { c.got = { error: 'missing_line' }; if (!c.raw && c.exp.ids) c.raw = { error: 'missing_line' }; finish(c); }
failures.sort((a, b) => a.i - b.i);
const t2 = Date.now();
// A run that exits non-zero or by a signal failed even when every answer was
// right (a leak report at exit changes the status), and so did one that
// answered more lines than it was asked: one failure each.
let runFailures = 0;
for (const [what, r] of [['encode', runs[0]], ['decode', runs[1]]]) {
  if (r.code !== 0 || r.signal || extra[what]) {
    console.log(`FAIL tinylm ${what} --jsonl exited ${r.signal ?? r.code}${extra[what] ? `, ${extra[what]} extra output lines` : ''}`);
    if (r.stderr) console.log(r.stderr.split('\n').slice(0, 5).map((l) => `  | ${l}`).join('\n'));
    runFailures++;
  }
}
if (done !== opts.count) console.log(`note: ${opts.count - done} cases never completed`);

console.log(`tok_random: seed ${opts.seed}${opts.only ? ` (only ${opts.only})` : ''}, ${opts.count} strings (${totalBytes} bytes); ` +
  `${((t2 - t0) / 1000).toFixed(1)}s (oracle ${(tOracle / 1000).toFixed(1)}s)`);
if (failures.length) {
  console.log(`mismatches by kind: ${Object.entries(byKind).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log('mismatches by class present in the string (failed/generated): ' +
    Object.entries(byClass).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}/${classTotals[k]}`).join(', '));
  const saved = [];
  for (const [n, f] of failures.slice(0, opts.show).entries()) {
    const c = f;
    console.log(`FAIL #${f.i} (${f.kind}; classes ${c.classes.join(',')}; reproduce: --seed ${opts.seed} --print ${f.i})`);
    let bytes = c.bytes;
    if (n < opts.shrink) {
      bytes = await shrink(c.bytes, f.kind);
      console.log(`  minimal (${bytes.length} of ${c.bytes.length} bytes):`);
    } else console.log('  not reduced:');
    const [e1] = await expected([bytes]);
    const a1 = await actual([bytes], [e1]);
    console.log(describe(bytes, e1, a1.enc[0], a1.raw[0]));
    saved.push(utf8FirstInvalid(bytes) < 0
      ? { name: `random/s${opts.seed}_i${f.i}`, text: bytes.toString('utf8') }
      : { name: `random/s${opts.seed}_i${f.i}`, hex: hexOf(bytes), expect_invalid_utf8_offset: utf8FirstInvalid(bytes) });
  }
  if (opts.save_failures) {
    writeFileSync(opts.save_failures, saved.map((s) => JSON.stringify(s)).join('\n') + '\n');
    console.log(`saved ${saved.length} reduced cases to ${opts.save_failures} (corpus format)`);
  }
}
console.log(`${opts.count - failures.length} passed, ${failures.length + runFailures} failed`);
process.exit(failures.length + runFailures ? 1 : 0);
