// `tinylm serve`'s sampling fields end to end (docs/server.md, Sampling),
// driven by the official openai npm client on the demo model
// (docs/demo-model.md: trained on arithmetic, so its free text at a high
// temperature is varied junk, and its greedy continuations of a list of
// sums repeat tokens, which the penalties act on):
//   node tests/serve/sampling_test.mjs TINYLM WORKDIR
//
// Checked: an absent seed draws a fresh one (two requests at temperature
// 1.5 differ; each returns its seed in tinylm.choices[i].seed, below 2^53,
// choice i at seed + i) and sending a returned seed back reproduces the
// reply byte for byte; greedy replies do not depend on it; frequency and
// presence penalties and repeat_penalty alone (the 64-id default window)
// change a greedy reply that repeats, repeat_last_n 0 turns the window off;
// a positive logit_bias makes its token appear, exactly -100 bans it (the
// penalised reply is the same alone, batched and after prefix reuse);
// out-of-range values are 400 naming their field. The sampler's arithmetic
// itself is checked against the Python oracle (tools/oracle/sampler_random.py).
//
// Planted defects this suite catches (each checked by hand once):
//   the seed left 0 when absent          "two seedless requests differ"
//   repeat_last_n's default left 0       "repeat_penalty alone changes ..."
//   logit_bias positive values dropped   "a positive logit_bias ... appears"
import { mkdirSync, rmSync } from 'node:fs';
import OpenAI from 'openai';
import { check, demoModel, post, runSuite, short, startServer, stopServer, suiteArgs } from '../support/serve_harness.mjs';

const { WORK } = suiteArgs('sampling_test.mjs');

let server = null; // the suite's one server

async function refusal(f) {
  try { await f(); } catch (e) { return e; }
  return null;
}
const seedOf = (r, i = 0) => r.tinylm?.choices?.[i]?.seed;

// Fresh seeds, and a returned seed reproducing its reply.
async function seeds(client) {
  const body = { model: 'demo', prompt: 'Once upon a time', temperature: 1.5, max_tokens: 16 };
  const a = await client.completions.create(body);
  const b = await client.completions.create(body);
  const sa = seedOf(a), sb = seedOf(b);
  check('a seedless request returns its seed (an integer below 2^53)',
    Number.isSafeInteger(sa) && sa >= 0 && Number.isSafeInteger(sb), short(a.tinylm));
  check('two seedless requests draw different seeds', sa !== sb, `${sa} ${sb}`);
  check('two seedless requests at temperature 1.5 differ', a.choices[0].text !== b.choices[0].text,
    short([a.choices[0].text, b.choices[0].text]));
  const again = await client.completions.create({ ...body, seed: sa });
  check('the returned seed sent back reproduces the reply byte for byte',
    again.choices[0].text === a.choices[0].text && seedOf(again) === sa,
    short([a.choices[0].text, again.choices[0].text]));
  const n2 = await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Tell me a story' }], temperature: 1.5, max_tokens: 12, n: 2 });
  check('n = 2 without a seed: choice 1 samples with the drawn seed + 1',
    Number.isSafeInteger(seedOf(n2, 0)) && seedOf(n2, 1) === seedOf(n2, 0) + 1, short(n2.tinylm));
  const one = await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Tell me a story' }], temperature: 1.5, max_tokens: 12, seed: seedOf(n2, 1) });
  check('choice 1\'s seed alone reproduces choice 1', one.choices[0].message.content === n2.choices[1].message.content,
    short([one.choices[0].message.content, n2.choices[1].message.content]));
  const g = { model: 'demo', prompt: 'What is 7 + 5?', temperature: 0, max_tokens: 12 };
  const [g1, g2] = [await client.completions.create(g), await client.completions.create(g)];
  check('greedy replies do not depend on the drawn seed', g1.choices[0].text === g2.choices[0].text && seedOf(g1) !== seedOf(g2),
    short([g1.choices[0].text, g2.choices[0].text]));
}

// Penalties and biases on a greedy continuation that repeats itself.
const LIST = { model: 'demo', prompt: '1 + 1 = 2, 2 + 2 = 4,', temperature: 0, max_tokens: 30 };
async function penalties(client) {
  const text = async (extra) => (await client.completions.create({ ...LIST, ...extra })).choices[0].text;
  const base = await text({});
  for (const [name, extra] of [['frequency_penalty 2', { frequency_penalty: 2 }],
    ['presence_penalty 2', { presence_penalty: 2 }],
    ['repeat_penalty 1.5 alone (the default window of 64 ids)', { repeat_penalty: 1.5 }]]) {
    const t = await text(extra);
    check(`${name} changes the greedy reply`, t !== base, short([base, t]));
  }
  const off = await text({ repeat_penalty: 1.5, repeat_last_n: 0 });
  check('repeat_last_n 0 turns the repeat penalty off', off === base, short([base, off]));
  const all = await text({ repeat_penalty: 1.5, repeat_last_n: -1 });
  check('repeat_last_n -1 (the context) is accepted and penalises', all !== base, short([base, all]));

  const tok = (await post(server, '/tokenize', { content: ' banana' })).json;
  const banana = tok.tokens?.[0];
  const two = (await post(server, '/tokenize', { content: '2' })).json.tokens?.[0];
  check('the probe tokens exist', Number.isInteger(banana) && Number.isInteger(two) && !base.includes('banana') && base.includes('2'), short([tok, two, base]));
  const up = await text({ logit_bias: { [banana]: 30 }, max_tokens: 4 });
  check('a positive logit_bias makes its token appear', up.includes(' banana'), short(up));
  const ban = await text({ logit_bias: { [two]: -100 } });
  check('logit_bias -100 bans the token', !ban.includes('2') && ban !== base, short(ban));
  const soft = await text({ logit_bias: { [two]: -5 } });
  check('logit_bias -5 is added, not a ban', soft.includes('2'), short(soft));

  // Determinism: alone, batched beside another, and after prefix reuse.
  const req = { ...LIST, frequency_penalty: 1.2, presence_penalty: -0.5, logit_bias: { [two]: -3 }, repeat_penalty: 1.3, temperature: 1, seed: 42 };
  const alone = (await client.completions.create(req)).choices[0].text;
  const [x, y] = await Promise.all([client.completions.create(req), client.completions.create({ ...req, seed: 43 })]);
  const reused = (await client.completions.create(req)).choices[0].text;
  check('a penalised, biased reply is the same alone, batched and after prefix reuse',
    x.choices[0].text === alone && reused === alone, short([alone, x.choices[0].text, reused, y.choices[0].text]));
}

async function refusals(client) {
  for (const [field, value] of [['frequency_penalty', 2.5], ['presence_penalty', -2.01], ['repeat_last_n', -2], ['logit_bias', { 17: 100.5 }]]) {
    const e = await refusal(() => client.completions.create({ ...LIST, [field]: value }));
    check(`${field} ${JSON.stringify(value)} is 400 invalid_value naming ${field}`,
      e instanceof OpenAI.BadRequestError && e.param === field && e.code === 'invalid_value', short(e?.error ?? e));
  }
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const s = server = await startServer('the demo model\'s server', [demoModel(), '--parallel', '2', '--ctx', '1024']);
  const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  for (const [name, f] of [['seeds', seeds], ['penalties', penalties], ['refusals', refusals]]) {
    try { await f(client); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
  }
  await stopServer(s);
}

await runSuite(main, { seconds: 180 });
