// `tinylm serve` for clients written for other servers (docs/server.md,
// Extension fields, /v1/models/{id}, /props, The chat page, Access log),
// on the demo model:
//   node tests/serve/compat_test.mjs TINYLM WORKDIR
//
// The oracle for a field that is implemented or ignored is the server
// itself on the plain OpenAI request that means the same: with the same
// seed the reply must be the same bytes (replies are a function of the
// request's meaning, docs/server.md Determinism). The request sets are
// what the clients send: the openai npm client with every field of its
// ChatCompletionCreateParams, the body llama-server's web UI builds
// (tools/server/webui chat.service.ts) and ollama's options. The page's
// files are compared with web/server/ and web/app.css; a headless Chromium
// sends a message through the page. The access log is counted against the
// requests this suite made, and the prompts' marker never appears in it.
//
// Planted defects it catches (each tried once by hand):
//   the engine ignores cache_prompt false -> "cache_prompt false: cached_tokens 0"
//   no log line for 404 answers           -> "access log: one JSON line per request"
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { check, demoModel, http, JSON_TYPE, ROOT, runSuite, short, sleep, startServer, stopServer, suiteArgs } from '../support/serve_harness.mjs';
import { launchChromium } from '../web/chromium.mjs';

const { WORK } = suiteArgs('compat_test.mjs');
const PARALLEL = 2, CTX = 1024;
// In every prompt: the access log must never hold it.
const MARKER = 'zebra7319';
const MSG = (q) => [{ role: 'user', content: `${MARKER}: ${q}` }];

let server = null;
let requests = 0; // every HTTP request this suite sends, for the access log
// Raw HTTP to the server, counted for the access log.
function send(method, path, body) {
  requests++;
  return http(server, method, path, { body, headers: body === undefined ? {} : JSON_TYPE });
}

// A streamed chat's content joined, and whether it ended with [DONE].
async function streamed(body) {
  const r = await send('POST', '/v1/chat/completions', body);
  let content = '', done = false;
  for (const ev of r.text.split('\n\n')) {
    if (!ev.startsWith('data: ')) continue;
    if (ev === 'data: [DONE]') { done = true; continue; }
    content += JSON.parse(ev.slice(6)).choices[0]?.delta?.content ?? '';
  }
  return { status: r.status, content, done, text: r.text };
}

const content = (r) => r.json?.choices?.[0]?.message?.content;
function refused(r, param, code) {
  return r.status === 400 && r.json?.error?.type === 'invalid_request_error' && r.json.error.param === param &&
    r.json.error.code === code;
}

// ---- OpenAI: every field of the openai client's chat create ----
async function openaiFields(client) {
  const plain = { model: 'demo', messages: MSG('What is 12 + 30?'), max_tokens: 24, seed: 5, temperature: 1 };
  requests++;
  const want = await client.chat.completions.create(plain);
  // every field of ChatCompletionCreateParams but those that ask for what
  // tinylm lacks (audio, moderation, web_search_options, functions,
  // function_call: refused below); reasoning_effort medium is thinking on,
  // the template's default
  const every = {
    ...plain, max_completion_tokens: 24, frequency_penalty: 0, presence_penalty: 0, logit_bias: {}, logprobs: false,
    top_logprobs: null, metadata: { app: 'compat' }, modalities: ['text'], n: 1, parallel_tool_calls: true,
    prediction: { type: 'content', content: '42' }, prompt_cache_key: 'k1', prompt_cache_retention: '24h',
    prompt_cache_options: {}, safety_identifier: 'user-hash', service_tier: 'auto', stop: ['\n\n\n\n'], store: false,
    stream: false, top_p: 1, user: 'u', verbosity: 'medium', response_format: { type: 'text' }, audio: null, reasoning_effort: 'medium',
  };
  requests++;
  const got = await client.chat.completions.create(every);
  check('openai client, every field: the reply of the plain request', got.choices[0].message.content === want.choices[0].message.content,
    `${short(got.choices[0].message.content)} vs ${short(want.choices[0].message.content)}`);
  requests++;
  const stream = await client.chat.completions.create({ ...every, stream: true, stream_options: { include_usage: true } });
  let joined = '';
  for await (const chunk of stream) joined += chunk.choices[0]?.delta?.content ?? '';
  check('openai client, every field, streamed: the same content', joined === want.choices[0].message.content, short(joined));
  for (const [field, value] of [['audio', { voice: 'alloy', format: 'wav' }], ['modalities', ['text', 'audio']],
    ['verbosity', 'low'], ['web_search_options', {}], ['functions', [{ name: 'f' }]], ['moderation', { model: 'm' }]]) {
    const r = await send('POST', '/v1/chat/completions', { ...plain, [field]: value });
    check(`openai ${field} ${short(value, 60)}: 400 unsupported_value naming it`, refused(r, field, 'unsupported_value'), short(r.text));
  }
}

