#!/usr/bin/env node
// Tokenizer throughput: tinylm beside the oracle (Hugging Face `tokenizers`
// through @anush008/tokenizers) on the same seeded mixed-script text, in one
// run (issue 3, item 7). `bench/tokenizer.sh` (make bench) calls it.
//
//   node tools/oracle/tok_bench.mjs [TINYLM TOK.slm] [--mb 12] [--seed 1]
//        [--repeat 3] [--input build/bench/tok_input.txt] [--no-whole] [--no-verify]
//
// The input: ≥ --mb MB (10^6 bytes) of paragraphs of prose in several
// scripts (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Han,
// kana, Hangul), code, number tables, emoji and a little ChatML. Every
// paragraph ends with "\n" and the next starts with a letter, so encoding the
// paragraphs one by one gives exactly the tokens of encoding the whole file.
//
// Figures (MB/s = 10^6 input bytes per second; tokens/s):
//   tinylm encode --file --bench   whole file, one call, single thread (its
//                                  own timing line: tokens N bytes B seconds S)
//   HF encodeBatch(paragraphs)     1 thread (RAYON_NUM_THREADS=1,
//                                  RAYON_RS_NUM_CPUS=1, TOKENIZERS_PARALLELISM=false)
//   HF encodeBatch(paragraphs)     default: rayon over every CPU
//   HF encode(whole file)          one call (single-threaded by nature; slow
//                                  and memory-hungry in HF; --no-whole skips)
// Unless --no-verify, tinylm's ids for the whole file (`encode --file --json`)
// are also compared with the oracle's, id by id, so the figures are known to
// be for the same work.
// HF figures include the binding's JS↔Rust string and result conversion;
// each is the best of --repeat runs (the whole-file one: one run) in a fresh
// child process so the thread settings take effect.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ROOT, parseArgs, sha256 } from './tok_lib.mjs';

const SELF = fileURLToPath(import.meta.url);
const opts = parseArgs(process.argv.slice(2), {
  mb: 12, seed: 1, repeat: 3, input: 'build/bench/tok_input.txt', no_whole: false, no_verify: false, worker: '',
});

// ---------------------------------------------------------------------------
// Worker mode: one HF measurement, printed as JSON.
if (opts.worker) {
  const { loadOracle } = await import('./tok_oracle.mjs');
  const oracle = await loadOracle();
  const text = readFileSync(opts.input, 'utf8');
  const lens = JSON.parse(readFileSync(opts.input + '.paragraphs.json', 'utf8'));
  const paras = [];
  let at = 0;
  for (const n of lens) { paras.push(text.slice(at, at + n)); at += n; }
  const runs = opts.worker === 'whole' ? 1 : opts.repeat;
  let best = Infinity, tokens = 0;
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    let n = 0;
    if (opts.worker === 'whole') {
      const e = await oracle.tok.encode(text, null, { addSpecialTokens: true });
      n = e.getLength();
    } else {
      const es = await oracle.tok.encodeBatch(paras, { addSpecialTokens: true });
      for (const e of es) n += e.getLength();
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.min(best, s);
    tokens = n;
  }
  console.log(JSON.stringify({ tokens, seconds: best, rss_mb: Math.round(process.memoryUsage().rss / 1e6) }));
  process.exit(0);
}

// ---------------------------------------------------------------------------
// The text.
function makeRng(seed) { // sfc32 via splitmix32, as in tok_random.mjs
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
    d = (d + 1) >>> 0; a = b ^ (b >>> 9); b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0; c = (c + t) >>> 0;
    return t >>> 0;
  };
  const f = () => next() / 4294967296;
  return {
    f, int: (n) => Math.floor(f() * n), range: (lo, hi) => lo + Math.floor(f() * (hi - lo + 1)),
    chance: (p) => f() < p, pick: (a_) => a_[Math.floor(f() * a_.length)],
    zipf: (arr) => arr[Math.min(arr.length - 1, Math.floor(Math.exp(f() * Math.log(arr.length + 1))) - 1)],
  };
}
const chars = (s) => [...s];

