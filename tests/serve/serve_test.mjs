// `tinylm serve` end to end (docs/server.md), driven by the official openai
// npm client (6.x, package-lock.json) and by raw HTTP:
//   node tests/serve/serve_test.mjs TINYLM WORKDIR
// The servers listen on ephemeral loopback ports (--port 0; the port is read
// from the "listening on" line). The oracles are the server's own
// non-streamed replies, `tinylm run --json` on the same conversation and
// settings, `tinylm encode` / `render` / `decode` and `tinylm receipt show`.
//
//   * chat and completions, streamed and not: the same content; chunk
//     invariants (one id/created/model/fingerprint, role first, the
//     finish_reason last, the usage chunk with choices [], [DONE]); usage;
//     logprobs (bytes joined = the reply, logprob <= 0, top sorted);
//   * stop strings taken from an unconstrained reply (inside a token,
//     straddling two tokens, multibyte) never reach the client, in any
//     chunk, and the content equals `tinylm run --stop`; a UTF-8 sequence
//     split across two tokens is never split across chunks;
//   * tools reach the template (/apply-template and the prompt token count
//     equal `tinylm render` with the tools; tool_choice "none" leaves them
//     out), and a reply without a <tool_call> block is plain content; with
//     tool_choice "required" the token mask makes even this random model
//     write one well-formed call, whose arguments ajv validates, streamed
//     the same (tests/serve/structured_test.mjs covers structured output);
//   * every error class with its status and OpenAI's error shape; the API
//     key (Bearer, X-Api-Key, wrong key, /health open); CORS; /metrics;
//     /tokenize, /detokenize, /apply-template against the CLI; receipts
//     kept by --receipt-dir verify;
//   * determinism: one sampled request alone, beside 1-3 others, as a
//     prefix-cache hit, on a server with another -t: the same bytes, token
//     bytes, logprobs and receipt id, equal to `tinylm run`; another seed,
//     another receipt;
//   * cancellation mid-stream and mid-prefill (a larger synthetic model):
//     the slot is free again within a bound, later replies unchanged;
//   * overload (--parallel 2 --queue 2, 12 clients at once): 503 with
//     Retry-After for the excess, every 200 equal to its solo reply, the
//     server alive and its RSS flat over further rounds.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { check, http, JSON_TYPE, ROOT, runSuite, short, sleep, startServer as startProcess, stop, suiteArgs } from '../support/serve_harness.mjs';

const { TINYLM, WORK } = suiteArgs('serve_test.mjs');
const TINY = join(ROOT, 'tests/golden/slm/tiny-f32.slm');
const TINY_TOKENIZER = join(ROOT, 'tests/fixtures/tiny-tokenizer');
const KEY = 'sk-test-0123456789';
const ORIGIN = 'http://allowed.example';
// Lossy UTF-8 as tinylm's text (U+FFFD per maximal invalid subpart; a BOM kept).
const lossy = (bytes) => new TextDecoder('utf-8', { ignoreBOM: true }).decode(Uint8Array.from(bytes));
const strictUtf8 = (bytes) => {
  try {
    new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
};
const utf8 = (s) => [...Buffer.from(s, 'utf8')];
const eqJSON = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// ---- the CLI oracles ----
function cli(...args) {
  return execFileSync(TINYLM, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 120000 });
}
let convN = 0;
function convFile(conv) {
  const f = join(WORK, `conv-${convN++}.json`);
  writeFileSync(f, JSON.stringify(conv));
  return f;
}
// The request's sampling values as `tinylm run` flags.
function runFlags(p) {
  const f = [];
  if (p.max_tokens !== undefined) f.push('-n', String(p.max_tokens));
  if (p.temperature !== undefined) f.push('--temperature', String(p.temperature));
  if (p.top_k !== undefined) f.push('--top-k', String(p.top_k));
  if (p.top_p !== undefined) f.push('--top-p', String(p.top_p));
  if (p.min_p !== undefined) f.push('--min-p', String(p.min_p));
  if (p.seed !== undefined) f.push('--seed', String(p.seed));
  for (const s of p.stop === undefined ? [] : [p.stop].flat()) f.push('--stop', s);
  return f;
}
// `tinylm run --messages FILE` on a chat request (FILE: the conversation as
// the server builds it: messages, tools unless tool_choice is "none").
function runChat(model, req, extra = []) {
  const conv = { messages: req.messages };
  if (req.tools && req.tool_choice !== 'none') conv.tools = req.tools;
  if (req.chat_template_kwargs?.enable_thinking !== undefined) conv.enable_thinking = req.chat_template_kwargs.enable_thinking;
  return JSON.parse(cli('run', model, '--messages', convFile(conv), ...runFlags(req), '--json', '--logprobs', '2', ...extra));
}
// `tinylm run --raw --prompt` on a completions request (raw text, no template).
function runPrompt(model, req, extra = []) {
  return JSON.parse(cli('run', model, '--raw', '--prompt', req.prompt, ...runFlags(req), '--json', '--logprobs', '2', ...extra));
}
function render(model, conv) {
  return JSON.parse(cli('render', model, '--messages', convFile({ add_generation_prompt: true, ...conv }), '--json'));
}
// Every token's raw bytes (special tokens as their text).
function vocabBytes(model, vocab) {
  const lines = Array.from({ length: vocab }, (_, i) => JSON.stringify({ ids: [i] })).join('\n') + '\n';
  const out = execFileSync(TINYLM, ['decode', model, '--jsonl', '--mode', 'raw'], { input: lines, encoding: 'utf8' });
  return out.trim().split('\n').map((l) => [...Buffer.from(JSON.parse(l).hex, 'hex')]);
}

