// `tinylm serve` in a fleet (docs/deploy.md), on the demo model:
//   node tests/serve/fleet_test.mjs TINYLM WORKDIR
//
//   * the probes answer without the API key (a key is set);
//   * drain, one server alone (one slot): SIGTERM while a stream runs and
//     another waits in the queue (the KV gauge above 0 meanwhile):
//     /health/ready turns 503 "draining" (/health/live stays 200), a new
//     generation is 503 shutting_down, both streams end with their
//     finish_reason and [DONE], the process exits 0; a generation longer than
//     --drain-timeout is cut at the deadline (no [DONE]) and the process
//     still exits 0 about then; SIGINT stops at once as before;
//   * three servers behind Debian's haproxy (the config is generated into
//     WORKDIR: health checks on /health/ready, a consistent hash of the
//     X-Session-Id header, retries of refused requests elsewhere) and
//     scraped by Debian's prometheus (1 s): prometheus sees the three
//     targets up and each one's tinylm_kv_cache_usage_ratio; one request
//     answered by each replica (haproxy names it in X-Tinylm-Replica) gives
//     the same bytes and receipt id; a key sticks to its replica;
//   * a drain under load: 12 clients (streamed and not) through haproxy
//     while one replica gets SIGTERM: every request gets a complete reply
//     (200, its finish_reason, [DONE] for streams), the replica exits 0
//     and haproxy marks it down;
//   * a replica killed (SIGKILL) mid-stream: that stream is cut, the same
//     client's next request is answered by another replica, and haproxy
//     marks the dead one down.
// haproxy and prometheus missing is a failure (scripts/setup.sh installs
// them), never a skip.
//
// Planted defects this suite catches (each tried, 2026-12-07; the failing
// checks named):
//   SIGTERM stops at once (no drain)          -> the drain checks, and 1-2
//     requests under load cut;
//   /health/ready 200 while draining          -> "ready is 503 draining";
//   the in-flight count never taken           -> as for no drain;
//   the drain wait ignores --drain-timeout    -> "cut at the deadline";
//   /health/ready behind the API key          -> "without the API key";
//   haproxy without retry-on 503              -> under load, the requests
//     the draining replica refused before its check failed reach the
//     clients as 503 (94 of 127).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { check, demoModel, exitWithin, runSuite, short, sleep, start, startServer as startProcess, suiteArgs } from '../support/serve_harness.mjs';

const { WORK } = suiteArgs('fleet_test.mjs');
const KEY = 'sk-fleet-test';
const AUTH = { Authorization: `Bearer ${KEY}` };
const EOS = 151645; // the demo model's <|im_end|>: banned where a reply must run long

const startServer = (name, model, extra = []) =>
  startProcess(name, [model, '--parallel', '2', '--ctx', '1024', '-t', '1', ...extra], { ms: 60000 });

// A free loopback port for haproxy and prometheus (they print none).
function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => res(port)); });
  });
}

// One HTTP exchange: {status, headers, text}; onData sees the body as it comes.
function http(port, method, path, { body, headers = {}, onData, timeout = 60000 } = {}) {
  return new Promise((res) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = httpRequest({ host: '127.0.0.1', port, method, path, timeout,
      headers: { ...(data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}), ...headers } }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d) => { text += d; onData?.(text, req); });
      r.on('end', () => res({ status: r.statusCode, headers: r.headers, text, complete: true }));
      r.on('error', (e) => res({ status: r.statusCode, headers: r.headers, text, complete: false, error: String(e) }));
      r.on('aborted', () => res({ status: r.statusCode, headers: r.headers, text, complete: false, error: 'aborted' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => res({ status: 0, headers: {}, text: '', complete: false, error: String(e) }));
    req.end(data);
  });
}
const json = (r) => { try { return JSON.parse(r.text); } catch { return null; } };