// ---- llama-server: its web UI's request, its /completion fields ----
async function llamaServer() {
  const messages = MSG('What is 7 + 8?');
  // chat.service.ts's body with the web UI's default settings
  const webui = {
    messages, stream: true, return_progress: true, temperature: 0.8, max_tokens: -1, dynatemp_range: 0,
    dynatemp_exponent: 1, top_k: 40, top_p: 0.95, min_p: 0.05, xtc_probability: 0, xtc_threshold: 0.1, typ_p: 1,
    repeat_penalty: 1, presence_penalty: 0, frequency_penalty: 0, dry_multiplier: 0, dry_base: 1.75,
    dry_allowed_length: 2, dry_penalty_last_n: -1, samplers: ['penalties', 'dry', 'top_n_sigma', 'top_k', 'typ_p', 'top_p',
      'min_p', 'xtc', 'temperature'], backend_sampling: false, timings_per_token: false, seed: 11, cache_prompt: true,
    reasoning_format: 'auto', repeat_last_n: 64,
  };
  const plain = { messages, stream: true, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, repeat_penalty: 1, seed: 11 };
  const a = await streamed(webui), b = await streamed(plain);
  check('llama-server web UI request: streamed to [DONE]', a.status === 200 && a.done, short(a.text));
  check('llama-server web UI request: the reply of the plain request', a.content === b.content && b.done, `${short(a.content)} vs ${short(b.content)}`);
  // n_predict is max_tokens, on both endpoints
  const n = await send('POST', '/v1/completions', { prompt: `${MARKER} 3 + 4 =`, n_predict: 6, cache_prompt: true, typical_p: 1, n_probs: 0, ignore_eos: false });
  const m = await send('POST', '/v1/completions', { prompt: `${MARKER} 3 + 4 =`, max_tokens: 6 });
  check('n_predict 6 on /v1/completions: the reply of max_tokens 6', n.status === 200 && n.json.choices[0].text === m.json?.choices[0].text &&
    n.json.usage.completion_tokens === m.json.usage.completion_tokens && m.json.usage.completion_tokens <= 6, `${short(n.text)} vs ${short(m.text)}`);
  const lim = await send('POST', '/v1/chat/completions', { messages, n_predict: 3, temperature: 0 });
  check('n_predict 3 on chat: at most 3 tokens', lim.status === 200 && lim.json.usage.completion_tokens <= 3, short(lim.text));
  // cache_prompt false: no slot's prefix reused, the same reply
  const conv = { messages: MSG('What is 21 + 21? Think it through.'), max_tokens: 8, temperature: 0 };
  const first = await send('POST', '/v1/chat/completions', conv);
  const again = await send('POST', '/v1/chat/completions', conv);
  const fresh = await send('POST', '/v1/chat/completions', { ...conv, cache_prompt: false });
  check('the same prompt again reuses a slot\'s prefix (cached_tokens > 0)', again.json?.usage.prompt_tokens_details.cached_tokens > 0, short(again.text));
  check('cache_prompt false: cached_tokens 0, the same reply', fresh.json?.usage.prompt_tokens_details.cached_tokens === 0 &&
    content(fresh) === content(first) && content(again) === content(first), `${short(fresh.json?.usage)} ${short(content(fresh))} vs ${short(content(first))}`);
  for (const [body, param, code] of [
    [{ messages, typical_p: 0.5 }, 'typical_p', 'unsupported_value'],
    [{ messages, xtc_probability: 0.5 }, 'xtc_probability', 'unsupported_value'],
    [{ messages, dry_multiplier: 0.8 }, 'dry_multiplier', 'unsupported_value'],
    [{ messages, n_predict: 5, max_tokens: 6 }, 'n_predict', 'invalid_value'],
    [{ messages, cache_prompt: 'no' }, 'cache_prompt', 'invalid_type'],
  ]) {
    const r = await send('POST', '/v1/chat/completions', body);
    check(`llama-server ${short(body, 90).replace(/"messages":\[[^\]]*\],?/, '')}: 400 ${code} naming ${param}`, refused(r, param, code), short(r.text));
  }
}