// ---- servers ----
async function startServer(name, model, args) {
  const t0 = Date.now();
  const s = await startProcess(name, [model, '--host', '127.0.0.1', ...args], { ready: /listening on http:\/\/[^\s:]+:\d+/,
    ms: 60000, started: `${name}: prints "tinylm serve: listening on http://HOST:PORT"` });
  s.model = model;
  s.lines = [];
  s.pid = s.proc.pid;
  // While loading: /health 503 {"status":"loading"} (seen only if the first poll is early enough).
  let sawLoading = null;
  let health = null;
  while (Date.now() - t0 < 120000 && s.exit === null) {
    health = await raw(s, 'GET', '/health');
    if (health.status === 503 && sawLoading === null) {
      sawLoading = health;
      // A generation request meanwhile: 503 loading (unless the load ended in between).
      const chat = await raw(s, 'POST', '/v1/chat/completions', { body: { messages: CONV1, max_tokens: 1 }, headers: auth });
      if (chat.status === 503) {
        check(`${name}: a chat request while loading is 503 server_error loading`, errorShape(chat, 503, 'server_error', 'loading'), short(chat.text));
      } else {
        console.log(`skip: ${name}: the load ended before the chat request while loading (${chat.status})`);
      }
    }
    if (health.status === 200) break;
    await sleep(10);
  }
  check(`${name}: /health 200 once loaded`, health?.status === 200, short(health));
  if (sawLoading) {
    check(`${name}: /health while loading is 503 {"status":"loading"}`, sawLoading.json?.status === 'loading', short(sawLoading.json));
  }
  while (!/tinylm serve: ready \(/.test(s.stdout) && Date.now() - t0 < 10000) await sleep(5);
  check(`${name}: prints "tinylm serve: ready (MODEL, N slots x CTX tokens, lane PROFILE, plan X MB)"`,
    /tinylm serve: ready \(.+, \d+ slots x \d+ tokens, lane .+, plan [\d.]+ MB\)/.test(s.stdout), short(s.stdout));
  return s;
}
async function stopServer(s, sig = 'SIGTERM', name = s.name) {
  if (s.exit !== null) return check(`${name}: still running at the end`, false, short(s.exit) + short(s.stderr, 2000));
  const r = await stop(s, sig);
  return check(`${name}: ${sig} stops it cleanly (exit 0) within 15 s`, r?.code === 0, short(r) + short(s.stderr.slice(-2000), 2000));
}

// Raw HTTP, JSON bodies typed as such, on node's shared agent.
const raw = (s, method, path, { headers = {}, ...opt } = {}) =>
  http(s, method, path, { ...opt, headers: { ...(opt.body === undefined ? {} : JSON_TYPE), ...headers }, keepAlive: true });
const auth = { Authorization: `Bearer ${KEY}` };
const post = (s, path, body, headers = auth, opt = {}) => raw(s, 'POST', path, { body, headers, ...opt });

// A streamed request read as server-sent events: {status, headers, bytes,
// events: [{data: json} | {done: true} | {comment}], chunks (the JSON ones)}.
async function sse(s, path, body, { headers = auth, onEvent, signal } = {}) {
  return new Promise((resolvePromise, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = httpRequest({ host: '127.0.0.1', port: s.port, method: 'POST', path, signal,
      headers: { 'Content-Type': 'application/json', 'Content-Length': data.length, ...headers } }, (res) => {
      const parts = [];
      const out = { status: res.statusCode, headers: res.headers, events: [], chunks: [], bytes: null, malformed: [] };
      let pending = Buffer.alloc(0);
      res.on('data', (d) => {
        parts.push(d);
        pending = Buffer.concat([pending, d]);
        let at;
        while ((at = pending.indexOf('\n\n')) >= 0) {
          const ev = pending.subarray(0, at).toString('utf8');
          pending = pending.subarray(at + 2);
          let e;
          if (ev.startsWith(':')) e = { comment: ev };
          else if (ev === 'data: [DONE]') e = { done: true };
          else if (ev.startsWith('data: ')) {
            try { e = { data: JSON.parse(ev.slice(6)) }; out.chunks.push(e.data); } catch { out.malformed.push(ev); continue; }
          } else { out.malformed.push(ev); continue; }
          out.events.push(e);
          onEvent?.(e, req);
        }
      });
      res.on('end', () => {
        out.bytes = Buffer.concat(parts);
        if (pending.length) out.malformed.push(pending.toString('utf8'));
        if (out.status !== 200) { try { out.json = JSON.parse(out.bytes.toString('utf8')); } catch { /* */ } }
        resolvePromise(out);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(data);
    req.end();
  });
}

async function metrics(s) {
  const r = await raw(s, 'GET', '/metrics', { headers: auth });
  const m = {};
  for (const line of r.text.split('\n')) {
    const x = /^(tinylm_[a-z_]+)(\{[^}]*\})? ([-+0-9.eE]+|NaN)$/.exec(line);
    if (x) m[x[1]] = Number(x[3]);
  }
  m._response = r;
  return m;
}
function vmRssKb(pid) {
  const x = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return x ? Number(x[1]) : NaN;
}
async function waitIdle(s, boundMs) {
  const t0 = Date.now();
  let m;
  do {
    m = await metrics(s);
    if (m.tinylm_slots_busy === 0 && m.tinylm_requests_processing === 0 && m.tinylm_requests_queued === 0) {
      return { ms: Date.now() - t0, m };
    }
    await sleep(10);
  } while (Date.now() - t0 < boundMs);
  return { ms: null, m };
}

// A chat reply reduced to what determinism compares.
function essence(body) {
  const c = body.choices[0];
  return {
    content: c.message?.content ?? c.text,
    tokens: (c.logprobs?.content ?? []).map((e) => [e.bytes, e.logprob, e.top_logprobs.map((t) => [t.bytes, t.logprob])]),
    receipt: body.tinylm?.choices?.[0]?.receipt_id,
    finish: c.finish_reason,
  };
}
function sameEssence(a, b) {
  return a.content === b.content && eqJSON(a.tokens, b.tokens) && a.receipt === b.receipt && a.finish === b.finish;
}
function diffEssence(a, b) {
  if (a.content !== b.content) return `content ${short(a.content, 80)} vs ${short(b.content, 80)}`;
  if (!eqJSON(a.tokens, b.tokens)) {
    const i = a.tokens.findIndex((t, k) => !eqJSON(t, b.tokens[k]));
    return `token ${i}: ${short(a.tokens[i])} vs ${short(b.tokens[i])}`;
  }
  return `receipt ${a.receipt} vs ${b.receipt}, finish ${a.finish} vs ${b.finish}`;
}

// The shape every error response has.
function errorShape(r, status, type, code, param) {
  const e = r.json?.error;
  return r.status === status && /^application\/json/.test(r.headers['content-type'] ?? '') && e &&
    typeof e.message === 'string' && e.message.length > 0 && e.type === type &&
    (code === undefined ? (e.code === null || typeof e.code === 'string') : e.code === code) &&
    (param === undefined ? (e.param === null || typeof e.param === 'string') : e.param === param) &&
    Object.keys(r.json).length === 1 && eqJSON(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
}

// ---- the checks ----
const SAMPLING = { temperature: 0.8, top_p: 0.95, top_k: 40, min_p: 0.01 };
const CONV1 = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a cat?' }];

async function basics(s, client, vocab, tokBytes) {
  // /health, /v1/models
  const h = await raw(s, 'GET', '/health');
  check('/health: 200 {"status":"ok", slots_idle 2, slots_processing 0}, no key needed',
    h.status === 200 && h.json?.status === 'ok' && h.json.slots_idle === 2 && h.json.slots_processing === 0, short(h.json ?? h.text));
  const models = await client.models.list();
  const artifact = createHash('sha256').update(readFileSync(TINY)).digest('hex');
  const md = models.data?.[0];
  check('/v1/models through the client: one model, id tiny-f32, owned_by tinylm',
    models.data?.length === 1 && md.id === 'tiny-f32' && md.object === 'model' && md.owned_by === 'tinylm', short(models.data));
  check('/v1/models: created = the file\'s mtime, tinylm.artifact_id = SHA-256 of the file, parallel 2',
    md?.created === Math.floor(Number(execFileSync('stat', ['-c', '%Y', TINY], { encoding: 'utf8' }))) &&
    md?.tinylm?.artifact_id === artifact && md?.tinylm?.parallel === 2 && md?.tinylm?.context === 1024 &&
    typeof md?.tinylm?.profile === 'string', short(md));

  // Chat, not streamed, with logprobs: against tinylm run.
  const req = { model: 'my-model', messages: CONV1, max_tokens: 24, ...SAMPLING, seed: 7, logprobs: true, top_logprobs: 3 };
  const t0 = Math.floor(Date.now() / 1000);
  const a = await client.chat.completions.create(req);
  const c = a.choices?.[0];
  check('chat: id chatcmpl-<24 hex>, object chat.completion, created now, model echoed, system_fingerprint',
    /^chatcmpl-[0-9a-f]{24}$/.test(a.id) && a.object === 'chat.completion' && Math.abs(a.created - t0) <= 5 &&
    a.model === 'my-model' && typeof a.system_fingerprint === 'string' && a.system_fingerprint.length > 0, short(a));
  check('chat: one choice, index 0, role assistant, string content, finish_reason stop|length',
    a.choices.length === 1 && c.index === 0 && c.message.role === 'assistant' && typeof c.message.content === 'string' &&
    ['stop', 'length'].includes(c.finish_reason), short(c));
  const rend = render(TINY, { messages: CONV1 });
  const run = runChat(TINY, req);
  // run --json's answer: its text without a think block, as the content (docs/server.md, Reasoning).
  check('chat: content = tinylm run --messages\'s answer (same seed and sampling)', c.message.content === run.answer,
    `${short(c.message.content)} vs ${short(run.answer)}`);
  check('chat: tinylm.choices[0].receipt_id = tinylm run\'s receipt_id', a.tinylm?.choices?.[0]?.receipt_id === run.receipt_id,
    `${a.tinylm?.choices?.[0]?.receipt_id} vs ${run.receipt_id}`);
  const lp = c.logprobs?.content ?? [];
  check('chat logprobs: one entry per generated token, each token\'s bytes = tinylm run\'s ids\' bytes',
    lp.length === run.ids.length && lp.every((e, i) => eqJSON(e.bytes, tokBytes[run.ids[i]])),
    `${lp.length} entries vs ${run.ids.length} ids`);
  // Both print binary32 values (run as a double): the same float bits.
  check('chat logprobs: the chosen logprobs and the top alternatives\' = tinylm run\'s, bit for bit as binary32',
    lp.length === run.logprobs.length && lp.every((e, i) => Math.fround(e.logprob) === Math.fround(run.logprobs[i].logprob) &&
      run.logprobs[i].top.every((t, k) => eqJSON(e.top_logprobs[k]?.bytes, tokBytes[t.id]) &&
        Math.fround(e.top_logprobs[k].logprob) === Math.fround(t.logprob))),
    short(lp.map((e, i) => [e.logprob, run.logprobs[i]?.logprob])));
  check('chat logprobs: logprob <= 0, 3 top_logprobs sorted descending, each with bytes',
    lp.length > 0 && lp.every((e) => e.logprob <= 0 && e.top_logprobs.length === 3 &&
      e.top_logprobs.every((t, i) => t.logprob <= 0 && Array.isArray(t.bytes) && typeof t.token === 'string' &&
        (i === 0 || e.top_logprobs[i - 1].logprob >= t.logprob))));
  check('chat logprobs: the top alternative is at least as likely as the chosen token',
    lp.every((e) => e.top_logprobs[0].logprob >= e.logprob));
  check('chat logprobs: each token string is its bytes decoded (U+FFFD for a partial sequence)',
    lp.every((e) => e.token === lossy(e.bytes) && e.top_logprobs.every((t) => t.token === lossy(t.bytes))),
    short(lp.filter((e) => e.token !== lossy(e.bytes)).slice(0, 3)));
  // The content is the visible text: control tokens (<|im_start|>, ...) are dropped as `tinylm decode --mode visible` drops them.
  const dropped = new Set(run.ids.filter((id) => JSON.parse(cli('decode', TINY, '--ids', String(id), '--mode', 'visible', '--json')).text === ''));
  const joined = lp.flatMap((e, i) => (dropped.has(run.ids[i]) ? [] : e.bytes));
  check('chat logprobs: the tokens\' bytes joined (control tokens dropped), decoded = run\'s whole text (a length-limited reply)',
    c.finish_reason !== 'length' || lossy(joined) === run.text, `${short(lossy(joined))} vs ${short(run.text)}`);
  check('chat usage: prompt_tokens = tinylm render\'s ids, completion_tokens = run\'s ids, total the sum',
    a.usage?.prompt_tokens === rend.ids.length && a.usage.completion_tokens === run.ids.length &&
    a.usage.total_tokens === a.usage.prompt_tokens + a.usage.completion_tokens &&
    Number.isInteger(a.usage.prompt_tokens_details?.cached_tokens), short(a.usage));
  const tc = a.tinylm?.choices?.[0] ?? {};
  check('chat tinylm extension: artifact_id, profile, choice seed 7, stop, slot, cached_tokens, timings',
    a.tinylm?.artifact_id === artifact && typeof a.tinylm.profile === 'string' && tc.index === 0 && tc.seed === 7 &&
    tc.stop === run.stop && Number.isInteger(tc.slot) && tc.slot >= 0 && tc.slot < 2 &&
    ['queue_ms', 'prefill_ms', 'decode_ms'].every((k) => typeof tc[k] === 'number' && tc[k] >= 0), short(a.tinylm));

  // The same request streamed: raw SSE, then the client's iterator.
  const st = await sse(s, '/v1/chat/completions', { ...req, stream: true, stream_options: { include_usage: true } });
  streamInvariants('chat stream', st, a, { usage: true });
  const parts = [];
  let clientChunks = 0;
  const stream = await client.chat.completions.create({ ...req, stream: true });
  for await (const ch of stream) {
    clientChunks++;
    if (ch.choices[0]?.delta?.content) parts.push(ch.choices[0].delta.content);
  }
  check('chat stream through the client\'s iterator: the same content', clientChunks > 0 && parts.join('') === c.message.content,
    short(parts.join('')));
  // Without include_usage there is no usage chunk.
  const nu = await sse(s, '/v1/chat/completions', { ...req, stream: true });
  check('chat stream without include_usage: no usage chunk, no chunk with usage',
    nu.status === 200 && nu.chunks.every((ch) => ch.choices.length === 1 && (ch.usage === undefined || ch.usage === null)));

  // n = 2: choice i is seed + i.
  const two = await client.chat.completions.create({ ...req, n: 2 });
  const seed8 = await client.chat.completions.create({ ...req, seed: 8 });
  check('n 2: two choices, indexes 0 and 1', two.choices.length === 2 && two.choices[0].index === 0 && two.choices[1].index === 1);
  check('n 2: choice 0 = the seed-7 reply, choice 1 = the seed-8 reply (bytes, logprobs, receipt)',
    two.choices.length === 2 &&
    sameEssence(essence({ choices: [two.choices[0]], tinylm: { choices: [two.tinylm.choices[0]] } }), essence(a)) &&
    sameEssence(essence({ choices: [two.choices[1]], tinylm: { choices: [two.tinylm.choices[1]] } }), essence(seed8)),
    short(two.choices.map((x) => x.message.content)));
  check('n 2: usage counts both choices\' tokens, the prompt once',
    two.usage?.prompt_tokens === a.usage.prompt_tokens &&
    two.usage.completion_tokens === a.usage.completion_tokens + seed8.usage.completion_tokens, short(two.usage));
  const st2 = await sse(s, '/v1/chat/completions', { ...req, n: 2, stream: true, stream_options: { include_usage: true } });
  for (const i of [0, 1]) {
    const mine = st2.chunks.filter((ch) => ch.choices[0]?.index === i);
    check(`n 2 streamed: choice ${i}'s chunks: role first, finish last, content = its non-streamed content`,
      mine.length >= 2 && mine[0].choices[0].delta.role === 'assistant' && mine.at(-1).choices[0].finish_reason === two.choices[i].finish_reason &&
      mine.map((ch) => ch.choices[0].delta.content ?? '').join('') === two.choices[i].message.content);
  }

  // Completions against tinylm run --prompt.
  const creq = { model: 'x', prompt: 'Hello world, tell me a story', ...SAMPLING, seed: 3, logprobs: 2 };
  const cc = await client.completions.create(creq);
  const crun = runPrompt(TINY, { ...creq, max_tokens: 16 });
  const cch = cc.choices?.[0];
  check('completions: id cmpl-..., object text_completion, max_tokens 16 by default',
    /^cmpl-[0-9a-f]+$/.test(cc.id) && cc.object === 'text_completion' && cc.usage?.completion_tokens <= 16 &&
    cc.usage.completion_tokens === crun.ids.length, short(cc));
  check('completions: text and receipt = tinylm run --prompt', cch?.text === crun.text &&
    cc.tinylm?.choices?.[0]?.receipt_id === crun.receipt_id, `${short(cch?.text)} vs ${short(crun.text)}`);
  const enc = JSON.parse(cli('encode', TINY, '--text', creq.prompt, '--json'));
  check('completions: prompt_tokens = tinylm encode\'s ids', cc.usage?.prompt_tokens === enc.ids.length);
  const L = cch?.logprobs;
  check('completions logprobs (legacy shape): tokens, token_logprobs <= 0, top_logprobs of 2 {token: logprob}, text_offset ascending',
    L && L.tokens.length === crun.ids.length && L.token_logprobs.length === L.tokens.length &&
    L.token_logprobs.every((x) => x <= 0) && L.top_logprobs.every((t) => Object.keys(t).length >= 1 && Object.keys(t).length <= 2) &&
    L.text_offset.every((o, i) => Number.isInteger(o) && (i === 0 || o >= L.text_offset[i - 1])), short(L));
  const one = await client.completions.create({ ...creq, prompt: [creq.prompt] });
  check('completions: a list of one string = the string', one.choices[0].text === cch.text);
  const cst = await sse(s, '/v1/completions', { ...creq, stream: true, stream_options: { include_usage: true } });
  const ctext = cst.chunks.filter((ch) => ch.choices.length).map((ch) => ch.choices[0].text ?? '').join('');
  check('completions streamed: the same text, one id, object text_completion, [DONE] last',
    cst.status === 200 && ctext === cch.text && new Set(cst.chunks.map((ch) => ch.id)).size === 1 &&
    cst.chunks.every((ch) => ch.object === 'text_completion') && cst.events.at(-1)?.done === true, short(ctext));
  check('completions streamed: the usage chunk equals the usage', eqJSON(cst.chunks.at(-1)?.usage?.completion_tokens, cc.usage.completion_tokens));
  return { req, reply: a, run };
}

function streamInvariants(name, st, full, { usage }) {
  check(`${name}: 200, Content-Type text/event-stream, Cache-Control no-cache`,
    st.status === 200 && /^text\/event-stream/.test(st.headers['content-type'] ?? '') && /no-cache/.test(st.headers['cache-control'] ?? ''),
    short(st.headers));
  check(`${name}: every event is "data: {json}" or a comment, the body valid UTF-8`,
    st.malformed.length === 0 && strictUtf8(st.bytes), short(st.malformed));
  const ch = st.chunks;
  const first = ch[0];
  check(`${name}: one id, created, model and system_fingerprint on every chunk, object chat.completion.chunk`,
    ch.length > 2 && ch.every((x) => x.id === first.id && x.created === first.created && x.model === first.model &&
      x.system_fingerprint === first.system_fingerprint && x.object === 'chat.completion.chunk') &&
    /^chatcmpl-[0-9a-f]{24}$/.test(first.id) && first.model === full.model && first.system_fingerprint === full.system_fingerprint);
  check(`${name}: the first chunk's delta is {"role":"assistant","content":""}`,
    eqJSON(first?.choices?.[0]?.delta, { role: 'assistant', content: '' }), short(first));
  const withChoice = ch.filter((x) => x.choices.length);
  const last = withChoice.at(-1);
  check(`${name}: finish_reason only on the last choice chunk, delta {} there, with the tinylm entry`,
    withChoice.slice(0, -1).every((x) => x.choices[0].finish_reason === null) &&
    last?.choices[0].finish_reason === full.choices[0].finish_reason && eqJSON(last.choices[0].delta, {}) &&
    last.tinylm?.receipt_id === full.tinylm.choices[0].receipt_id, short(last));
  const content = withChoice.map((x) => x.choices[0].delta.content ?? '').join('');
  check(`${name}: the deltas joined = the non-streamed content`, content === full.choices[0].message.content,
    `${short(content)} vs ${short(full.choices[0].message.content)}`);
  if (full.choices[0].logprobs) {
    const lps = withChoice.flatMap((x) => x.choices[0].logprobs?.content ?? []);
    check(`${name}: the chunks' logprobs joined = the non-streamed logprobs`, eqJSON(lps, full.choices[0].logprobs.content),
      `${lps.length} vs ${full.choices[0].logprobs.content.length}`);
  }
  if (usage) {
    const u = ch.at(-1);
    check(`${name}: the last chunk has choices [] and the usage`, u?.choices.length === 0 &&
      u.usage?.prompt_tokens === full.usage.prompt_tokens && u.usage.completion_tokens === full.usage.completion_tokens &&
      u.usage.total_tokens === full.usage.total_tokens, short(u));
  }
  check(`${name}: data: [DONE] is the last event`, st.events.at(-1)?.done === true && st.events.filter((e) => e.done).length === 1);
}

// Stop strings from an unconstrained reply; multibyte text across chunks.
async function stops(s, client) {
  // A reply holding a valid 2..4-byte UTF-8 sequence split across tokens,
  // found by seed (the tiny random model writes raw bytes).
  let base = null;
  let split = null;
  for (let seed = 100; seed < 140 && !split; seed++) {
    const req = { messages: [{ role: 'user', content: 'Say something long.' }], max_tokens: 48, ...SAMPLING, seed, logprobs: true };
    const r = await client.chat.completions.create(req);
    const toks = r.choices[0].logprobs.content.map((e) => e.bytes);
    base ??= { req, r, toks };
    const raw = toks.flat();
    const ends = [];
    let at = 0;
    for (const t of toks) ends.push((at += t.length));
    for (let i = 0; i < raw.length && !split; i++) {
      const n = raw[i] >= 0xf0 && raw[i] < 0xf5 ? 4 : raw[i] >= 0xe0 && raw[i] < 0xf0 ? 3 : raw[i] >= 0xc2 && raw[i] < 0xe0 ? 2 : 0;
      if (n && i + n <= raw.length && strictUtf8(raw.slice(i, i + n)) && ends.some((e) => e > i && e < i + n)) {
        split = { req, r, char: lossy(raw.slice(i, i + n)) };
      }
    }
  }
  if (check('a sampled reply with a UTF-8 sequence split across two tokens (seeds 100..139)', split)) {
    const st = await sse(s, '/v1/chat/completions', { ...split.req, stream: true });
    const deltas = st.chunks.filter((x) => x.choices.length).map((x) => x.choices[0].delta.content ?? '');
    check(`multibyte: streamed, ${JSON.stringify(split.char)} arrives whole in one chunk, the deltas joined = the content`,
      deltas.some((d) => d.includes(split.char)) && deltas.join('') === split.r.choices[0].message.content &&
      deltas.every((d) => !/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(d)), short(deltas));
  }
  // Stop candidates from base: inside one token, straddling a boundary, multibyte.
  const { req, toks } = base;
  const raw = toks.flat();
  const starts = [];
  let at = 0;
  for (const t of toks) { starts.push(at); at += t.length; }
  // Not in a control token's text (<|im_start|>, ...): those are not content.
  const control = new Set();
  toks.forEach((t, k) => { if (/^<\|[a-z_]+\|>$/.test(lossy(t))) for (let j = 0; j < t.length; j++) control.add(starts[k] + j); });
  const printable = (b) => b >= 0x20 && b < 0x7f;
  const cands = [];
  const add = (from, len, why) => {
    const b = raw.slice(from, from + len);
    if (from > 0 && b.every((_, j) => !control.has(from + j)) && strictUtf8(b) && !cands.some((c) => c.s === lossy(b))) cands.push({ s: lossy(b), why });
  };
  for (let i = 1; i + 2 <= raw.length; i++) {
    const inTok = starts.find((st, k) => st <= i && i + 2 <= st + toks[k].length);
    const straddle = starts.some((st) => st > i && st < i + 3);
    if (printable(raw[i]) && printable(raw[i + 1]) && inTok !== undefined && !cands.some((c) => c.why === 'inside one token')) add(i, 2, 'inside one token');
    if (i + 3 <= raw.length && [0, 1, 2].every((k) => printable(raw[i + k])) && straddle && !cands.some((c) => c.why === 'straddling tokens')) add(i, 3, 'straddling tokens');
    if (raw[i] >= 0xc2 && !cands.some((c) => c.why === 'multibyte')) for (const n of [2, 3, 4]) if (strictUtf8(raw.slice(i, i + n))) { add(i, n, 'multibyte'); break; }
  }
  check('stop candidates: at least one inside a token and one straddling two tokens',
    cands.some((c) => c.why === 'inside one token') && cands.some((c) => c.why === 'straddling tokens'), short(cands));
  cands.push({ s: [cands.at(-1)?.s ?? 'zz', '\u0001\u0002never'].join(''), why: 'a prefix of the reply that never completes' });
  for (const c of cands) {
    const r = { ...req, stop: c.s };
    const want = runChat(TINY, r);
    const full = await client.chat.completions.create(r);
    const st = await sse(s, '/v1/chat/completions', { ...r, stream: true });
    const deltas = st.chunks.filter((x) => x.choices.length).map((x) => x.choices[0].delta.content ?? '');
    const name = `stop ${JSON.stringify(c.s)} (${c.why})`;
    check(`${name}: content = tinylm run --stop's text, finish_reason/stop as run's`, full.choices[0].message.content === want.answer &&
      full.choices[0].finish_reason === (want.stop === 'max_tokens' ? 'length' : 'stop') && full.tinylm.choices[0].stop === want.stop,
      `${short(full.choices[0].message.content)} vs ${short(want.answer)} (${want.stop})`);
    check(`${name}: streamed deltas joined = content, so no chunk carried any of the stop string`,
      deltas.join('') === full.choices[0].message.content && st.events.at(-1)?.done === true, short(deltas));
    if (want.stop === 'stop_string') check(`${name}: the content holds no stop string`, !full.choices[0].message.content.includes(c.s));
  }
  // A list: the earliest match wins.
  if (cands.length >= 3) {
    const list = cands.slice(0, 3).map((c) => c.s);
    const want = runChat(TINY, { ...req, stop: list });
    const got = await client.chat.completions.create({ ...req, stop: list });
    check('stop list of 3: content = tinylm run with the three --stop', got.choices[0].message.content === want.answer);
  }
}

async function tools(s, client) {
  const tl = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const msgs = [{ role: 'user', content: 'Weather in Paris?' }];
  const withT = render(TINY, { messages: msgs, tools: tl });
  const without = render(TINY, { messages: msgs });
  const at = await post(s, '/apply-template', { messages: msgs, tools: tl });
  check('/apply-template with tools = tinylm render with the tools', at.status === 200 && at.json?.prompt === withT.text,
    short(at.json ?? at.text));
  check('the rendered tools are in the prompt (the template\'s <tools> block)', withT.text.includes('get_weather') && !without.text.includes('get_weather'));
  const req = { messages: msgs, tools: tl, max_tokens: 24, ...SAMPLING, seed: 5 };
  const r = await client.chat.completions.create(req);
  check('chat with tools: prompt_tokens = render with the tools', r.usage.prompt_tokens === withT.ids.length,
    `${r.usage.prompt_tokens} vs ${withT.ids.length}`);
  const none = await client.chat.completions.create({ ...req, tool_choice: 'none' });
  check('tool_choice "none": the tools are left out (prompt_tokens = render without them)', none.usage.prompt_tokens === without.ids.length);
  const run = runChat(TINY, req);
  const c = r.choices[0];
  if (!run.text.includes('<tool_call>')) {
    check('chat with tools, a reply without <tool_call>: content = tinylm run\'s, no tool_calls, finish_reason not tool_calls',
      c.message.content === run.answer && !c.message.tool_calls?.length && c.finish_reason !== 'tool_calls', short(c));
  } else {
    check('chat with tools, a reply with <tool_call>: tool_calls present', c.message.tool_calls?.length > 0, short(c));
  }
  // A whole tool round: the assistant's call and the tool's answer render as the template says.
  const round = [...msgs,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21}' }];
  // The server renders an assistant's null content beside tool_calls as "" (the template tests `'</think>' in content`).
  const rr = render(TINY, { messages: round.map((m) => (m.content === null ? { ...m, content: '' } : m)), tools: tl });
  const ar = await post(s, '/apply-template', { messages: round, tools: tl });
  check('/apply-template of a tool round (assistant tool_calls, a tool message) = tinylm render',
    ar.json?.prompt === rr.text && rr.text.includes('<tool_call>') && rr.text.includes('<tool_response>'), short(ar.json ?? ar.text));
  const after = await client.chat.completions.create({ ...req, messages: round });
  const afterRun = runChat(TINY, { ...req, messages: round.map((m) => (m.content === null ? { ...m, content: '' } : m)) });
  check('chat after a tool round: content = tinylm run on the same conversation', after.choices[0].message.content === afterRun.answer ||
    after.choices[0].finish_reason === 'tool_calls', short(after.choices[0]));
  // Streamed with tools: the same reply.
  const st = await sse(s, '/v1/chat/completions', { ...req, stream: true });
  const deltas = st.chunks.filter((x) => x.choices.length).map((x) => x.choices[0].delta.content ?? '').join('');
  check('chat with tools streamed: deltas = the content', deltas === (c.message.content ?? ''), short(deltas));
  // Required calls under the token mask (this ASan build; tests/serve/structured_test.mjs
  // covers structured output on the demo model): the random model's one call is well formed,
  // its arguments valid for the tool's parameters (ajv), streamed the same.
  const params = { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'], additionalProperties: false };
  const forced = { ...req, tools: [{ type: 'function', function: { name: 'get_weather', parameters: params } }], tool_choice: 'required',
    parallel_tool_calls: false, temperature: 1, max_tokens: 200 };
  const fr = (await client.chat.completions.create(forced)).choices[0];
  const call = fr.message.tool_calls?.[0];
  const validate = new Ajv().compile(params);
  check('tool_choice required: one call of get_weather, arguments valid by ajv, content null, finish_reason tool_calls',
    fr.finish_reason === 'tool_calls' && fr.message.content === null && fr.message.tool_calls.length === 1 && call.function.name === 'get_weather' &&
    validate(JSON.parse(call.function.arguments)), short(fr));
  const fst = await sse(s, '/v1/chat/completions', { ...forced, stream: true });
  const fcalls = fst.chunks.flatMap((x) => x.choices[0]?.delta?.tool_calls ?? []);
  check('tool_choice required streamed: the same call in one delta.tool_calls chunk',
    fcalls.length === 1 && fcalls[0].function.arguments === call?.function.arguments && fst.events.at(-1)?.done === true, short(fcalls));
}

async function errors(s, client) {
  const bad = [
    ['bad JSON', '/v1/chat/completions', '{"messages": [', 'invalid_json', undefined],
    ['a body that is not UTF-8', '/v1/chat/completions', Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]), 'invalid_utf8', undefined],
    ['a body that is not an object', '/v1/chat/completions', '[1,2]', undefined, undefined],
    ['messages missing', '/v1/chat/completions', {}, undefined, 'messages'],
    ['messages empty', '/v1/chat/completions', { messages: [] }, 'invalid_value', 'messages'],
    ['an unknown role', '/v1/chat/completions', { messages: [{ role: 'robot', content: 'x' }] }, undefined, 'messages[0].role'],
    ['content a number', '/v1/chat/completions', { messages: [{ role: 'user', content: 5 }] }, 'invalid_type', 'messages[0].content'],
    ['temperature a string', '/v1/chat/completions', { messages: CONV1, temperature: 'hot' }, 'invalid_type', 'temperature'],
    ['temperature 2.5', '/v1/chat/completions', { messages: CONV1, temperature: 2.5 }, 'invalid_value', 'temperature'],
    ['top_p 1.5', '/v1/chat/completions', { messages: CONV1, top_p: 1.5 }, 'invalid_value', 'top_p'],
    ['top_k past the vocabulary', '/v1/chat/completions', { messages: CONV1, top_k: 347 }, 'invalid_value', 'top_k'],
    ['min_p -0.1', '/v1/chat/completions', { messages: CONV1, min_p: -0.1 }, 'invalid_value', 'min_p'],
    ['repeat_penalty 0', '/v1/chat/completions', { messages: CONV1, repeat_penalty: 0 }, 'invalid_value', 'repeat_penalty'],
    ['max_tokens 0', '/v1/chat/completions', { messages: CONV1, max_tokens: 0 }, 'invalid_value', 'max_tokens'],
    ['max_tokens 1.5', '/v1/chat/completions', { messages: CONV1, max_tokens: 1.5 }, undefined, 'max_tokens'],
    ['seed -1', '/v1/chat/completions', { messages: CONV1, seed: -1 }, 'invalid_value', 'seed'],
    ['n 0', '/v1/chat/completions', { messages: CONV1, n: 0 }, 'invalid_value', 'n'],
    ['n 17', '/v1/chat/completions', { messages: CONV1, n: 17 }, 'invalid_value', 'n'],
    ['top_logprobs 21', '/v1/chat/completions', { messages: CONV1, logprobs: true, top_logprobs: 21 }, 'invalid_value', 'top_logprobs'],
    ['top_logprobs without logprobs', '/v1/chat/completions', { messages: CONV1, top_logprobs: 2 }, undefined, 'top_logprobs'],
    ['stop: 9 strings', '/v1/chat/completions', { messages: CONV1, stop: Array.from({ length: 9 }, (_, i) => `s${i}`) }, undefined, 'stop'],
    ['stop: an empty string', '/v1/chat/completions', { messages: CONV1, stop: '' }, undefined, 'stop'],
    ['stop: 257 bytes', '/v1/chat/completions', { messages: CONV1, stop: 'x'.repeat(257) }, undefined, 'stop'],
    ['presence_penalty 2.5', '/v1/chat/completions', { messages: CONV1, presence_penalty: 2.5 }, 'invalid_value', 'presence_penalty'],
    ['frequency_penalty -3', '/v1/chat/completions', { messages: CONV1, frequency_penalty: -3 }, 'invalid_value', 'frequency_penalty'],
    ['logit_bias 500', '/v1/chat/completions', { messages: CONV1, logit_bias: { 5: 500 } }, 'invalid_value', 'logit_bias'],
    ['logit_bias on an id past the vocabulary', '/v1/chat/completions', { messages: CONV1, logit_bias: { 346: -100 } }, undefined, undefined],
    ['response_format xml', '/v1/chat/completions', { messages: CONV1, response_format: { type: 'xml' } }, 'unsupported_value', 'response_format.type'],
    ['tool_choice required without tools', '/v1/chat/completions', { messages: CONV1, tool_choice: 'required' }, 'invalid_value', 'tool_choice'],
    ['stream_options without stream', '/v1/chat/completions', { messages: CONV1, stream_options: { include_usage: true } }, undefined, 'stream_options'],
    ['chat_template_kwargs with another key', '/v1/chat/completions', { messages: CONV1, chat_template_kwargs: { foo: 1 } }, undefined, undefined],
    ['an unknown field', '/v1/chat/completions', { messages: CONV1, frobnicate: 1 }, 'unknown_parameter', 'frobnicate'],
    ['completions: echo true', '/v1/completions', { prompt: 'x', echo: true }, 'unsupported_value', 'echo'],
    ['completions: best_of 2', '/v1/completions', { prompt: 'x', best_of: 2 }, undefined, 'best_of'],
    ['completions: suffix', '/v1/completions', { prompt: 'x', suffix: 'y' }, undefined, 'suffix'],
    ['completions: logprobs 6', '/v1/completions', { prompt: 'x', logprobs: 6 }, 'invalid_value', 'logprobs'],
    ['completions: a list of two prompts', '/v1/completions', { prompt: ['a', 'b'] }, undefined, 'prompt'],
    ['/detokenize: an id past the vocabulary', '/detokenize', { tokens: [346] }, 'invalid_value', undefined],
    ['/detokenize: a negative id', '/detokenize', { tokens: [-1] }, undefined, undefined],
    ['/tokenize: content a number', '/tokenize', { content: 1 }, 'invalid_type', 'content'],
  ];
  for (const [what, path, body, code, param] of bad) {
    const r = await post(s, path, body);
    check(`400 for ${what}: invalid_request_error${code ? ` ${code}` : ''}${param ? ` param ${param}` : ''}`,
      errorShape(r, 400, 'invalid_request_error', code, param), `${r.status} ${short(r.text)}`);
  }
  // Past the context (1024 per slot): the prompt alone, and prompt + max_tokens.
  const long = { messages: [{ role: 'user', content: 'word '.repeat(400) }] };
  const r1 = await post(s, '/v1/chat/completions', long);
  check('400 context_length_exceeded for a prompt past the context, its message naming the token counts and the context',
    errorShape(r1, 400, 'invalid_request_error', 'context_length_exceeded') && /\b1024\b/.test(r1.json.error.message) &&
    /\d{4}/.test(r1.json.error.message.replace('1024', '')), short(r1.json));
  const r2 = await post(s, '/v1/chat/completions', { messages: CONV1, max_tokens: 5000 });
  check('400 context_length_exceeded for prompt + max_tokens past the context', errorShape(r2, 400, 'invalid_request_error', 'context_length_exceeded') &&
    /5000/.test(r2.json.error.message), short(r2.json));
  // The client sees OpenAI's error classes.
  let e = null;
  try { await client.chat.completions.create({ messages: CONV1, temperature: 9 }); } catch (x) { e = x; }
  check('the openai client raises BadRequestError (400) with the code and param', e instanceof OpenAI.BadRequestError &&
    e.status === 400 && e.code === 'invalid_value' && e.param === 'temperature', short(e?.message));
  // 404, 405, 413.
  const nf = await raw(s, 'GET', '/v1/nothing', { headers: auth });
  check('404 not_found for an unknown path', errorShape(nf, 404, 'invalid_request_error', 'not_found'), short(nf.text));
  const ma = await raw(s, 'GET', '/v1/chat/completions', { headers: auth });
  check('405 method_not_allowed for GET /v1/chat/completions, Allow: POST', errorShape(ma, 405, 'invalid_request_error', 'method_not_allowed') &&
    /POST/.test(ma.headers.allow ?? ''), `${ma.status} ${short(ma.headers.allow)} ${short(ma.text)}`);
  const mb = await raw(s, 'POST', '/v1/models', { headers: auth, body: {} });
  check('405 for POST /v1/models, Allow: GET', mb.status === 405 && /GET/.test(mb.headers.allow ?? ''), `${mb.status}`);
  const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(70000) }] });
  const tl = await post(s, '/v1/chat/completions', big);
  check('413 request_too_large for a body over --max-body-bytes 65536', errorShape(tl, 413, 'invalid_request_error', 'request_too_large'),
    `${tl.status} ${short(tl.text)}`);
  const deep = await post(s, '/v1/chat/completions', `${'['.repeat(20000)}${']'.repeat(20000)}`);
  check('400 for JSON nested 20000 deep (under the body cap)', errorShape(deep, 400, 'invalid_request_error'), `${deep.status} ${short(deep.text)}`);
  // A chunked body (no Content-Length) over the cap: 413 too.
  const chunked = await new Promise((res) => {
    const rq = httpRequest({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/v1/chat/completions',
      headers: { ...auth, 'Content-Type': 'application/json' } }, (r) => {
      const parts = [];
      r.on('data', (d) => parts.push(d));
      r.on('end', () => res({ status: r.statusCode, headers: r.headers, text: Buffer.concat(parts).toString(), json: JSON.parse(Buffer.concat(parts).toString() || 'null') }));
    });
    rq.on('error', (e) => res({ status: 0, headers: {}, text: String(e) }));
    for (let i = 0; i < 80; i++) rq.write('x'.repeat(1000));
    rq.end();
  });
  check('413 request_too_large for a chunked body over --max-body-bytes', errorShape(chunked, 413, 'invalid_request_error', 'request_too_large'),
    `${chunked.status} ${short(chunked.text)}`);
  // Clients that send half a request and stall do not hold up the others.
  const stalled = await Promise.all(Array.from({ length: 20 }, () => new Promise((res) => {
    const sock = connect(s.port, '127.0.0.1', () => {
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Length: 1000\r\n\r\n{"mess`);
      res(sock);
    });
    sock.on('error', () => {});
  })));
  const t0 = Date.now();
  const beside = await post(s, '/v1/chat/completions', { messages: CONV1, max_tokens: 4 });
  check('20 clients stalled mid-body: another request is still answered (200) within 5 s', beside.status === 200 && Date.now() - t0 < 5000,
    `${beside.status} after ${Date.now() - t0} ms`);
  for (const sock of stalled) sock.destroy();
  // Garbage after the errors: the server still answers correctly.
  const h = await raw(s, 'GET', '/health');
  check('after every error: /health 200, nothing busy', h.status === 200 && h.json.slots_processing === 0, short(h.json));
}

async function keysAndCors(s) {
  const models = (headers) => raw(s, 'GET', '/v1/models', { headers });
  check('API key: Authorization: Bearer KEY -> 200', (await models({ Authorization: `Bearer ${KEY}` })).status === 200);
  check('API key: X-Api-Key: KEY -> 200', (await models({ 'X-Api-Key': KEY })).status === 200);
  for (const [what, h] of [['no key', {}], ['a wrong Bearer key', { Authorization: `Bearer ${KEY}x` }],
    ['a wrong X-Api-Key', { 'X-Api-Key': 'sk-test-0123456788' }], ['a key that is a prefix', { Authorization: `Bearer ${KEY.slice(0, -1)}` }],
    ['a Basic scheme', { Authorization: `Basic ${KEY}` }]]) {
    const r = await models(h);
    check(`API key: ${what} -> 401 authentication_error invalid_api_key`, errorShape(r, 401, 'authentication_error', 'invalid_api_key'),
      `${r.status} ${short(r.text)}`);
  }
  for (const [m, p] of [['POST', '/v1/chat/completions'], ['POST', '/tokenize'], ['GET', '/metrics']]) {
    const r = await raw(s, m, p, { body: m === 'POST' ? { messages: CONV1, content: 'x' } : undefined });
    check(`API key: ${m} ${p} without it -> 401`, r.status === 401, `${r.status}`);
  }
  const hz = await raw(s, 'GET', '/health');
  check('API key: /health needs none', hz.status === 200);
  let e = null;
  try { await new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'wrong', maxRetries: 0 }).models.list(); } catch (x) { e = x; }
  check('the openai client with a wrong key raises AuthenticationError (401)', e instanceof OpenAI.AuthenticationError && e.status === 401,
    short(e?.message));

  // CORS
  const pre = await raw(s, 'OPTIONS', '/v1/chat/completions', { headers: { Origin: ORIGIN,
    'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' } });
  const hd = pre.headers;
  check('CORS preflight from an allowed origin, no key: 204, the origin echoed, methods, headers, max-age 600, Vary: Origin',
    pre.status === 204 && hd['access-control-allow-origin'] === ORIGIN && /GET/.test(hd['access-control-allow-methods']) &&
    /POST/.test(hd['access-control-allow-methods']) && /OPTIONS/.test(hd['access-control-allow-methods']) &&
    /authorization/i.test(hd['access-control-allow-headers']) && /content-type/i.test(hd['access-control-allow-headers']) &&
    /x-api-key/i.test(hd['access-control-allow-headers']) && hd['access-control-max-age'] === '600' && /origin/i.test(hd.vary ?? ''),
    `${pre.status} ${short(hd)}`);
  const no = await raw(s, 'OPTIONS', '/v1/chat/completions', { headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' } });
  check('CORS preflight from another origin: 403, no CORS headers', no.status === 403 && no.headers['access-control-allow-origin'] === undefined,
    `${no.status} ${short(no.headers)}`);
  const g = await raw(s, 'GET', '/v1/models', { headers: { ...auth, Origin: ORIGIN } });
  check('CORS: a request from the allowed origin gets Access-Control-Allow-Origin = it and Vary: Origin',
    g.status === 200 && g.headers['access-control-allow-origin'] === ORIGIN && /origin/i.test(g.headers.vary ?? ''), short(g.headers));
  const g2 = await raw(s, 'GET', '/v1/models', { headers: { ...auth, Origin: 'http://evil.example' } });
  check('CORS: a request from another origin gets no Access-Control-Allow-Origin', g2.headers['access-control-allow-origin'] === undefined);
  const ge = await raw(s, 'GET', '/v1/models', { headers: { Origin: ORIGIN } });
  check('CORS: a 401 to the allowed origin still carries the CORS header (the browser can read the error)',
    ge.status === 401 && ge.headers['access-control-allow-origin'] === ORIGIN, short(ge.headers));
}

async function textEndpoints(s, vocab, tokBytes) {
  const text = 'Hello world, héllo 🙂 <|im_end|> tail';
  const enc = JSON.parse(cli('encode', TINY, '--text', text, '--json'));
  const t = await post(s, '/tokenize', { content: text });
  check('/tokenize = tinylm encode', t.status === 200 && eqJSON(t.json?.tokens, enc.ids), `${short(t.json)} vs ${short(enc.ids)}`);
  const tp = await post(s, '/tokenize', { content: text, with_pieces: true });
  const pieces = tp.json?.tokens ?? [];
  check('/tokenize with_pieces: the ids of tinylm encode, each piece its bytes (text when valid UTF-8 alone, else a byte list)',
    eqJSON(pieces.map((p) => p.id), enc.ids) && pieces.every((p) => {
      const b = tokBytes[p.id];
      return typeof p.piece === 'string' ? strictUtf8(b) && p.piece === lossy(b) : !strictUtf8(b) && eqJSON(p.piece, b);
    }), short(pieces));
  check('/tokenize with_pieces: the pieces\' bytes joined = the text', lossy(pieces.flatMap((p) => typeof p.piece === 'string' ? utf8(p.piece) : p.piece)) === text);
  const d = await post(s, '/detokenize', { tokens: enc.ids });
  check('/detokenize(tokenize(text)) = text', d.json?.content === text, short(d.json));
  const ids = [235, 153, 31, 312, 161];
  const dec = JSON.parse(cli('decode', TINY, '--ids', ids.join(' '), '--mode', 'raw', '--json'));
  const d2 = await post(s, '/detokenize', { tokens: ids });
  check('/detokenize of ids with invalid UTF-8 = tinylm decode\'s bytes with U+FFFD for the invalid ones',
    d2.json?.content === lossy([...Buffer.from(dec.hex, 'hex')]), `${short(d2.json)}`);
  const d3 = await post(s, '/detokenize', { tokens: [] });
  check('/detokenize of [] = ""', d3.status === 200 && d3.json?.content === '');
  const conv = { messages: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'What is ' }, { type: 'text', text: 'a cat?' }] }] };
  const want = render(TINY, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a cat?' }] });
  const a = await post(s, '/apply-template', conv);
  check('/apply-template: developer -> system, text parts joined, = tinylm render (add_generation_prompt)',
    a.status === 200 && a.json?.prompt === want.text, `${short(a.json)} vs ${short(want.text)}`);
  const at = await post(s, '/apply-template', { ...conv, chat_template_kwargs: { enable_thinking: false } });
  const wt = render(TINY, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a cat?' }], enable_thinking: false });
  check('/apply-template with enable_thinking false = tinylm render with it', at.json?.prompt === wt.text && wt.text !== want.text, short(at.json));
  // No chat_template_kwargs: the template's own default, thinking on (as
  // tinylm run and chat), the same prompt as enable_thinking true.
  const on = render(TINY, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a cat?' }], enable_thinking: true });
  check('/apply-template without chat_template_kwargs = render with enable_thinking true (thinking on by default)',
    a.json?.prompt === on.text, `${short(a.json)} vs ${short(on.text)}`);
}

async function metricsAndReceipts(s, client, receiptDir) {
  const m0 = await metrics(s);
  const names = ['tinylm_prompt_tokens_total', 'tinylm_prompt_cached_tokens_total', 'tinylm_tokens_predicted_total',
    'tinylm_prompt_seconds_total', 'tinylm_tokens_predicted_seconds_total', 'tinylm_requests_processing', 'tinylm_requests_queued',
    'tinylm_requests_rejected_total', 'tinylm_requests_total', 'tinylm_requests_cancelled_total', 'tinylm_slots_busy',
    'tinylm_decode_batches_total', 'tinylm_decode_batched_tokens_total', 'tinylm_decode_step_seconds_total',
    'tinylm_prefill_chunk_seconds_total'];
  check('/metrics: 200 text/plain; version=0.0.4, every counter', m0._response.status === 200 &&
    /^text\/plain; version=0\.0\.4/.test(m0._response.headers['content-type'] ?? '') && names.every((n) => Number.isFinite(m0[n])),
    short(names.filter((n) => !Number.isFinite(m0[n]))));
  check('/metrics: # TYPE lines (counter/gauge)', /# TYPE tinylm_requests_total counter/.test(m0._response.text) &&
    /# TYPE tinylm_slots_busy gauge/.test(m0._response.text));
  const r = await client.chat.completions.create({ messages: [{ role: 'user', content: 'metrics please' }], max_tokens: 12, ...SAMPLING, seed: 77 });
  const m1 = await metrics(s);
  const u = r.usage;
  // requests_total counts HTTP requests: the chat and the second /metrics.
  check('/metrics after one request: requests_total +2 (the chat, this /metrics)',
    m1.tinylm_requests_total - m0.tinylm_requests_total === 2, `${m1.tinylm_requests_total - m0.tinylm_requests_total}`);
  check('/metrics after one request: tokens_predicted_total + completion_tokens',
    m1.tinylm_tokens_predicted_total - m0.tinylm_tokens_predicted_total === u.completion_tokens,
    `${m1.tinylm_tokens_predicted_total - m0.tinylm_tokens_predicted_total} vs ${short(u)}`);
  check('/metrics after one request: prompt_cached_tokens_total + cached_tokens',
    m1.tinylm_prompt_cached_tokens_total - m0.tinylm_prompt_cached_tokens_total === u.prompt_tokens_details.cached_tokens);
  check('/metrics after one request: prompt tokens + the computed ones, cached + the cached ones',
    m1.tinylm_prompt_tokens_total - m0.tinylm_prompt_tokens_total === u.prompt_tokens - u.prompt_tokens_details.cached_tokens ||
    m1.tinylm_prompt_tokens_total - m0.tinylm_prompt_tokens_total === u.prompt_tokens, `${m1.tinylm_prompt_tokens_total - m0.tinylm_prompt_tokens_total} vs ${short(u)}`);
  check('/metrics: seconds totals grew, decode batches counted, nothing busy after', m1.tinylm_tokens_predicted_seconds_total >= m0.tinylm_tokens_predicted_seconds_total &&
    m1.tinylm_decode_batches_total > m0.tinylm_decode_batches_total && m1.tinylm_slots_busy === 0 && m1.tinylm_requests_processing === 0);
  // Receipts kept by --receipt-dir verify and name the reply's receipt id.
  const id = r.tinylm.choices[0].receipt_id;
  const files = existsSync(receiptDir) ? readdirSync(receiptDir).filter((f) => f.includes(id)) : [];
  if (check('--receipt-dir: a file named by the reply\'s receipt id', files.length === 1, short(existsSync(receiptDir) ? readdirSync(receiptDir) : 'no dir'))) {
    let shown = null;
    try { shown = JSON.parse(cli('receipt', 'show', join(receiptDir, files[0]), '--json')); } catch (x) { shown = { error: String(x) }; }
    check('--receipt-dir: tinylm receipt show verifies it, its root = the receipt id', shown?.verified === true && shown.root === id, short(shown));
  }
}

// The fixed sampled request alone, beside others, as a cache hit, on
// another -t, and against tinylm run.
async function determinism(sA, sB, model, tag) {
  const SEED = 4242;
  const req = { model: 'm', messages: [{ role: 'system', content: `Determinism ${tag}.` }, { role: 'user', content: 'Tell me a story about a lighthouse.' }],
    max_tokens: 40, ...SAMPLING, seed: SEED, logprobs: true, top_logprobs: 2 };
  const go = (s, body) => post(s, '/v1/chat/completions', body).then((r) => r.json);
  const alone = await go(sA, req);
  if (!check(`${tag} determinism: the request succeeds`, alone?.choices?.length === 1, short(alone))) return;
  const A = essence(alone);
  const run = runChat(model, req);
  check(`${tag} determinism: = tinylm run (text, receipt id)`, A.content === run.answer && A.receipt === run.receipt_id,
    `${short(A.content, 80)} / ${A.receipt} vs ${short(run.answer, 80)} / ${run.receipt_id}`);
  const mB0 = await metrics(sA);
  for (const others of [1, 2, 3]) {
    // Others first (longer, so they overlap the request's whole life), then the request.
    const bg = Array.from({ length: others }, (_, k) => go(sA, { messages: [{ role: 'user', content: `Other ${tag} ${others} ${k} ${'z'.repeat(k * 5)}` }],
      max_tokens: 120, ...SAMPLING, seed: 900 + k }));
    await sleep(5);
    const mine = await go(sA, req);
    const bgr = await Promise.all(bg);
    check(`${tag} determinism: beside ${others} other request(s): the same content, token bytes, logprobs, receipt id`,
      mine?.choices && sameEssence(essence(mine), A), mine?.choices ? diffEssence(essence(mine), A) : short(mine));
    check(`${tag} determinism: the ${others} other(s) succeeded`, bgr.every((r) => r?.choices?.length === 1), short(bgr));
  }
  const mB1 = await metrics(sA);
  const batches = mB1.tinylm_decode_batches_total - mB0.tinylm_decode_batches_total;
  const btok = mB1.tinylm_decode_batched_tokens_total - mB0.tinylm_decode_batched_tokens_total;
  check(`${tag} determinism: decode passes served several sequences at once (batched tokens ${btok} > passes ${batches})`, btok > batches);
  const hit = await go(sA, req);
  check(`${tag} determinism: repeated, a prefix-cache hit (cached_tokens > 0) with the same bits`,
    hit?.usage?.prompt_tokens_details?.cached_tokens > 0 && sameEssence(essence(hit), A),
    `${short(hit?.usage)} ${hit?.choices ? diffEssence(essence(hit), A) : ''}`);
  const other = await go(sB, req);
  check(`${tag} determinism: on the server with another -t: the same bits`, other?.choices && sameEssence(essence(other), A),
    other?.choices ? diffEssence(essence(other), A) : short(other));
  check(`${tag} determinism: token bytes = tinylm run's ids' bytes`, A.tokens.length === run.ids.length);
  const seed2 = await go(sA, { ...req, seed: SEED + 1 });
  check(`${tag} determinism: another seed, another receipt id`, seed2?.tinylm?.choices?.[0]?.receipt_id !== A.receipt &&
    typeof seed2?.tinylm?.choices?.[0]?.receipt_id === 'string');
  return { req, A };
}

async function cancellation(s, slowModel) {
  // A solo reference for "later requests still correct".
  const ref = { messages: [{ role: 'user', content: 'After the cancel.' }], max_tokens: 24, ...SAMPLING, seed: 31 };
  const refA = essence((await post(s, '/v1/chat/completions', ref)).json);
  // 1. Mid-stream: abort after a few content chunks of a long reply.
  const m0 = await metrics(s);
  const ac = new AbortController();
  let got = 0;
  let abortedAt = 0;
  const p = sse(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'A very long story.' }], max_tokens: 2000, ...SAMPLING, seed: 1, stream: true },
    { signal: ac.signal, onEvent: (e) => { if (e.data?.choices?.[0]?.delta?.content && ++got === 5) { abortedAt = Date.now(); ac.abort(); } } }).catch((e) => e);
  await p;
  const idle = await waitIdle(s, 3000);
  check('cancel mid-stream: the slot is free again within 3 s of the abort (slots_busy 0, nothing processing)',
    abortedAt > 0 && idle.ms !== null, `got ${got} chunks; ${short(idle.m)}`);
  check('cancel mid-stream: far fewer than 2000 tokens were generated',
    idle.m.tinylm_tokens_predicted_total - m0.tinylm_tokens_predicted_total < 1500, `${idle.m.tinylm_tokens_predicted_total - m0.tinylm_tokens_predicted_total}`);
  check('cancel mid-stream: tinylm_requests_cancelled_total +1', idle.m.tinylm_requests_cancelled_total - m0.tinylm_requests_cancelled_total === 1);
  // 2. Mid-prefill: a ~3000-token prompt; its solo prefill time first (another text of the same length).
  // A prompt whose prefill lasts about 4 s on this build (ASan is ~15x slower):
  // 100 words (~300 tokens) timed first, then at most 1000 (~3000 tokens).
  const prefillOf = async (w, n) => (await sse(s, '/v1/chat/completions', { messages: [{ role: 'user', content: `${w} `.repeat(n) }],
    max_tokens: 1, seed: 1, stream: true })).chunks.find((ch) => ch.tinylm)?.tinylm?.prefill_ms;
  const words = Math.max(100, Math.min(1000, Math.round((100 * 4000) / ((await prefillOf('ward', 100)) || 4000))));
  const longMsg = (w) => [{ role: 'user', content: `${w} `.repeat(words) }];
  const soloSt = await sse(s, '/v1/chat/completions', { messages: longMsg('wore'), max_tokens: 1, seed: 1, stream: true });
  const solo = { tinylm: { choices: [soloSt.chunks.find((ch) => ch.tinylm)?.tinylm] } };
  const prefillMs = solo.tinylm.choices[0]?.prefill_ms;
  if (prefillMs > 2500) {
    const firstPing = soloSt.events.findIndex((e) => e.comment !== undefined);
    const firstText = soloSt.events.findIndex((e) => e.data?.choices?.[0]?.delta?.content || e.data?.choices?.[0]?.finish_reason);
    check(`a streamed prefill of ${Math.round(prefillMs)} ms: ": ping" comments before the first token's chunk`,
      firstPing >= 0 && firstPing < firstText &&
      soloSt.events.filter((e) => e.comment !== undefined).every((e) => e.comment === ': ping'), short(soloSt.events.slice(0, 3)));
  } else {
    console.log(`skip: the long prefill took ${Math.round(prefillMs)} ms, under 2.5 s: no ping expected`);
  }
  if (check('cancel mid-prefill: the long prompt\'s solo prefill takes over 600 ms (else the test proves nothing)', prefillMs > 600, short(solo?.tinylm ?? solo))) {
    const m1 = await metrics(s);
    const ac2 = new AbortController();
    const p2 = sse(s, '/v1/chat/completions', { messages: longMsg('word'), max_tokens: 50, seed: 1, stream: true }, { signal: ac2.signal }).catch((e) => e);
    await sleep(Math.min(300, prefillMs / 4));
    const busy = await metrics(s);
    const t0 = Date.now();
    ac2.abort();
    await p2;
    const idle2 = await waitIdle(s, 3000);
    check('cancel mid-prefill: the slot was busy before the abort', busy.tinylm_slots_busy === 1, short(busy));
    check(`cancel mid-prefill: the slot is free again before the prefill could have ended (solo prefill ${Math.round(prefillMs)} ms)`,
      idle2.ms !== null && Date.now() - t0 < prefillMs * 0.75, `${Date.now() - t0} ms; ${short(idle2.m)}`);
    check('cancel mid-prefill: no token generated, cancelled_total +1', idle2.m.tinylm_tokens_predicted_total === m1.tinylm_tokens_predicted_total &&
      idle2.m.tinylm_requests_cancelled_total - m1.tinylm_requests_cancelled_total === 1);
  }
  // 3. A non-streamed request whose client goes away.
  const ac3 = new AbortController();
  const m3 = await metrics(s);
  const p3 = post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Non-streamed and abandoned.' }], max_tokens: 2000, seed: 2 }, auth,
    { signal: ac3.signal }).catch((e) => e);
  await sleep(150);
  ac3.abort();
  await p3;
  const idle3 = await waitIdle(s, 3000);
  check('cancel a non-streamed request (the client closes the connection): the slot is free within 3 s', idle3.ms !== null &&
    idle3.m.tinylm_requests_cancelled_total - m3.tinylm_requests_cancelled_total === 1, short(idle3.m));
  const after = essence((await post(s, '/v1/chat/completions', ref)).json);
  check('after the cancellations: a request equals its earlier solo reply', sameEssence(after, refA), diffEssence(after, refA));
  const h = await raw(s, 'GET', '/health');
  check('after the cancellations: /health 200, every slot idle', h.json?.slots_processing === 0, short(h.json));
}

