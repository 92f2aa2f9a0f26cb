// The workers of tinylm's loader (docs/web.md), started by tinylm.js; one
// file, two roles, by the first message:
//   host: runs a lane's module (hash check, self-tests, model, session,
//         generations) and on the threads lane starts the pool; answers
//         the page's calls;
//   pool: one more instance of the module over the same shared memory,
//         with its own stack and thread-local storage, running its share
//         of every parallel call (web/wasm/pool.c) until terminated.
import { _internal, errorData } from './tinylm.js';
import { NO_GPU_IMPORTS } from './webgpu.js';

const { Model, TinylmError, manifestOf, startLane, startPool, chosen, isNode } = _internal;

let port;
if (isNode) {
  const { parentPort } = await import('node:worker_threads');
  port = { post: (m) => parentPort.postMessage(m), on: (fn) => parentPort.on('message', fn) };
} else {
  port = { post: (m) => self.postMessage(m), on: (fn) => self.addEventListener('message', (e) => fn(e.data)) };
}

let model = null;
let ctrl = null;

// ---- pool role --------------------------------------------------------------
async function poolWorker({ module, memory, w, stackTop, tls }) {
  const stub = () => 0;
  const env = { memory, tl_host_now_ms: () => 0, tl_host_token: stub, tl_host_text: stub, tl_host_prefill: stub, ...NO_GPU_IMPORTS };
  const instance = await WebAssembly.instantiate(module, { env });
  const x = instance.exports;
  x.__stack_pointer.value = stackTop;
  x.__wasm_init_tls(tls);
  try {
    x.tl_wasm_worker(w); // never returns
  } catch (e) {
    // A task trapped: count this worker out so the host is not left
    // waiting, and let the host's reply end with worker_failure.
    x.tl_wasm_pool_fail(w);
    throw e;
  }
}

// ---- host role --------------------------------------------------------------
async function open({ lane, base, bytes, opts, record, caps, ctrl: c }) {
  ctrl = c;
  const url = new URL(base);
  const manifest = await manifestOf(url);
  let rt;
  try {
    rt = await startLane(lane, manifest, url, record, opts);
  } catch (e) {
    record.refused.push({ lane, code: e.code ?? 'error', why: e.message });
    return { refused: true, record };
  }
  chosen(record, rt, opts, caps);
  record.threads = lane === 'threads' ? await startPool(rt, opts.threads ?? 1) : 1;
  model = await Model.open(rt, bytes, opts, record);
  return { record: model.capabilityReceipt, artifactId: model.artifactId, plan: model.plan, numerics: model.numerics,
    capabilityReceiptCbor: model.capabilityReceiptCbor, capabilityReceiptId: model.capabilityReceiptId };
}

async function generate(id, args) {
  const signal = { get aborted() { return Atomics.load(ctrl, 0) !== 0; } };
  const out = await model.generate({ ...args, signal, onToken: (ev) => port.post({ id, token: ev }) });
  return out;
}

async function dispose() {
  if (model) await model.dispose(); // also ends the pool
}

port.on(async (msg) => {
  if (msg.role === 'pool') return poolWorker(msg);
  try {
    let value;
    if (msg.op === 'open') value = await open(msg);
    else if (!model) throw new TinylmError('invalid_argument', 'no model in this worker');
    else if (msg.op === 'generate') value = await generate(msg.id, msg.args);
    else if (msg.op === 'reset') value = model.reset();
    else if (msg.op === 'compileGrammar') value = model.compileGrammar(msg.spec);
    else if (msg.op === 'freeGrammar') value = model.freeGrammar(msg.grammar);
    else if (msg.op === 'gpuStats') value = model.gpuStats();
    else if (msg.op === 'observe') value = await model.observe(msg.args);
    else if (msg.op === 'dispose') value = await dispose();
    else throw new TinylmError('invalid_argument', `unknown call ${msg.op}`);
    port.post({ id: msg.id, value });
  } catch (e) {
    port.post({ id: msg.id, error: errorData(e) });
  }
});
