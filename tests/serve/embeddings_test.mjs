// POST /v1/embeddings (docs/server.md, Embeddings), driven by the official
// openai npm client:
//   node tests/serve/embeddings_test.mjs TINYLM WORKDIR
//
// A synthetic Qwen3-Embedding checkpoint (tinylm synth --embedding: no
// "model." prefix, a tokenizer that appends <|endoftext|>, modules.json
// and 1_Pooling/config.json) is converted here and served beside the demo
// model. What the contract says, checked:
//   * every input shape (a string, strings, token ids, arrays of ids),
//     float and base64 (the same float32 bits), dimensions (truncate and
//     renormalise) gives unit vectors within docs/tolerance.md's embedding
//     bound of the NumPy float64 oracle (tools/oracle/qwen3_embed_ref.py,
//     which reads the checkpoint's safetensors and side files, not the
//     artifact) on the strict (--lane scalar) lane, where the bound is derived; string
//     inputs are compared through the ids /tokenize gives (the tokenizer
//     has its own oracle stages);
//   * the same input gives the same bits alone, in a batch, and after the
//     model was unloaded and loaded again (a --mem-budget that holds one
//     model), on the default (fast) lane;
//   * tinylm embed gives the server's bits on the same lane (strict, and
//     the fast lane at another thread count), and refuses a chat model;
//     tinylm run refuses the embedding model;
//   * chat on the embedding model and embeddings on a chat model are 400
//     invalid_value naming "model"; empty input, bad dimensions, an unknown
//     field, an input past the context are 400;
//   * an embedding request's prompt tokens (its ids from /tokenize, plus the
//     appended token each) are counted: tinylm_prompt_tokens_total and the
//     model's tinylm_model_prompt_tokens_total grow by them, and its
//     access-log line (--log-format json) has them, completion_tokens 0;
//   * /v1/models and /v1/models/{id} give a loaded model's kind
//     ("embedding" or "chat") in the tinylm extension, none while unloaded.
// Planted defects these checks catch (each tried by hand):
//   src/lib/embed.c feeds the last input id again instead of the
//     appended one                                 -> the oracle checks
//   src/lib/embed.c does not divide by the norm    -> unit norm, oracle
//   src/lib/embed.c sums squares over all components, not the first
//     `dimensions`                                 -> the dimensions checks
//   src/native/serve_embed.c writes big-endian floats -> both base64 checks
//   the oracle appends no token                    -> the oracle checks
//   tl_srv_embed (serve_engine.c) counts n, not n + 1 tokens, or none
//                                                  -> the metrics checks
//   cmd_serve.c's embeddings() leaves has_tokens false -> the access-log check
//   list_model (cmd_serve.c) writes kind "chat" for every model
//                                                  -> the kind checks
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { check, get, modelsDir, runTinylm, http, post, ROOT, runSuite, short, sleep, startServer as startProcess, stopServer, suiteArgs } from '../support/serve_harness.mjs';

const { TINYLM, WORK } = suiteArgs('embeddings_test.mjs');
const MIB = 1 << 20;
const CTX = 64;
// The embedding model's shape (synth's tiny preset on the 346-token fixture).
const CFG = { vocab_size: 346, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2,
  num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16 };
const U = 2 ** -24;

// ---- servers ----
async function startServer(args) {
  const s = await startProcess(`a server of ${short(args)}`, [...args, '--parallel', '1', '--ctx', String(CTX)], { ms: 60000 });
  s.client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  return s;
}
// A counter of /metrics (the line "NAME VALUE", NAME with its labels).
async function metric(s, name) {
  const { text } = await http(s, 'GET', '/metrics');
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(name.length + 1));
}
// The access-log lines (--log-format json) on stderr so far.
const accessLines = (s) => s.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => {
  try { return JSON.parse(l); } catch { return null; }
}).filter(Boolean);
const embed = (s, body) => post(s, '/v1/embeddings', { model: 'emb', ...body });

function makeModels() {
  const dir = modelsDir();
  const cfg = join(WORK, 'emb.json');
  writeFileSync(cfg, JSON.stringify({ vocab_size: CFG.vocab_size }));
  runTinylm('synth', '--config', cfg, '--seed', '11', '--dtype', 'f32', '--embedding', '--tokenizer-dir', join(ROOT, 'tests/fixtures/tiny-tokenizer'), '-o', join(WORK, 'emb-hf'));
  runTinylm('convert', join(WORK, 'emb-hf'), '-o', join(dir, 'emb.slm'), '--quant', 'f32');
  return dir;
}

