// The workers of tinylm's loader (docs/web.md), started by tinylm.js; one
// file, two roles, by the first message:
//   host: runs a lane's module (hash check, self-tests, model, session,
//         generations) and on the threads lane starts the pool; answers
//         the page's calls;
//   pool: one more instance of the module over the same shared memory,
//         with its own stack and thread-local storage, running its share
//         of every parallel call (web/wasm/pool.c) until terminated.
import { _internal, errorData, spawn } from './tinylm.js';

const { Model, TinylmError, manifestOf, startLane, chosen, isNode } = _internal;
const POOL_STACK = 1 << 20; // each pool worker's stack, as the main instance's

let port;
if (isNode) {
  const { parentPort } = await import('node:worker_threads');
  port = { post: (m) => parentPort.postMessage(m), on: (fn) => parentPort.on('message', fn) };
} else {
  port = { post: (m) => self.postMessage(m), on: (fn) => self.addEventListener('message', (e) => fn(e.data)) };
}

let model = null;
let pool = [];
let ctrl = null;

// ---- pool role --------------------------------------------------------------
async function poolWorker({ module, memory, w, stackTop, tls }) {
  const stub = () => 0;
  const env = { memory, tl_host_now_ms: () => 0, tl_host_token: stub, tl_host_text: stub, tl_host_prefill: stub };
  const instance = await WebAssembly.instantiate(module, { env });
  const x = instance.exports;
  x.__stack_pointer.value = stackTop;
  x.__wasm_init_tls(tls);
  x.tl_wasm_worker(w); // never returns
}

// ---- host role --------------------------------------------------------------
async function startPool(rt, threads) {
  const x = rt.x;
  if (threads <= 1) return 1;
  if (x.tl_wasm_pool_init(threads) !== 0)
    throw new TinylmError('invalid_argument', `threads must be 1..256, not ${threads}`);
  const url = new URL(import.meta.url);
  for (let w = 1; w < threads; w++) {
    const stack = rt.alloc(POOL_STACK);
    const tls = rt.alloc(x.__tls_size.value + x.__tls_align.value);
    const align = x.__tls_align.value || 1;
    const worker = await spawn(url);
    worker.onError((e) => console.error(`tinylm pool worker ${w}: ${e?.message ?? e}`));
    worker.post({ role: 'pool', module: rt.module, memory: rt.memory, w,
      stackTop: (stack + POOL_STACK) & ~15, tls: Math.ceil(tls / align) * align });
    pool.push(worker);
  }
  // Every worker in its loop before the first call (a few seconds at most).
  for (let waited = 0; x.tl_wasm_pool_ready() !== threads - 1; waited += 5) {
    if (waited > 30000)
      throw new TinylmError('worker_failure', `${x.tl_wasm_pool_ready()} of ${threads - 1} pool workers started in 30 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return threads;
}

async function open({ lane, base, bytes, opts, record, caps, ctrl: c }) {
  ctrl = c;
  const url = new URL(base);
  const manifest = await manifestOf(url);
  let rt;
  try {
    rt = await startLane(lane, manifest, url, record);
  } catch (e) {
    record.refused.push({ lane, code: e.code ?? 'error', why: e.message });
    return { refused: true, record };
  }
  chosen(record, rt, opts, caps);
  record.threads = lane === 'threads' ? await startPool(rt, opts.threads ?? 1) : 1;
  model = await Model.open(rt, bytes, opts, record);
  return { record: model.capabilityReceipt, artifactId: model.artifactId, plan: model.plan, numerics: model.numerics };
}

async function generate(id, args) {
  const signal = { get aborted() { return Atomics.load(ctrl, 0) !== 0; } };
  const x = model.rt.x;
  const tasks = () => (x.tl_wasm_pool_tasks
    ? Array.from({ length: model.capabilityReceipt.threads }, (_, w) => x.tl_wasm_pool_tasks(w)) : null);
  const before = tasks();
  const out = await model.generate({ ...args, signal, onToken: (ev) => port.post({ id, token: ev }) });
  // The threads lane: the parallel tasks each thread ran for this reply (0: the caller).
  if (before) out.poolTasks = tasks().map((n, w) => n - before[w]);
  return out;
}

async function dispose() {
  if (model) await model.dispose();
  for (const w of pool) w.terminate();
  pool = [];
}

port.on(async (msg) => {
  if (msg.role === 'pool') return poolWorker(msg);
  try {
    let value;
    if (msg.op === 'open') value = await open(msg);
    else if (!model) throw new TinylmError('invalid_argument', 'no model in this worker');
    else if (msg.op === 'generate') value = await generate(msg.id, msg.args);
    else if (msg.op === 'reset') value = model.reset();
    else if (msg.op === 'dispose') value = await dispose();
    else throw new TinylmError('invalid_argument', `unknown call ${msg.op}`);
    port.post({ id: msg.id, value });
  } catch (e) {
    port.post({ id: msg.id, error: errorData(e) });
  }
});
