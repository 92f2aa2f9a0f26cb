#!/usr/bin/env node
// A stand-in for `tinylm` that answers the tokenizer CLI contract with the
// oracle itself, so the checkers can be tested without the C tokenizer
// (HF against HF must give zero mismatches). The MODEL argument is ignored.
//
//   tok_hf_shim.mjs encode MODEL --jsonl        {"hex":..} → {"ids","offsets"} | {"error","offset"}
//   tok_hf_shim.mjs decode MODEL --jsonl        {"ids","mode"} → {"hex"}
//   tok_hf_shim.mjs encode MODEL --file F --bench
//
// TOK_SHIM_MUTATE=1 perturbs answers that depend on the input's content (for
// testing the checkers' reports and the shrinker): a combining mark bumps the
// last id, a Hangul jamo widens the second offset, an invalid input moves the
// error offset, a raw decode containing a tab gains a byte.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { utf8FirstInvalid } from './tok_lib.mjs';
import { loadOracle } from './tok_oracle.mjs';

const [sub, , ...rest] = process.argv.slice(2);
const oracle = await loadOracle();
const mutate = process.env.TOK_SHIM_MUTATE === '1';
let n = 0;
// One answer per request, written as soon as it is known.
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

if (sub === 'encode' && rest.includes('--bench')) {
  const f = rest[rest.indexOf('--file') + 1];
  const bytes = readFileSync(f);
  const text = bytes.toString('utf8');
  const t0 = process.hrtime.bigint();
  const e = await oracle.tok.encode(text, null, { addSpecialTokens: true });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`tokens ${e.getIds().length} bytes ${bytes.length} seconds ${s.toFixed(6)}`);
  process.exit(0);
}
if (!rest.includes('--jsonl')) { console.error('shim: only --jsonl and --bench'); process.exit(2); }
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line === '') continue;
  const req = JSON.parse(line);
  n++;
  if (sub === 'encode') {
    const bytes = Buffer.from(req.hex, 'hex');
    const bad = utf8FirstInvalid(bytes);
    if (bad >= 0) { emit({ error: 'invalid_utf8', offset: bad + (mutate && bad > 0 ? 1 : 0) }); continue; }
    const text = bytes.toString('utf8');
    const r = await oracle.run(text, { decode: false });
    if (mutate && /\p{M}/u.test(text) && r.ids.length) r.ids[r.ids.length - 1] += 1;
    if (mutate && /[\u1100-\u11ff]/u.test(text) && r.offsets.length > 1) r.offsets[1] = [r.offsets[1][0], r.offsets[1][1] + 1];
    emit({ ids: r.ids, offsets: r.offsets });
  } else if (sub === 'decode') {
    const s = await oracle.decode(req.ids, req.mode === 'visible');
    let hex = Buffer.from(s, 'utf8').toString('hex');
    if (mutate && req.mode === 'raw' && s.includes('\t')) hex += '00';
    emit({ hex });
  } else { console.error(`shim: unknown command ${sub}`); process.exit(2); }
}