// ---- the oracle and the bound (docs/tolerance.md, Embeddings) ----
function oracle(ids, dims) {
  const args = [join(ROOT, 'tools/oracle/qwen3_embed_ref.py'), join(WORK, 'emb-hf'), '--ids', ids.join(' ')];
  if (dims) args.push('--dimensions', String(dims));
  return JSON.parse(execFileSync('/usr/bin/python3', args, { encoding: 'utf8' }));
}
// The largest |c_i - r_i| the bound allows on the normalised vector.
function bound(ref, nKeys) {
  const N = Math.max(CFG.hidden_size, CFG.intermediate_size, CFG.num_attention_heads * CFG.head_dim, nKeys);
  const gamma = (N * U) / (1 - N * U);
  const rtol = 16 * (CFG.num_hidden_layers + 1) * gamma;
  let e2 = 0;
  for (const r of ref.embedding) { // raw component = r * raw_norm
    const b = (rtol * (ref.raw_rms + Math.abs(r) * ref.raw_norm)) / (1 - rtol);
    e2 += b * b;
  }
  return (2 * Math.sqrt(e2)) / ref.raw_norm + U;
}
function againstOracle(name, v, ids, dims) {
  const ref = oracle(ids, dims);
  const B = bound(ref, ref.ids.length);
  let worst = 0;
  for (let i = 0; i < ref.embedding.length; i++) worst = Math.max(worst, Math.abs(v[i] - ref.embedding[i]));
  check(`${name}: ${ref.embedding.length} components, within ${B.toExponential(2)} of the oracle (worst ${worst.toExponential(2)})`,
    v.length === ref.embedding.length && worst <= B, short([v.slice(0, 4), ref.embedding.slice(0, 4)]));
}
const unit = (v) => Math.abs(Math.sqrt(v.reduce((a, x) => a + x * x, 0)) - 1) <= 2 * U;
const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
const tokenize = async (s, content) => (await post(s, '/tokenize', { model: 'emb', content })).json.tokens;