async function overload(s) {
  const N = 12;
  const body = (i) => ({ messages: [{ role: 'user', content: `Client ${i} of the overload: ${'abcdefghijkl'[i]}` }], max_tokens: 400,
    ...SAMPLING, seed: 500 + i });
  // Solo replies first: the oracle for "nothing mixed up".
  const solo = [];
  for (let i = 0; i < N; i++) solo.push(essence((await post(s, '/v1/chat/completions', body(i))).json));
  const rss = [];
  for (let round = 1; round <= 3; round++) {
    const m0 = await metrics(s);
    const rs = await Promise.all(Array.from({ length: N }, (_, i) => post(s, '/v1/chat/completions', body(i), auth, { timeout: 120000 })));
    const ok = rs.filter((r) => r.status === 200).length;
    const busy = rs.filter((r) => r.status === 503);
    const m1 = await metrics(s);
    check(`overload round ${round}: ${N} clients at once on 2 slots + 2 queued: every reply 200 or 503, at least 4 served, some 503 (${ok} served)`,
      ok + busy.length === N && ok >= 4 && busy.length >= 1, short(rs.map((r) => r.status)));
    check(`overload round ${round}: each 503 is server_error queue_full with Retry-After`,
      busy.every((r) => errorShape(r, 503, 'server_error', 'queue_full') && /^\d+$/.test(r.headers['retry-after'] ?? '')), short(busy[0]?.text));
    check(`overload round ${round}: every 200 reply equals its client's solo reply (nothing mixed up)`,
      rs.every((r, i) => r.status !== 200 || sameEssence(essence(r.json), solo[i])),
      short(rs.map((r, i) => r.status === 200 && !sameEssence(essence(r.json), solo[i]) ? i : null).filter((x) => x !== null)));
    check(`overload round ${round}: /metrics requests_rejected_total + the 503s`, m1.tinylm_requests_rejected_total - m0.tinylm_requests_rejected_total === busy.length);
    rss.push(vmRssKb(s.pid));
  }
  const h = await raw(s, 'GET', '/health');
  check('after the overload: alive, every slot idle', h.status === 200 && h.json.slots_processing === 0 && s.exit === null);
  // Round 1 warms the slots and allocator; rounds 2 and 3 may not grow it by more than 8 MiB.
  check(`after the overload: RSS flat over rounds 2-3 (${rss.map((k) => Math.round(k / 1024)).join(' -> ')} MiB, bound +8 MiB)`,
    rss.every(Number.isFinite) && rss[2] - rss[0] < 8192, short(rss));
}

