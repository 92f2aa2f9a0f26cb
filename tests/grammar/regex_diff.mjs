// The regex reader against ECMAScript's own RegExp (node, u flag), the
// oracle: for each pattern, strings built from its characters and a few
// others (deterministic pseudo-random, plus fixed ones; none that NFC
// changes, so the tokens spell each text) go through the real tokenizer
// and the mask:
//   tinylm grammar match --regex P                     whole match:
//       RegExp("^(?:" + P + ")$", "u").test(s)
//   tinylm grammar match --json-schema {"type": "string", "pattern": P}
//       on JSON.stringify(s), JSON Schema's search: RegExp(P, "u").test(s)
// and every verdict must agree. One process per pattern and mode. The
// patterns of REFUSED are ones the reader refuses on purpose
// (docs/structured.md): each must be refused with that message.
//
// usage: node tests/grammar/regex_diff.mjs TINYLM TOKENIZER.slm WORKDIR [STRINGS_PER_PATTERN]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const [tinylm, tokenizer, work, perArg] = process.argv.slice(2);
if (!tinylm || !tokenizer || !work) {
  console.error('usage: regex_diff.mjs TINYLM TOKENIZER.slm WORKDIR [STRINGS_PER_PATTERN]');
  process.exit(2);
}
const PER = Number(perArg || 300);
fs.mkdirSync(work, { recursive: true });

const PATTERNS = [
  'abc', 'a|bc|', 'a*b+c?', 'a{2}', 'a{1,3}b{2,}', '(ab)*', '(a|b)*c', '(?:x|yz)+',
  '[a-c]+', '[^a-c]', '[^\\n]*', '.', '.*a.', '\\d+', '\\D\\w\\W', '\\s*x\\S',
  '[\\d\\s]+', '[\\w-]*', '[a\\-z]', '[-a]|[b-]', '\\x41|\\u00e9|\\u{1F600}',
  '\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\^\\$\\\\', '^a', 'b$', '^ab$', '^a|b$|c',
  '(a?b?){2}', 'é+[^é]?', 'a{0}b', '(a|b)?c{1,2}',
  '[\\u{10000}-\\u{10FFFF}]', '\\t\\n\\r\\f\\v', '[\\b]', '\\cJ', '(?<n>a)b',
  'a+?b*?c??', '^\\d{3}-\\d{4}$', '^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$',
  '^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$', '^[^"\\\\]*$', '"', '\\\\', '',
];
// Unbounded repetitions of a group that can match the empty text.
const REFUSED = ['(a?)*', '(a*)+b', '(|a)+', '(a|)*c|d', '()*x'];
const REFUSAL = /unsupported_feature: regex: an unbounded quantifier on a group that can match the empty text/;
const EXTRA = ['a', 'b', 'c', 'x', '1', '9', '-', ' ', '\n', '\t', '"', '\\', 'é', '😀', '\u2028', '\r', '_', '(', '.'];

// xorshift32: the same strings every run
let seed = 0x9e3779b9;
function rnd(n) {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}

function strings(pattern) {
  const alphabet = [...new Set([...pattern.replace(/[\\^$.*+?()[\]{}|]/g, ''), ...EXTRA])];
  const out = new Set(['', 'a', 'ab', 'abc', 'aab', 'x', '123-4567', 'é', '😀', 'a\nb', 'ab"c']);
  while (out.size < PER) {
    let s = '';
    for (let n = rnd(8); n > 0; n--) s += alphabet[rnd(alphabet.length)];
    out.add(s);
  }
  return [...out];
}

function match(spec, texts) {
  const r = spawnSync(tinylm, ['grammar', 'match', ...spec, '--tokenizer', tokenizer], {
    input: texts.map((text) => JSON.stringify({ text }) + '\n').join(''),
    encoding: 'utf8', maxBuffer: 1 << 26,
  });
  if (r.status !== 0) return { error: `${r.stdout} ${r.stderr}`.trim() };
  return { out: r.stdout.trim().split('\n').map((l) => JSON.parse(l)) };
}

let pass = 0, fail = 0;
for (const p of REFUSED) {
  const r = match(['--regex', p], ['']);
  if (r.error && REFUSAL.test(r.error)) pass++;
  else {
    fail++;
    console.log(`FAIL ${JSON.stringify(p)}: not refused as documented: ${r.error ?? 'compiled'}`);
  }
}
for (const p of PATTERNS) {
  const ss = strings(p);
  const whole = new RegExp(`^(?:${p})$`, 'u'), search = new RegExp(p, 'u');
  const schemaFile = path.join(work, 'pattern.json');
  fs.writeFileSync(schemaFile, JSON.stringify({ type: 'string', pattern: p }));
  const runs = [
    ['whole', match(['--regex', p], ss), (s) => whole.test(s)],
    ['search', match(['--json-schema', schemaFile], ss.map((s) => JSON.stringify(s))), (s) => search.test(s)],
  ];
  for (const [mode, r, oracle] of runs) {
    if (r.error) {
      fail++;
      console.log(`FAIL ${mode} ${JSON.stringify(p)}: ${r.error}`);
      continue;
    }
    ss.forEach((s, i) => {
      if (r.out[i].complete === oracle(s)) pass++;
      else {
        fail++;
        console.log(`FAIL ${mode} ${JSON.stringify(p)} on ${JSON.stringify(s)}: ` +
          `tinylm ${r.out[i].complete}, RegExp ${oracle(s)}`);
      }
    });
  }
}
console.log(`${PATTERNS.length} patterns, ${PER} strings each, two modes; ${REFUSED.length} refused`);
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail === 0 ? 0 : 1);