// ---- ollama: options, think, format, keep_alive ----
async function ollama() {
  const messages = MSG('What is 9 + 9?');
  const a = await send('POST', '/v1/chat/completions', { model: 'demo', messages, stream: false, keep_alive: '5m', think: false,
    options: { num_predict: 12, temperature: 0.9, seed: 3, top_k: 40, top_p: 0.9, repeat_penalty: 1, num_ctx: 2048, num_thread: 2 } });
  const b = await send('POST', '/v1/chat/completions', { model: 'demo', messages, max_tokens: 12, temperature: 0.9, seed: 3, top_k: 40,
    top_p: 0.9, repeat_penalty: 1, chat_template_kwargs: { enable_thinking: false } });
  check('ollama options, think false, keep_alive: the reply of the top-level fields', a.status === 200 && content(a) === content(b) &&
    a.json.usage.completion_tokens === b.json.usage.completion_tokens, `${short(a.text)} vs ${short(b.text)}`);
  // the penalties' options on a greedy continuation that repeats itself
  // (serve-sampling shows each changes it)
  const LIST = { prompt: '1 + 1 = 2, 2 + 2 = 4,', temperature: 0 };
  const pens = { presence_penalty: 2, frequency_penalty: 1, repeat_penalty: 1.5, repeat_last_n: 16 };
  const po = await send('POST', '/v1/completions', { ...LIST, options: { ...pens, num_predict: 30 } });
  const pt = await send('POST', '/v1/completions', { ...LIST, ...pens, max_tokens: 30 });
  const p0 = await send('POST', '/v1/completions', { ...LIST, max_tokens: 30 });
  check('ollama options presence/frequency/repeat_penalty/repeat_last_n: the reply of the top-level fields, not the unpenalised one',
    po.status === 200 && pt.status === 200 && po.json.choices[0].text === pt.json.choices[0].text &&
    po.json.choices[0].text !== p0.json?.choices[0].text, short([po.text, pt.text, p0.text]));
  const schema = { type: 'object', properties: { sum: { type: 'integer' } }, required: ['sum'], additionalProperties: false };
  const f = await send('POST', '/v1/chat/completions', { messages, format: schema, think: false, options: { num_predict: 60, temperature: 0 } });
  let doc = null;
  try { doc = JSON.parse(content(f)); } catch { /* checked below */ }
  check('ollama format (a schema): the reply is a document of it', f.status === 200 && f.json.choices[0].finish_reason === 'stop' &&
    doc !== null && Number.isInteger(doc.sum) && Object.keys(doc).length === 1, short(f.text));
  for (const [body, param, code] of [
    [{ messages, temperature: 0.5, options: { temperature: 0.7 } }, 'options.temperature', 'invalid_value'],
    [{ messages, options: { temperature: 7 } }, 'options.temperature', 'invalid_value'],
    [{ messages, options: { tfs_z: 0.5 } }, 'options.tfs_z', 'unsupported_value'],
    [{ messages, options: { num_gpus: 1 } }, 'options.num_gpus', 'unknown_parameter'],
    [{ messages, format: 'yaml' }, 'format', 'invalid_value'],
  ]) {
    const r = await send('POST', '/v1/chat/completions', body);
    check(`ollama ${short(body, 90).replace(/"messages":\[[^\]]*\],?/, '')}: 400 ${code} naming ${param}`, refused(r, param, code), short(r.text));
  }
  const u = await send('POST', '/v1/chat/completions', { messages, frobnicate: 1 });
  check('an unknown field is still 400 unknown_parameter', refused(u, 'frobnicate', 'unknown_parameter'), short(u.text));
}