function makeSlowModel() {
  const hf = join(WORK, 'slow-hf');
  const out = join(WORK, 'slow.slm');
  rmSync(hf, { recursive: true, force: true });
  const cfg = join(WORK, 'slow.json');
  writeFileSync(cfg, JSON.stringify({ vocab_size: 346, hidden_size: 512, intermediate_size: 1536, num_hidden_layers: 8,
    num_attention_heads: 8, num_key_value_heads: 4, head_dim: 64, max_position_embeddings: 4096 }));
  cli('synth', '--config', cfg, '--seed', '5', '--dtype', 'bf16', '--tokenizer-dir', TINY_TOKENIZER, '-o', hf);
  rmSync(join(hf, 'generation_config.json'), { force: true }); // see tests/golden/slm/README.md
  cli('convert', hf, '-o', out, '--quant', 'q8', '--profile', 'qwen3-0.6b-publisher');
  return out;
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const receiptDir = join(WORK, 'receipts');
  mkdirSync(receiptDir);
  const vocab = 346;
  const tokBytes = vocabBytes(TINY, vocab);
  const a = await startServer('tiny -t 1', TINY, ['-t', '1', '--parallel', '2', '--queue', '2', '--ctx', '1024', '--api-key', KEY,
    '--cors-origin', ORIGIN, '--receipt-dir', receiptDir, '--max-body-bytes', '65536']);
  const client = new OpenAI({ baseURL: `${a.base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 120000 });
  const section = async (name, f) => {
    try { await f(); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
  };
  await section('basics', () => basics(a, client, vocab, tokBytes));
  await section('stops', () => stops(a, client));
  await section('tools', () => tools(a, client));
  await section('text endpoints', () => textEndpoints(a, vocab, tokBytes));
  await section('errors', () => errors(a, client));
  await section('keys and CORS', () => keysAndCors(a));
  await section('metrics and receipts', () => metricsAndReceipts(a, client, receiptDir));
  const keyFile = join(WORK, 'key');
  writeFileSync(keyFile, `${KEY}\n`);
  const b = await startServer('tiny -t 2', TINY, ['-t', '2', '--parallel', '2', '--queue', '2', '--ctx', '1024', '--api-key-file', keyFile]);
  check('--api-key-file: the key from the file (its newline dropped) is the key', (await raw(b, 'GET', '/v1/models', { headers: auth })).status === 200 &&
    (await raw(b, 'GET', '/v1/models', { headers: { Authorization: 'Bearer wrong' } })).status === 401);
  await section('tiny determinism', () => determinism(a, b, TINY, 'tiny'));
  await stopServer(b);
  await section('overload', () => overload(a));
  await stopServer(a);
  // The larger model: replies last long enough to overlap and to cancel.
  const slow = makeSlowModel();
  const c = await startServer('slow -t 1', slow, ['-t', '1', '--parallel', '4', '--queue', '4', '--ctx', '4096', '--api-key', KEY]);
  const d = await startServer('slow -t 2', slow, ['-t', '2', '--parallel', '2', '--ctx', '4096', '--api-key', KEY]);
  await section('slow determinism', () => determinism(c, d, slow, 'slow'));
  await stopServer(d, 'SIGINT');
  await section('cancellation', () => cancellation(c, slow));
  await stopServer(c);
}

await runSuite(main, { seconds: 600, log: 'servers.log' });