// A Zipf-ish vocabulary per language: real frequent words first, then words
// built from the language's syllables (so the text has many distinct words).
function vocab(rng, common, syllables, n, maxSyl = 4) {
  const out = [...common];
  const seen = new Set(out);
  while (out.length < n) {
    let w = '';
    const k = rng.range(1, maxSyl);
    for (let i = 0; i < k; i++) w += rng.pick(syllables);
    if (!seen.has(w)) { seen.add(w); out.push(w); }
  }
  return out;
}
function generate(seed, minBytes) {
  const rng = makeRng(seed);
  const L = {
    en: vocab(rng, 'the of and to a in is you that it he was for on are as with his they I at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part'.split(' '),
      ['ba', 'con', 'ter', 'pro', 'ing', 'tion', 'ex', 'ment', 'al', 'er', 'ly', 'com', 'de', 'pre', 'ous', 'ive', 'st', 'ar', 'en', 'is', 'ate', 'ple', 'vel', 'cu', 'lar'], 6000),
    de: vocab(rng, 'der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an werden aus er hat daß sie nach wird bei über Straße Größe müssen können'.split(' '),
      ['sch', 'ei', 'ung', 'ge', 'be', 'ver', 'ä', 'ö', 'ü', 'ß', 'lich', 'keit', 'en', 'er', 'st', 'ch', 'au'], 3000),
    fr: vocab(rng, 'le de un être et à il avoir ne je son que se qui ce dans en du elle au pour pas où très été déjà français'.split(' '),
      ['é', 'è', 'ê', 'ç', 'tion', 'ment', 'eau', 'ou', 'oi', 'que', 'ai', 'on', 'an', 'ré', 'ière', 'à'], 3000),
    es: vocab(rng, 'el la de que y a en un ser se no haber por con su para como estar tener le lo todo pero más año niño señor también'.split(' '),
      ['ción', 'ñ', 'á', 'í', 'ó', 'ú', 'ado', 'mente', 'es', 'ar', 'ir', 'ue', 'ie', 'll'], 3000),
    ru: vocab(rng, 'и в не на я быть он с что а по это она этот к но они мы как из у который то за свой весь год от так о для ты же все тот мочь вы человек такой'.split(' '),
      ['ка', 'ло', 'ни', 'ст', 'ов', 'ен', 'ра', 'то', 'ль', 'ть', 'ри', 'щ', 'ж', 'ы', 'ю', 'ё', 'пре', 'ско'], 4000),
    el: vocab(rng, 'και το να η ο του της με που τα για δεν σε στο από ένα θα είναι'.split(' '),
      ['κα', 'λο', 'ου', 'ει', 'ση', 'ται', 'μέ', 'νο', 'ρά', 'στ', 'ία', 'ός', 'ής'], 2000),
    ar: vocab(rng, 'في من على أن إلى عن مع هذا هذه كان التي الذي ما لا قد كل بين'.split(' '),
      ['ال', 'كت', 'ب', 'م', 'ة', 'ين', 'ون', 'ات', 'س', 'ر', 'ح', 'ع', 'ق', 'و', 'ي'], 3000),
    he: vocab(rng, 'של את על לא זה הוא היא עם כי גם אני מה'.split(' '),
      ['ה', 'ש', 'ל', 'ו', 'ם', 'ת', 'ר', 'מ', 'כ', 'ב', 'נ', 'י'], 2000),
    hi: vocab(rng, 'के है में की और से को का एक यह भी पर था हैं नहीं'.split(' '),
      ['क', 'र', 'ना', 'ता', 'की', 'से', 'स्', 'प्र', 'ने', 'मा', 'ल', 'व', 'ह', 'ति', 'ों'], 3000),
    th: vocab(rng, 'ที่ และ ใน การ เป็น ของ มี ได้ ไม่ ให้'.split(' '),
      ['ก', 'า', 'ร', 'น', 'ม', 'ส', 'ว', 'ด', 'ง', 'ย', 'ค', 'ท', 'เ', 'แ', 'ั', 'ี', 'ุ', '่', '้'], 2000),
  };
  const HAN = chars('的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴注');
  const KANA = chars('あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだでどばびぶべぼアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンー');
  const HANGUL = chars('가나다라마바사아자차카타파하고노도로모보소오조초코토포호구누두루무부수우주추쿠투푸후그느드르므브스으즈츠크트프흐기니디리미비시이지치키티피히한국어는을를에서의와과하고있다였습니다');
  const EMOJI = chars('😀😂🥲😍🤔👍🙏🔥✨🎉❤️🚀🌍📈✅');
  const sentence = (v, min, max) => {
    const n = rng.range(min, max);
    const w = [];
    for (let i = 0; i < n; i++) w.push(rng.zipf(v));
    let s = w.join(' ');
    if (rng.chance(0.15)) s += ', ' + rng.zipf(v) + ' ' + rng.zipf(v);
    if (rng.chance(0.05)) s += ' ' + rng.pick(EMOJI);
    if (rng.chance(0.08)) s += ' ' + rng.range(1, 99999);
    return s;
  };
  const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
  const prose = (lang) => {
    const v = L[lang];
    const n = rng.range(2, 8);
    const out = [];
    for (let i = 0; i < n; i++) {
      let s = cap(sentence(v, 4, 18));
      if (lang === 'en' && rng.chance(0.2)) s += rng.pick([" it's", " don't", " we've", " they're", " I'm", " you'll"]);
      out.push(s + rng.pick(['.', '.', '.', '!', '?', ';', ':']));
    }
    return out.join(' ');
  };
  const cjk = (alpha, punct, spaces) => {
    let s = '';
    const n = rng.range(30, 200);
    for (let i = 0; i < n; i++) {
      s += rng.zipf(alpha);
      if (rng.chance(0.06)) s += rng.pick(punct);
      if (spaces && rng.chance(0.25)) s += ' ';
    }
    return s.replace(/^[\s，。、,.]+/u, '') + rng.pick(punct.slice(0, 2));
  };
  const ident = () => rng.zipf(L.en).replace(/[^a-z]/g, '') + (rng.chance(0.4) ? '_' + rng.zipf(L.en).replace(/[^a-z]/g, '') : '') || 'x';
  const code = () => {
    const lines = [];
    if (rng.chance(0.5)) {
      lines.push(`def ${ident()}(${ident()}, ${ident()}=None):`);
      const n = rng.range(2, 12);
      for (let i = 0; i < n; i++) {
        const ind = '    '.repeat(rng.range(1, 3));
        lines.push(ind + rng.pick([`${ident()} = ${ident()}(${ident()}) + ${rng.range(0, 1000)}`,
          `if ${ident()} is not None and ${ident()} > ${rng.range(0, 99)}:`, `return ${ident()}`,
          `for ${ident()} in range(len(${ident()})):`, `print(f"{${ident()}!r}: {${ident()}:.3f}")`,
          `# ${sentence(L.en, 3, 9)}`, `${ident()}.append("${rng.zipf(L.en)}")`]));
      }
    } else {
      lines.push(`static int ${ident()}(const char *${ident()}, size_t ${ident()}) {`);
      const n = rng.range(2, 12);
      for (let i = 0; i < n; i++) {
        const ind = '\t'.repeat(rng.range(1, 3));
        lines.push(ind + rng.pick([`${ident()} += ${ident()}[${rng.range(0, 64)}] * 0x${rng.range(0, 65535).toString(16)};`,
          `if (${ident()} == NULL || ${ident()} >= ${rng.range(1, 4096)}) return -1;`, `/* ${sentence(L.en, 3, 9)} */`,
          `for (size_t i = 0; i < ${ident()}; i++) { ${ident()}++; }`, `printf("%s: %d\\n", ${ident()}, ${ident()});`]));
      }
      lines.push('}');
    }
    return lines.join('\n');
  };
  const numbers = () => {
    const rows = ['id,date,value,ratio'];
    const n = rng.range(3, 20);
    for (let i = 0; i < n; i++) {
      rows.push(`${rng.range(1, 999999)},20${rng.range(10, 29)}-${String(rng.range(1, 12)).padStart(2, '0')}-${String(rng.range(1, 28)).padStart(2, '0')},` +
        `${(rng.f() * 1e6).toFixed(2)},${(rng.f() * 2 - 1).toFixed(5)}`);
    }
    return 'Table ' + rng.range(1, 99) + '\n' + rows.join('\n');
  };
  const kinds = [
    [28, () => prose('en')], [4, () => prose('de')], [4, () => prose('fr')], [4, () => prose('es')],
    [8, () => prose('ru')], [3, () => prose('el')], [5, () => prose('ar')], [2, () => prose('he')],
    [5, () => prose('hi')], [2, () => cjk(L.th, [' ', ' '], false)],
    [8, () => cjk(HAN, ['。', '，', '、', '：'], false)], [4, () => cjk(KANA.concat(HAN), ['。', '、'], false)],
    [4, () => cjk(HANGUL, ['.', ','], true)],
    [12, code], [4, numbers],
    [1, () => `<|im_start|>user\n${prose('en')}<|im_end|>\n<|im_start|>assistant\n<think>\n${prose('en')}\n</think>\n\n${prose('en')}<|im_end|>`],
  ];
  const total = kinds.reduce((s, k) => s + k[0], 0);
  const paras = [];
  let bytes = 0;
  while (bytes < minBytes) {
    let x = rng.int(total), fn = kinds[0][1];
    for (const [w, f] of kinds) { if (x < w) { fn = f; break; } x -= w; }
    let p = fn().replace(/^[^\p{L}<]+/u, '');
    if (p === '' || !/^[\p{L}<]/u.test(p)) continue;
    p += rng.chance(0.7) ? '\n\n' : '\n';
    paras.push(p);
    bytes += Buffer.byteLength(p);
  }
  return paras;
}