// ---- the strict lane (--lane scalar): the oracle ----
async function strict(dir) {
  const s = await startServer(['--models', dir, '--lane', 'scalar', '--log-format', 'json']);
  const listed = (await get(s, '/v1/models')).data;
  const atStart = Object.fromEntries(listed.map((m) => [m.id, [m.tinylm.loaded, m.tinylm.kind]]));
  check('/v1/models at start: the default model (demo, loaded) is kind "chat", emb (not loaded yet) has no kind',
    atStart.demo?.join() === 'true,chat' && atStart.emb?.[0] === false && atStart.emb?.[1] === undefined, short(listed));
  const texts = ['hello world', 'a second, longer text to embed', 'x'];
  const ids = await Promise.all(texts.map((t) => tokenize(s, t)));
  check('/tokenize gives the inputs\' ids (no token appended there)', ids.every((a) => a.length > 0), short(ids));

  const TOTAL = 'tinylm_prompt_tokens_total', OF_EMB = 'tinylm_model_prompt_tokens_total{model="emb"}';
  const before = [await metric(s, TOTAL), await metric(s, OF_EMB)];
  const one = await s.client.embeddings.create({ model: 'emb', input: texts[0], encoding_format: 'float' });
  const after = [await metric(s, TOTAL), await metric(s, OF_EMB)];
  check(`/metrics: ${TOTAL} and the model's grow by the input's ids + 1 (${ids[0].length + 1})`,
    after[0] - before[0] === ids[0].length + 1 && after[1] - before[1] === ids[0].length + 1, short([before, after]));
  let logged = [];
  for (let t0 = Date.now(); logged.length === 0 && Date.now() - t0 < 5000; await sleep(20))
    logged = accessLines(s).filter((l) => l.path === '/v1/embeddings');
  check('the access log: the embedding request\'s line has its prompt tokens, completion_tokens 0',
    logged.length === 1 && logged[0].status === 200 && logged[0].prompt_tokens === ids[0].length + 1 &&
    logged[0].completion_tokens === 0, short(logged));
  const batchBefore = await metric(s, TOTAL);
  check('openai client: a string: object list, one embedding at index 0, model emb, usage counts the appended token',
    one.object === 'list' && one.data.length === 1 && one.data[0].object === 'embedding' && one.data[0].index === 0 &&
    one.model === 'emb' && one.usage.prompt_tokens === ids[0].length + 1 && one.usage.total_tokens === ids[0].length + 1, short(one));
  check('a string: unit norm', unit(one.data[0].embedding), short(one.data[0].embedding));
  againstOracle('a string', one.data[0].embedding, ids[0]);

  const batch = await s.client.embeddings.create({ model: 'emb', input: texts, encoding_format: 'float' });
  check('a batch of three: indices 0..2 in order', batch.data.map((d) => d.index).join() === '0,1,2', short(batch));
  const batchTokens = ids.reduce((a, x) => a + x.length + 1, 0);
  check(`/metrics: a batch counts every input's ids + 1 (${batchTokens}), as its usage does`,
    await metric(s, TOTAL) - batchBefore === batchTokens && batch.usage.prompt_tokens === batchTokens, short(batch.usage));
  texts.forEach((t, i) => againstOracle(`batch entry ${i}`, batch.data[i].embedding, ids[i]));
  check('a batch entry has the bits of the same input alone', same(batch.data[0].embedding, one.data[0].embedding));

  const byIds = await s.client.embeddings.create({ model: 'emb', input: ids[1], encoding_format: 'float' });
  check('token ids: the bits of the same text', same(byIds.data[0].embedding, batch.data[1].embedding), short(byIds));
  const byIdArrays = await s.client.embeddings.create({ model: 'emb', input: [ids[2], ids[0]], encoding_format: 'float' });
  check('arrays of ids: the bits of the texts, in order', same(byIdArrays.data[0].embedding, batch.data[2].embedding) &&
    same(byIdArrays.data[1].embedding, one.data[0].embedding), short(byIdArrays));

  const b64 = await embed(s, { input: texts[0], encoding_format: 'base64' });
  const raw = Buffer.from(b64.json?.data?.[0]?.embedding ?? '', 'base64');
  const f32 = Array.from({ length: raw.length / 4 }, (_, i) => raw.readFloatLE(4 * i));
  check('base64: little-endian float32 bytes with the float response\'s bits', b64.status === 200 && same(f32, one.data[0].embedding), short(b64.json));
  const viaClient = await s.client.embeddings.create({ model: 'emb', input: texts[0] }); // the client asks for base64 and decodes it
  check('openai client default (base64, decoded by the client): the same numbers', same(Array.from(viaClient.data[0].embedding), one.data[0].embedding));

  const d16 = await s.client.embeddings.create({ model: 'emb', input: texts[1], dimensions: 16, encoding_format: 'float' });
  check('dimensions 16: 16 components, unit norm', d16.data[0].embedding.length === 16 && unit(d16.data[0].embedding), short(d16));
  againstOracle('dimensions 16', d16.data[0].embedding, ids[1], 16);

  const cliVec = (...args) => JSON.parse(execFileSync(TINYLM, ['embed', join(dir, 'emb.slm'), ...args], { encoding: 'utf8' })).embedding;
  check('tinylm embed --lane scalar: the server\'s bits for the same text', same(cliVec('--text', texts[1], '--lane', 'scalar'), batch.data[1].embedding));
  check('tinylm embed --dimensions 16: the server\'s bits', same(cliVec('--text', texts[1], '--dimensions', '16', '--lane', 'scalar'), d16.data[0].embedding));
  let r = spawnSync(TINYLM, ['embed', join(dir, 'demo.slm'), '--text', 'hi'], { encoding: 'utf8' });
  check('tinylm embed on a chat model: exit 1 unsupported_feature', r.status === 1 && /unsupported_feature/.test(r.stderr), short(r.stderr));
  r = spawnSync(TINYLM, ['run', join(dir, 'emb.slm'), '--prompt', 'hi'], { encoding: 'utf8' });
  check('tinylm run on the embedding model: exit 1 unsupported_feature', r.status === 1 && /unsupported_feature: .*embedding model/.test(r.stderr), short(r.stderr));

  const refusals = [
    ['dimensions 0', { input: 'x', dimensions: 0 }, 'dimensions', 'invalid_value'],
    [`dimensions ${CFG.hidden_size + 1}`, { input: 'x', dimensions: CFG.hidden_size + 1 }, 'dimensions', 'invalid_value'],
    ['an empty string', { input: '' }, 'input', 'invalid_value'],
    ['an empty array', { input: [] }, 'input', 'invalid_value'],
    ['an empty id array in a batch', { input: [[1], []] }, 'input', 'invalid_value'],
    ['an id past the vocabulary', { input: [CFG.vocab_size] }, 'input', 'invalid_value'],
    ['strings and ids mixed', { input: ['a', [1]] }, 'input', 'invalid_value'],
    ['no input', { input: undefined }, 'input', 'missing_required_parameter'],
    ['encoding_format "int8"', { input: 'x', encoding_format: 'int8' }, 'encoding_format', 'invalid_value'],
    ['an unknown field', { input: 'x', pooling: 'mean' }, 'pooling', 'unknown_parameter'],
    [`${CTX} ids (the appended token makes ${CTX + 1})`, { input: Array(CTX).fill(1) }, 'input', 'context_length_exceeded'],
  ];
  for (const [name, body, param, code] of refusals) {
    const r = await embed(s, body);
    check(`${name}: 400 ${code} naming ${param}`, r.status === 400 && r.json?.error?.param === param && r.json?.error?.code === code, short([r.status, r.json]));
  }
  const fits = await embed(s, { input: Array(CTX - 1).fill(1) });
  check(`${CTX - 1} ids fit the context (${CTX} with the appended token)`, fits.status === 200, short([fits.status, fits.json]));
  const user = await embed(s, { input: 'x', user: 'someone' });
  check('user is accepted and ignored', user.status === 200, short(user.json));

  const chat = await post(s, '/v1/chat/completions', { model: 'emb', messages: [{ role: 'user', content: 'hi' }] });
  check('chat on the embedding model: 400 invalid_value naming model', chat.status === 400 && chat.json?.error?.param === 'model' &&
    chat.json?.error?.code === 'invalid_value', short([chat.status, chat.json]));
  const compl = await post(s, '/v1/completions', { model: 'emb', prompt: 'hi', max_tokens: 2 });
  check('completions on the embedding model: 400 invalid_value naming model', compl.status === 400 && compl.json?.error?.param === 'model', short([compl.status, compl.json]));
  const onChat = await post(s, '/v1/embeddings', { model: 'demo', input: 'hi' });
  check('embeddings on a chat model: 400 invalid_value naming model', onChat.status === 400 && onChat.json?.error?.param === 'model' &&
    onChat.json?.error?.code === 'invalid_value', short([onChat.status, onChat.json]));
  const kinds = Object.fromEntries((await get(s, '/v1/models')).data.map((m) => [m.id, [m.tinylm.loaded, m.tinylm.kind]]));
  check('/v1/models: once loaded, emb is kind "embedding" and demo kind "chat"',
    kinds.emb?.join() === 'true,embedding' && kinds.demo?.join() === 'true,chat', short(kinds));
  const one1 = await get(s, '/v1/models/emb'), one2 = await get(s, '/v1/models/demo');
  check('/v1/models/{id}: the same kinds', one1.tinylm?.kind === 'embedding' && one2.tinylm?.kind === 'chat', short([one1, one2]));
  await stopServer(s);
  return texts;
}