// ---- /v1/models/{id}, /props ----
async function endpoints(client, model) {
  const id = model.replace(/^.*\//, '').replace(/\.slm$/, '');
  requests++;
  const list = await client.models.list();
  requests++;
  const one = await client.models.retrieve(id);
  check('/v1/models/{id}: the model as /v1/models lists it', JSON.stringify(one) === JSON.stringify(list.data[0]) && one.id === id, short(one));
  requests++;
  let e = null;
  try { await client.models.retrieve('no-such-model'); } catch (x) { e = x; }
  check('/v1/models/{unknown}: 404 model_not_found (the client raises NotFoundError)', e instanceof OpenAI.NotFoundError &&
    e.code === 'model_not_found', short(e?.message));
  const p = await send('GET', '/props');
  const reply = await send('POST', '/v1/chat/completions', { messages: MSG('1 + 1?'), max_tokens: 2 });
  const d = p.json?.default_generation_settings;
  check('/props: slots, context, alias, path and build as the server has them', p.status === 200 && p.json.total_slots === PARALLEL &&
    d?.n_ctx === CTX && p.json.model_alias === id && resolve(p.json.model_path) === resolve(model) &&
    p.json.build_info === reply.json?.system_fingerprint && p.json.modalities?.vision === false, short(p.text));
}

// ---- the chat page ----
async function page() {
  const files = [['/', 'web/server/index.html', 'text/html'], ['/chat.js', 'web/server/chat.js', 'text/javascript'],
    ['/app.css', 'web/app.css', 'text/css']];
  for (const [path, file, type] of files) {
    const r = await send('GET', path);
    check(`GET ${path}: ${file}'s bytes as ${type}`, r.status === 200 && r.body.equals(readFileSync(join(ROOT, file))) &&
      r.headers['content-type']?.startsWith(type), `${r.status} ${r.headers['content-type']}`);
  }
  const post = await send('POST', '/', {});
  check('POST /: 405, Allow: GET', post.status === 405 && post.headers.allow === 'GET', short(post.text));
  for (const path of ['/index.html', '/../web/app.js', '/app.js', '/%2e%2e/Makefile']) {
    const r = await send('GET', path);
    check(`GET ${path}: 404 (only the page's own files)`, r.status === 404, `${r.status}`);
  }
}

// Chromium opens the page and sends a message; the reply shown is the
// server's reply to the same request.
async function browser() {
  const b = await launchChromium();
  if (b === null) return 0;
  let sent = 0;
  try {
    const tab = await b.newPage();
    tab.on('request', () => { sent++; });
    await tab.goto(`${server.base}/`);
    await tab.waitForFunction(() => /^model /.test(document.getElementById('model-status').textContent), null, { timeout: 20000 });
    await tab.fill('#max-tokens', '16');
    await tab.fill('#seed', '2');
    await tab.fill('#prompt', `${MARKER}: What is 5 + 6?`);
    await tab.click('#send');
    await tab.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 1 &&
      !document.querySelector('.msg.streaming'), null, { timeout: 60000 });
    const shown = await tab.$eval('.msg.assistant .body', (el) => el.textContent);
    const error = await tab.$eval('#error', (el) => (el.hidden ? '' : el.textContent));
    const want = await send('POST', '/v1/chat/completions', { messages: MSG('What is 5 + 6?'), max_tokens: 16, seed: 2 });
    check('Chromium: the page served by tinylm serve sends a message and shows the server\'s reply',
      error === '' && shown.length > 0 && shown === content(want), `${short(shown)} vs ${short(content(want))} ${error}`);
    await tab.screenshot({ path: join(WORK, 'page.png') });
  } finally {
    await b.close();
  }
  return sent;
}

// ---- the access log ----
async function accessLog(expected) {
  const t0 = Date.now();
  const lines = () => server.stderr.split('\n').filter((l) => l.startsWith('{'));
  while (lines().length < expected && Date.now() - t0 < 5000) await sleep(50);
  const parsed = lines().map((l) => { try { return JSON.parse(l); } catch { return null; } });
  check(`access log: one JSON line per request (${expected})`, parsed.length === expected && parsed.every((o) => o !== null),
    `${parsed.length} lines: ${short(server.stderr.slice(-600), 600)}`);
  const keys = ['time', 'id', 'method', 'path', 'status', 'ms'];
  const well = parsed.filter((o) => o && keys.every((k) => k in o) && /^[0-9a-f]{24}$/.test(o.id) && typeof o.ms === 'number');
  check('access log: each line has time, id, method, path, status and ms', well.length === parsed.length, short(parsed.find((o) => !well.includes(o))));
  const gens = parsed.filter((o) => o?.path === '/v1/chat/completions' && o.status === 200);
  check('access log: a generation\'s line has its token counts', gens.length > 0 &&
    gens.every((o) => Number.isInteger(o.prompt_tokens) && o.prompt_tokens > 0 && Number.isInteger(o.completion_tokens)), short(gens[0]));
  check('access log: no prompt text', !server.stderr.includes(MARKER), '');
  const r = await send('GET', '/health');
  await sleep(200);
  check('X-Request-Id is the id of the request\'s log line', lines().some((l) => l.includes(`"id":"${r.headers['x-request-id']}"`)),
    short(r.headers['x-request-id']));
}

async function main() {
  mkdirSync(WORK, { recursive: true });
  const model = demoModel();
  server = await startServer('the demo model\'s server', [model, '--parallel', String(PARALLEL), '--ctx', String(CTX), '--log-format', 'json']);
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  for (const [name, f] of [['openai', () => openaiFields(client)], ['llama-server', llamaServer], ['ollama', ollama],
    ['endpoints', () => endpoints(client, model)], ['page', page]]) {
    try { await f(); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
  }
  await accessLog(requests);
  try {
    const sent = await browser();
    if (sent > 0) await accessLog(requests + sent);
  } catch (e) { check('Chromium: ran to the end', false, e?.stack ?? String(e)); }
  await stopServer(server);
}

await runSuite(main, { seconds: 240 });