// A stream's events: {done, finish, content, errors}.
function events(text) {
  const out = { done: false, finish: null, content: '', errors: [] };
  for (const block of text.split('\n\n')) {
    if (!block.startsWith('data: ')) continue;
    const d = block.slice(6);
    if (d === '[DONE]') { out.done = true; continue; }
    let c;
    try { c = JSON.parse(d); } catch { out.errors.push(d); continue; }
    if (c.error) out.errors.push(c.error);
    for (const ch of c.choices ?? []) {
      out.content += ch.delta?.content ?? '';
      if (ch.finish_reason) out.finish = ch.finish_reason;
    }
  }
  return out;
}

const chat = (text, extra = {}) => ({ model: 'demo', messages: [{ role: 'user', content: text }], ...extra });
const LONG = (n) => ({ max_tokens: n, logit_bias: { [EOS]: -100 } }); // exactly n tokens

// ---- drain, one server alone ----
async function drainAlone(model) {
  const s = await startServer('drain server', model, ['--drain-timeout', '30', '--api-key', KEY, '--parallel', '1']);
  const live0 = await http(s.port, 'GET', '/health/live');
  const ready0 = await http(s.port, 'GET', '/health/ready');
  const metrics0 = await http(s.port, 'GET', '/metrics');
  check('/health/live and /health/ready: 200 when serving, without the API key (/metrics needs it)', live0.status === 200 &&
    json(live0)?.status === 'live' && ready0.status === 200 && json(ready0)?.status === 'ready' && metrics0.status === 401,
  short([live0, ready0, metrics0.status]));
  let first = null;
  const got = new Promise((r) => { first = r; });
  const stream = http(s.port, 'POST', '/v1/chat/completions', { body: chat('Tell a story', { ...LONG(600), stream: true }), headers: AUTH,
    onData: (t) => { if (t.includes('"content":"') && t.split('data: ').length > 4) first(); } });
  await Promise.race([got, sleep(20000)]);
  // a second one waits in the queue (one slot)
  const queued = http(s.port, 'POST', '/v1/completions', { body: { model: 'demo', prompt: 'Once', ...LONG(300), stream: true }, headers: AUTH });
  const gauges = await until(async () => {
    const m = (await http(s.port, 'GET', '/metrics', { headers: AUTH })).text;
    const q = /\ntinylm_requests_queued (\d+)/.exec(m)?.[1];
    const kv = /\ntinylm_kv_cache_usage_ratio ([\d.]+)/.exec(m)?.[1];
    return q === '1' ? { q, kv: Number(kv) } : null;
  }, 5000);
  check('one running, one queued: tinylm_kv_cache_usage_ratio above 0 (the running one\'s rows)', gauges !== null && gauges.kv > 0, short(gauges));
  const t0 = Date.now();
  s.proc.kill('SIGTERM');
  await sleep(150);
  const ready = await http(s.port, 'GET', '/health/ready');
  const live = await http(s.port, 'GET', '/health/live');
  const refused = await http(s.port, 'POST', '/v1/chat/completions', { body: chat('Hi', { max_tokens: 4 }), headers: AUTH });
  check('draining: /health/ready is 503 "draining", /health/live still 200', ready.status === 503 &&
    json(ready)?.status === 'draining' && live.status === 200, short([ready, live]));
  check('draining: a new generation is 503 shutting_down', refused.status === 503 &&
    json(refused)?.error?.code === 'shutting_down', short(refused));
  const r = await stream;
  const ev = events(r.text);
  check('draining: the running stream ends whole (600 tokens, finish_reason length, [DONE])', r.status === 200 &&
    ev.done && ev.finish === 'length' && ev.errors.length === 0, short(r.text.slice(-600)));
  const q = await queued;
  const qev = events(q.text);
  check('draining: the queued one runs and ends whole too', q.status === 200 && qev.done && qev.errors.length === 0 &&
    /"finish_reason":"length"/.test(q.text), short(q.text.slice(-400)));
  const ex = await exitWithin(s, 30000);
  check('draining: exit 0 once the stream is done, within the drain timeout', ex?.code === 0 && Date.now() - t0 < 30000 &&
    /stopped \(SIGTERM, drained\)/.test(s.stderr), short(ex) + short(s.stderr.slice(-500)));

  // a generation longer than the timeout is cut at the deadline
  const c = await startServer('drain-timeout server', model, ['--drain-timeout', '1', '--ctx', '4096']);
  let began = null;
  const begun = new Promise((res) => { began = res; });
  const long = http(c.port, 'POST', '/v1/chat/completions', { body: chat('Tell a story', { ...LONG(4000), stream: true }),
    onData: (t) => { if (t.includes('"content":"')) began(); } });
  await Promise.race([begun, sleep(20000)]);
  const t1 = Date.now();
  c.proc.kill('SIGTERM');
  const cut = await long;
  const ex2 = await exitWithin(c, 15000);
  const took = (Date.now() - t1) / 1000;
  check('--drain-timeout 1: the longer generation is cut (no [DONE]), exit 0 after about 1 s', !events(cut.text).done &&
    ex2?.code === 0 && took >= 0.9 && took < 6 && /drain timeout: 1 requests cancelled/.test(c.stderr),
  `${took} s, ${short(ex2)} ${short(c.stderr.slice(-300))} ${short(cut.text.slice(-200))}`);

  // SIGINT: at once, as before
  const d = await startServer('SIGINT server', model);
  const run = http(d.port, 'POST', '/v1/chat/completions', { body: chat('Tell a story', { ...LONG(900), stream: true }) });
  await sleep(300);
  const t2 = Date.now();
  d.proc.kill('SIGINT');
  const ex3 = await exitWithin(d, 10000);
  const sigintCut = await run;
  check('SIGINT stops at once (exit 0 within 3 s, the stream cut)', ex3?.code === 0 && Date.now() - t2 < 3000 &&
    !events(sigintCut.text).done, short(ex3) + short(d.stderr.slice(-300)));
}

