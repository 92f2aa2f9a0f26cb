// The plumbing the node suites of `tinylm serve` (tests/serve/*_test.mjs)
// share, so that each suite holds only its checks: the TINYLM WORKDIR
// command line, child processes with their output kept (a `tinylm serve` on
// --port 0 awaited until its ready line, stopped with a signal), raw HTTP,
// and the suite's run (a watchdog, leftovers killed, the processes' output
// written to WORKDIR, the closing 'N passed, N failed' line and exit code).
// One suite per process: the checker and the process list are the module's.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checker } from './checks.mjs';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const { check, counts } = checker();
export const short = (v, n = 400) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s === undefined ? String(v) : s.length > n ? `${s.slice(0, n)}...` : s;
};
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let tinylm = null;
let work = null;
// The suite's arguments, resolved; without them its usage line and exit 2.
export function suiteArgs(script) {
  const [tinylmArg, workArg] = process.argv.slice(2);
  if (!tinylmArg || !workArg) {
    console.error(`usage: ${script} TINYLM WORKDIR`);
    process.exit(2);
  }
  tinylm = resolve(tinylmArg);
  work = resolve(workArg);
  return { TINYLM: tinylm, WORK: work };
}

// The demo model as make demo builds it (reused when current).
export const demoModel = () =>
  execFileSync(join(ROOT, 'scripts', 'demo_model.sh'), [tinylm, join(ROOT, 'build', 'demo')], { encoding: 'utf8' }).trim();

// `tinylm ARGS...` run to its end (a failure throws, with its stderr).
export function runTinylm(...args) {
  execFileSync(tinylm, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
// WORKDIR/models, made with the demo model in it as demo.slm (a --models
// directory for the suites that serve several models).
export function modelsDir() {
  const dir = join(work, 'models');
  mkdirSync(dir);
  symlinkSync(demoModel(), join(dir, 'demo.slm'));
  return dir;
}

const procs = []; // everything started: killed and logged at the end
// A child process with its output kept and its exit awaited.
export function start(name, cmd, args) {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const p = { name, proc, stdout: '', stderr: '', exit: null };
  proc.stdout.on('data', (d) => { p.stdout += d; });
  proc.stderr.on('data', (d) => { p.stderr += d; });
  p.exited = new Promise((r) => {
    proc.on('exit', (code, sig) => { p.exit = { code, sig }; r(p.exit); });
    proc.on('error', (e) => { p.exit = { code: null, error: String(e) }; r(p.exit); });
  });
  procs.push(p);
  return p;
}
// The exit within ms, else null.
export const exitWithin = (p, ms) => Promise.race([p.exited, sleep(ms).then(() => null)]);

// `tinylm serve ARGS --port 0`, awaited until stdout matches ready (or it
// exits, or ms pass): s.base (http://HOST:PORT) and s.port once listening.
// Its start is the check `started` (none when null); with required, a
// server that did not start throws.
export async function startServer(name, args, { ready = /tinylm serve: ready \(/, ms = 120000,
  started = `${name} starts`, required = true } = {}) {
  const s = start(name, tinylm, ['serve', ...args, '--port', '0']);
  const t0 = Date.now();
  while (!ready.test(s.stdout) && s.exit === null && Date.now() - t0 < ms) await sleep(5);
  const m = /listening on (http:\/\/\S+:(\d+))/.exec(s.stdout);
  if (m) [s.base, s.port] = [m[1], Number(m[2])];
  const ok = Boolean(m) && ready.test(s.stdout);
  const detail = short(s.stdout + s.stderr, 600);
  if (started !== null ? !check(started, ok, detail) : required && !ok) throw new Error(`${name} did not start: ${detail}`);
  return s;
}

// Sends sig and waits up to ms for the exit (SIGKILL after): the exit or null.
export async function stop(s, sig = 'SIGTERM', ms = 15000) {
  if (s.exit === null) s.proc.kill(sig);
  const r = await exitWithin(s, ms);
  if (r === null) s.proc.kill('SIGKILL');
  return r;
}
// stop() as the check that SIGTERM ends the server with exit 0.
export async function stopServer(s, name = 'SIGTERM stops it cleanly (exit 0)') {
  const r = await stop(s);
  return check(name, r?.code === 0, short(r) + short(s.stderr.slice(-2000), 2000));
}

// Raw HTTP on node:http (fetch forbids some headers and hides others) to
// s.port: {status, headers, body (Buffer), text, json}; a body not a string
// or Buffer is sent as JSON (the Content-Type is the caller's); a failed
// exchange is status 0 with its error. A connection of its own unless
// keepAlive (node's shared agent).
export const JSON_TYPE = { 'Content-Type': 'application/json' };
export function http(s, method, path, { body, headers = {}, host = '127.0.0.1', timeout = 60000, signal, keepAlive = false } = {}) {
  return new Promise((res) => {
    const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body
      : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const failed = (e) => res({ status: 0, headers: {}, body: Buffer.alloc(0), text: String(e), json: null, error: String(e) });
    const req = httpRequest({ host, port: s.port, method, path, signal, timeout, agent: keepAlive ? undefined : false,
      headers: { ...(data ? { 'Content-Length': data.length } : {}), ...headers } }, (r) => {
      const parts = [];
      r.on('data', (d) => parts.push(d));
      r.on('end', () => {
        const b = Buffer.concat(parts);
        let json = null;
        try { json = JSON.parse(b.toString('utf8')); } catch { /* not JSON */ }
        res({ status: r.statusCode, headers: r.headers, body: b, text: b.toString('utf8'), json });
      });
      r.on('error', failed);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', failed);
    req.end(data);
  });
}

// A GET's JSON (its text when not JSON), and a POST of a JSON body.
export const get = async (s, path) => { const r = await http(s, 'GET', path); return r.json ?? r.text; };
export const post = (s, path, body, headers = {}) => http(s, 'POST', path, { body, headers: { ...JSON_TYPE, ...headers } });

// Runs the suite's main within its watchdog (TL_SERVE_TEST_SECONDS, else
// seconds), then kills what is left, writes every process's output to
// WORKDIR/log, prints 'N passed, N failed' and exits 1 on a failure.
export async function runSuite(main, { seconds, log = 'server.log' }) {
  const limit = Number(process.env.TL_SERVE_TEST_SECONDS || seconds);
  const killAll = () => { for (const p of procs) if (p.exit === null) p.proc.kill('SIGKILL'); };
  const watchdog = setTimeout(() => {
    check(`the suite finishes within ${limit} s`, false);
    killAll();
    console.log(`${counts.passed} passed, ${counts.failed} failed`);
    process.exit(1);
  }, limit * 1000);
  try {
    await main();
  } catch (e) {
    check('the suite ran to the end', false, e?.stack ?? String(e));
  }
  killAll();
  if (procs.length) writeFileSync(join(work, log), procs.map((p) => `== ${p.name} ${short(p.exit)}\n${p.stdout}\n${p.stderr}`).join('\n'));
  clearTimeout(watchdog);
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  process.exit(counts.failed ? 1 : 0); // not waiting out the races' spare timers
}