// ---------------------------------------------------------------------------
const inputPath = join(ROOT, opts.input);
const minBytes = Math.round(opts.mb * 1e6);
const metaPath = inputPath + '.paragraphs.json';
let stamp = `seed ${opts.seed} mb ${opts.mb} v1`;
if (!existsSync(inputPath) || !existsSync(metaPath) || !existsSync(inputPath + '.stamp') ||
    readFileSync(inputPath + '.stamp', 'utf8') !== stamp) {
  const paras = generate(opts.seed, minBytes);
  mkdirSync(dirname(inputPath), { recursive: true });
  writeFileSync(inputPath, paras.join(''));
  writeFileSync(metaPath, JSON.stringify(paras.map((p) => p.length)));
  writeFileSync(inputPath + '.stamp', stamp);
}
const input = readFileSync(inputPath);
const nParas = JSON.parse(readFileSync(metaPath, 'utf8')).length;
console.log(`input: ${opts.input}: ${(input.length / 1e6).toFixed(2)} MB, ${nParas} paragraphs, seed ${opts.seed}, sha256 ${sha256(input).slice(0, 16)}…`);
console.log(`machine: ${cpus().length} CPUs, ${cpus()[0]?.model ?? '?'}; node ${process.version}`);

const rows = [];
function row(name, threads, tokens, seconds, note = '') {
  rows.push({ name, threads, tokens, seconds, note });
}
function hfWorker(mode, env) {
  const r = spawnSync(process.execPath, [SELF, '--worker', mode, '--input', inputPath, '--repeat', String(opts.repeat)],
    { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) { console.log(`HF ${mode}: failed: ${(r.stderr || '').split('\n').slice(-3).join(' | ')}`); return null; }
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

// tinylm
const [tinylm, slm] = opts._;
let tinylmTokens = null;
if (tinylm) {
  let best = null;
  for (let r = 0; r < opts.repeat; r++) {
    const t0 = process.hrtime.bigint();
    const p = spawnSync(tinylm, ['encode', slm, '--file', inputPath, '--bench'], { encoding: 'utf8', maxBuffer: 1 << 26 });
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const m = /tokens (\d+) bytes (\d+) seconds ([0-9.eE+-]+)/.exec(p.stdout || '');
    if (p.status !== 0 || !m) {
      console.log(`tinylm: failed (exit ${p.status}): ${(p.stderr || p.stdout || '').split('\n').slice(0, 3).join(' | ')}`);
      break;
    }
    if (Number(m[2]) !== input.length) console.log(`tinylm: reports ${m[2]} bytes, the file has ${input.length}`);
    const rec = { tokens: Number(m[1]), seconds: Number(m[3]), wall };
    if (!best || rec.seconds < best.seconds) best = rec;
  }
  if (best) {
    tinylmTokens = best.tokens;
    row('tinylm encode --file (whole file)', 1, best.tokens, best.seconds, `process wall ${best.wall.toFixed(2)} s`);
  }
}
const one = { RAYON_NUM_THREADS: '1', RAYON_RS_NUM_CPUS: '1', TOKENIZERS_PARALLELISM: 'false' };
const b1 = hfWorker('batch', one);
if (b1) row('HF encodeBatch(paragraphs)', 1, b1.tokens, b1.seconds, `rss ${b1.rss_mb} MB`);
const bn = hfWorker('batch', {});
if (bn) row('HF encodeBatch(paragraphs)', cpus().length, bn.tokens, bn.seconds, `rss ${bn.rss_mb} MB`);
let wh = null;
if (!opts.no_whole) {
  wh = hfWorker('whole', one);
  if (wh) row('HF encode(whole file)', 1, wh.tokens, wh.seconds, `rss ${wh.rss_mb} MB, one run`);
}

console.log('');
console.log(`${'what'.padEnd(36)} ${'threads'.padStart(7)} ${'tokens'.padStart(10)} ${'seconds'.padStart(9)} ${'MB/s'.padStart(8)} ${'Mtok/s'.padStart(8)}  note`);
for (const r of rows) {
  console.log(`${r.name.padEnd(36)} ${String(r.threads).padStart(7)} ${String(r.tokens).padStart(10)} ${r.seconds.toFixed(3).padStart(9)} ` +
    `${(input.length / r.seconds / 1e6).toFixed(2).padStart(8)} ${(r.tokens / r.seconds / 1e6).toFixed(3).padStart(8)}  ${r.note}`);
}
const counts = new Set(rows.map((r) => r.tokens));
console.log(counts.size <= 1 ? `token counts agree (${[...counts][0] ?? '-'})`
  : `note: token counts differ: ${rows.map((r) => `${r.name} (${r.threads} thr) ${r.tokens}`).join('; ')}`);
const tl = rows.find((r) => r.name.startsWith('tinylm'));
if (tl && b1) {
  console.log(`tinylm single-threaded vs HF single-threaded (batch of paragraphs): ${(b1.seconds / tl.seconds).toFixed(2)}x` +
    (bn ? `; vs HF on ${cpus().length} threads: ${(bn.seconds / tl.seconds).toFixed(2)}x` : '') +
    (wh ? `; vs HF whole-file call: ${(wh.seconds / tl.seconds).toFixed(2)}x` : ''));
}
if (tinylm && !opts.no_verify) {
  const { loadOracle } = await import('./tok_oracle.mjs');
  const oracle = await loadOracle();
  const text = input.toString('utf8');
  const lens = JSON.parse(readFileSync(metaPath, 'utf8'));
  const paras = [];
  let at = 0;
  for (const n of lens) { paras.push(text.slice(at, at + n)); at += n; }
  const encs = await oracle.tok.encodeBatch(paras, { addSpecialTokens: true });
  const p = spawnSync(tinylm, ['encode', slm, '--file', inputPath, '--json'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  let got = null;
  try { got = JSON.parse(p.stdout).ids; } catch { /* reported below */ }
  if (!Array.isArray(got)) {
    console.log(`verify: tinylm encode --file --json gave no ids (exit ${p.status}): ${(p.stderr || '').split('\n')[0]}`);
  } else {
    let k = 0, bad = -1, para = -1, total = 0;
    for (let i = 0; i < encs.length && bad < 0; i++) {
      const ids = encs[i].getIds();
      total += ids.length;
      for (let j = 0; j < ids.length; j++, k++) if (got[k] !== ids[j]) { bad = k; para = i; break; }
    }
    if (bad < 0 && got.length !== total) bad = Math.min(got.length, total);
    if (bad < 0) console.log(`verify: tinylm's ids equal the oracle's for the whole input (${total} tokens)`);
    else {
      console.log(`verify: MISMATCH at token ${bad} (tinylm ${got.length} tokens, oracle ${total})` +
        (para >= 0 ? `, in paragraph ${para}: ${JSON.stringify(paras[para].slice(0, 200))}` : ''));
    }
  }
}
if (b1 && bn) {
  console.log(`HF threads: default ${(b1.seconds / bn.seconds).toFixed(2)}x the single-threaded speed ` +
    `(the binding's encodeBatch uses rayon; a single encode() call is single-threaded)`);
}