// ---- the fleet ----
function haproxyConfig(port, statsPort, servers) {
  return `# generated by tests/serve/fleet_test.mjs (docs/deploy.md explains each line)
global
  maxconn 256
defaults
  mode http
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response 503
frontend tinylm
  bind 127.0.0.1:${port}
  default_backend replicas
backend replicas
  balance hdr(X-Session-Id)
  hash-type consistent
  option httpchk
  http-check send meth GET uri /health/ready ver HTTP/1.1 hdr Host localhost
  http-check expect status 200
  default-server check inter 250ms fall 1 rise 2
  http-response set-header X-Tinylm-Replica %[srv_name]
${servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port}`).join('\n')}
listen stats
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /stats
`;
}

// haproxy's view of each server: {name: "UP" | "DOWN" | ...}.
async function haproxyStatus(statsPort) {
  const r = await http(statsPort, 'GET', '/stats;csv');
  const out = {};
  for (const line of r.text.split('\n')) {
    const f = line.split(',');
    if (f[0] === 'replicas' && f[1] !== 'BACKEND') out[f[1]] = f[17];
  }
  return out;
}
async function until(f, ms) {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v || Date.now() - t0 > ms) return v;
    await sleep(100);
  }
}

async function fleet(model) {
  for (const tool of ['haproxy', 'prometheus']) {
    let where = '';
    try { where = execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(); } catch { /* missing */ }
    if (!check(`${tool} is installed (scripts/setup.sh)`, where !== '')) throw new Error(`${tool} missing`);
  }
  const replicas = [];
  for (let i = 0; i < 3; i++) replicas.push(await startServer(`r${i}`, model, ['--drain-timeout', '30']));
  replicas.forEach((r, i) => { r.name = `r${i}`; });
  const [lb, statsPort, promPort] = [await freePort(), await freePort(), await freePort()];
  const cfg = join(WORK, 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig(lb, statsPort, replicas));
  const prom = join(WORK, 'prometheus.yml');
  writeFileSync(prom, `# generated by tests/serve/fleet_test.mjs
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tinylm
    static_configs:
      - targets: [${replicas.map((r) => `'127.0.0.1:${r.port}'`).join(', ')}]