// ---- the default lane: the same bits whatever ran before ----
async function reload(dir, texts) {
  const probe = await startServer(['--models', dir]);
  await probe.client.embeddings.create({ model: 'emb', input: 'x' }); // loads it
  const plans = Object.fromEntries((await get(probe, '/v1/models')).data.map((x) => [x.id, x.tinylm.plan_bytes]));
  await stopServer(probe);
  const budget = Math.ceil(Math.max(plans.demo, plans.emb) / MIB);
  if (!check(`a budget of ${budget} MiB holds one model only`, budget * MIB >= Math.max(plans.demo, plans.emb) &&
    budget * MIB < plans.demo + plans.emb, short(plans))) return;
  const s = await startServer(['--models', dir, '--mem-budget', String(budget)]);
  const first = await s.client.embeddings.create({ model: 'emb', input: texts, encoding_format: 'float' });
  const alone = await s.client.embeddings.create({ model: 'emb', input: texts[1], encoding_format: 'float' });
  check('fast lane: a batch entry has the bits of the same input alone', same(first.data[1].embedding, alone.data[0].embedding));
  check('fast lane: unit norm', first.data.every((d) => unit(d.embedding)));
  const cli1 = JSON.parse(execFileSync(TINYLM, ['embed', join(dir, 'emb.slm'), '--text', texts[1], '-t', '1'], { encoding: 'utf8' })).embedding;
  check('tinylm embed on one thread: the fast-lane server\'s bits', same(cli1, alone.data[0].embedding));
  const demo = await s.client.completions.create({ model: 'demo', prompt: '12 + 30 =', max_tokens: 2, temperature: 0 });
  let models = await get(s, '/v1/models');
  check('the demo model ran and emb was unloaded for it', demo.choices.length === 1 &&
    models.data.find((m) => m.id === 'emb')?.tinylm.loaded === false, short(models));
  const again = await s.client.embeddings.create({ model: 'emb', input: texts, encoding_format: 'float' });
  models = await get(s, '/v1/models');
  check('after the unload and a reload: the same bits for every input', models.data.find((m) => m.id === 'emb')?.tinylm.loaded === true &&
    again.data.every((d, i) => same(d.embedding, first.data[i].embedding)));
  await stopServer(s);
}

async function main() {
  mkdirSync(WORK, { recursive: true });
  const dir = makeModels();
  await reload(dir, await strict(dir));
}

await runSuite(main, { seconds: 180, log: 'servers.log' });