`);
  const ha = start('haproxy', 'haproxy', ['-db', '-f', cfg]);
  const pm = start('prometheus', 'prometheus', [`--config.file=${prom}`, `--storage.tsdb.path=${join(WORK, 'prometheus-data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`]);
  const allUp = await until(async () => {
    const st = await haproxyStatus(statsPort).catch(() => ({}));
    return replicas.every((r) => st[r.name] === 'UP') ? st : null;
  }, 15000);
  check('haproxy: the three replicas UP (checked on /health/ready)', allUp !== null, short(ha.stderr.slice(-800)));

  // one key per replica: the consistent hash of X-Session-Id decides
  const REQ = chat('What is 12 + 30?', { temperature: 1, seed: 5, max_tokens: 24 });
  const byReplica = new Map();
  for (let k = 0; k < 40 && byReplica.size < 3; k++) {
    const r = await http(lb, 'POST', '/v1/chat/completions', { body: REQ, headers: { 'X-Session-Id': `user-${k}` } });
    const who = r.headers['x-tinylm-replica'];
    if (r.status === 200 && who && !byReplica.has(who)) byReplica.set(who, { key: `user-${k}`, reply: json(r) });
  }
  check('through haproxy, each replica answers some key', byReplica.size === 3, short([...byReplica.keys()]));
  const replies = [...byReplica.values()].map((v) => v.reply);
  const same = (a, b) => a?.choices?.[0]?.message?.content === b?.choices?.[0]?.message?.content &&
    a?.tinylm?.choices?.[0]?.receipt_id === b?.tinylm?.choices?.[0]?.receipt_id &&
    a?.usage?.completion_tokens === b?.usage?.completion_tokens; // cached_tokens may differ: a replica's cache
  check('the same request gives the same bytes and receipt id on every replica', replies.length === 3 &&
    replies.every((r) => r?.tinylm?.choices?.[0]?.receipt_id && same(r, replies[0])), short(replies.map((r) => [r?.choices?.[0]?.message?.content, r?.tinylm?.choices?.[0]?.receipt_id])));
  let sticky = true;
  for (const [who, { key }] of byReplica) {
    for (let i = 0; i < 2; i++) {
      const r = await http(lb, 'POST', '/v1/chat/completions', { body: chat('Hi', { max_tokens: 2 }), headers: { 'X-Session-Id': key } });
      sticky &&= r.status === 200 && r.headers['x-tinylm-replica'] === who;
    }
  }
  check('a key sticks to its replica', sticky);

  // prometheus scrapes the three
  const q = (expr) => http(promPort, 'GET', `/api/v1/query?query=${encodeURIComponent(expr)}`).then(json).catch(() => null);
  const up = await until(async () => {
    const r = await q('up{job="tinylm"}');
    const res = r?.data?.result ?? [];
    return res.length === 3 && res.every((x) => x.value[1] === '1') ? res : null;
  }, 20000);
  check('prometheus: the three targets up', up !== null, short(pm.stderr.slice(-800)));
  const kv = await until(async () => {
    const r = await q('tinylm_kv_cache_usage_ratio');
    const res = r?.data?.result ?? [];
    return res.length === 3 && res.every((x) => Number(x.value[1]) >= 0 && Number(x.value[1]) <= 1) ? res : null;
  }, 10000);
  check('prometheus: tinylm_kv_cache_usage_ratio of each, in 0..1', kv !== null);

  // a drain under load
  const victim = replicas[1];
  const load = [];
  let stop = false;
  const client = async (i) => {
    for (let n = 0; !stop; n++) {
      const streamed = (i + n) % 2 === 0;
      const body = chat(`Count to ${i}`, { ...LONG(60), stream: streamed });
      const t = Date.now();
      const r = await http(lb, 'POST', '/v1/chat/completions', { body, headers: { 'X-Session-Id': `load-${i}` } });
      const ok = r.status === 200 && (streamed ? (() => { const e = events(r.text); return e.done && e.finish === 'length' && !e.errors.length; })()
        : json(r)?.choices?.[0]?.finish_reason === 'length');
      load.push({ i, n, t, ok, status: r.status, who: r.headers['x-tinylm-replica'], detail: ok ? '' : short(r.text.slice(-300)) });
    }
  };
  const clients = Array.from({ length: 12 }, (_, i) => client(i));
  await until(() => load.some((x) => x.who === victim.name), 10000);
  const t0 = Date.now();
  victim.proc.kill('SIGTERM');
  const exited = await exitWithin(victim, 30000);
  const gone = Date.now();
  const down = await until(async () => (await haproxyStatus(statsPort))[victim.name]?.startsWith('DOWN'), 5000);
  await sleep(1000); // more requests after it left
  stop = true;
  await Promise.all(clients);
  const bad = load.filter((x) => !x.ok);
  check('drain under load: every request gets a complete reply', load.length > 12 && bad.length === 0,
    `${load.length} requests, ${bad.length} bad: ${short(bad.slice(0, 3))}`);
  check('drain under load: the replica exits 0 and haproxy marks it down', exited?.code === 0 && down,
    `${short(exited)} after ${(Date.now() - t0) / 1000} s, ${short(victim.stderr.slice(-300))}`);
  const after = load.filter((x) => x.t > gone);
  check('drain under load: the requests sent after it left were answered by the others', after.length > 0 &&
    after.every((x) => x.ok && x.who !== victim.name), short(after.map((x) => x.who)));

  // SIGKILL mid-stream
  const alive = replicas.filter((r) => r !== victim);
  const key = [...byReplica].find(([who]) => who !== victim.name)[1].key;
  let cut = null;
  const cutNow = new Promise((r) => { cut = r; });
  const st = http(lb, 'POST', '/v1/chat/completions', { body: chat('Tell a story', { ...LONG(900), stream: true }),
    headers: { 'X-Session-Id': key }, onData: (t) => { if (t.includes('"content":"')) cut(); } });
  await Promise.race([cutNow, sleep(20000)]);
  const before = await haproxyStatus(statsPort);
  const target = alive.find((r) => byReplica.get(r.name)?.key === key);
  target.proc.kill('SIGKILL');
  const broken = await st;
  check('SIGKILL mid-stream: that stream is cut (no [DONE])', !events(broken.text).done, short(broken.text.slice(-200)));
  const next = await http(lb, 'POST', '/v1/chat/completions', { body: REQ, headers: { 'X-Session-Id': key } });
  const other = alive.find((r) => r !== target);
  check('SIGKILL: the client\'s next request is answered by another replica, the same bytes', next.status === 200 &&
    next.headers['x-tinylm-replica'] === other.name && same(json(next), replies[0]), short([before, target.name, next.status, next.headers['x-tinylm-replica'], json(next)?.choices?.[0]?.message?.content,
    json(next)?.tinylm?.choices?.[0]?.receipt_id, replies[0]?.choices?.[0]?.message?.content, replies[0]?.tinylm?.choices?.[0]?.receipt_id], 1200));
  const marked = await until(async () => (await haproxyStatus(statsPort))[target.name]?.startsWith('DOWN'), 5000);
  check('SIGKILL: haproxy marks the dead replica down', marked);
  const health = await http(other.port, 'GET', '/health');
  check('the last replica is alive, every slot idle', json(health)?.slots_processing === 0, short(health));
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const model = demoModel();
  for (const [name, f] of [['drain', drainAlone], ['fleet', fleet]]) {
    const t0 = Date.now();
    try { await f(model); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
    console.log(`note: ${name} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}

await runSuite(main, { seconds: 240, log: 'processes.log' });
