// The page's model runs here, in a module Web Worker, not on the page's
// thread: on the scalar and SIMD128 lanes a generation is one synchronous
// call into wasm, and on the page's thread it would freeze the page until
// the reply is complete (no streaming on screen, no Stop button). Tokens
// come back as messages while the call runs. Stop reaches a running call
// through a shared flag that the loader polls at every token
// (signal.aborted); the threads lane computes in the loader's own worker,
// so this one stays free, and Stop's 'cancel' message fires the signal's
// abort event, which the loader passes on. Without cross-origin isolation
// there is no shared memory (and no threads lane), and the page stops a
// reply by ending this worker instead (app.js).
//
// Messages in: { id, op: 'init', cancel: Int32Array | null } | { id, op:
// 'probe' } | { id, op: 'load', bytes (ArrayBuffer or File), opts, cache: { name, dir } | null }
// | { id, op: 'generate', args }
// | { id, op: 'dispose' } | { op: 'cancel' }. Out: { id, op: 'token', text }
// while generating, then { id, op: 'done', value } or { id, op: 'error',
// error: { code, message, kind, offset, capabilityReceipt, result } }
// (result: a stopped reply's, receipt included; kind and offset: a
// grammar's refusal, the reader and the byte in its text).
import { probe, loadModel } from './tinylm.js';

let model = null;
let cancel = null;
class StopSignal extends EventTarget {
  get aborted() { return cancel !== null && Atomics.load(cancel, 0) !== 0; }
}
const signal = new StopSignal();

// The bytes (an ArrayBuffer or a File) under the artifact id in cache.dir.
async function keep(bytes, id, cache) {
  if (!cache) return false;
  try {
    const size = bytes.byteLength ?? bytes.size;
    await (await caches.open(cache.name)).put(new URL(`${id}.slm`, cache.dir).href, new Response(bytes, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) },
    }));
    return true;
  } catch (e) {
    // A full quota only costs the next reload a fetch.
    console.warn('model cache:', e);
    return false;
  }
}

async function run(id, data) {
  switch (data.op) {
    case 'init':
      cancel = data.cancel;
      return true;
    case 'probe':
      return probe();
    case 'load': {
      // The model loaded before stays until this one has loaded: a load
      // that fails (a budget too small, a damaged file) leaves it working.
      const next = await loadModel(data.bytes, data.opts);
      if (model) await model.dispose();
      model = next;
      // The bytes the model loaded from (a file: streamed into the module,
      // and read again for the cache), kept for the next load, keyed by
      // the artifact id the module computed.
      return {
        capabilityReceipt: model.capabilityReceipt, capabilityReceiptCbor: model.capabilityReceiptCbor,
        capabilityReceiptId: model.capabilityReceiptId, artifactId: model.artifactId,
        cached: await keep(data.bytes, model.artifactId, data.cache),
      };
    }
    case 'generate':
      if (!model) throw Object.assign(new Error('no model is loaded'), { code: 'invalid_argument' });
      if (cancel) Atomics.store(cancel, 0, 0);
      return model.generate({
        ...data.args,
        signal,
        onToken: (t) => postMessage({ id, op: 'token', text: t.text }),
      });
    case 'cancel':
      signal.dispatchEvent(new Event('abort'));
      return true;
    case 'dispose':
      if (model) await model.dispose();
      model = null;
      return true;
    default:
      throw Object.assign(new Error(`unknown request '${data.op}'`), { code: 'invalid_argument' });
  }
}

self.onmessage = async ({ data }) => {
  try {
    postMessage({ id: data.id, op: 'done', value: await run(data.id, data) });
  } catch (e) {
    const code = e?.code ?? 'internal_invariant';
    // TinylmError's message starts with its code; the page prints it once.
    let message = String(e?.message ?? e);
    if (message.startsWith(`${code}: `)) message = message.slice(code.length + 2);
    postMessage({ id: data.id, op: 'error', error: { code, message, kind: e?.kind ?? '', offset: e?.offset ?? null,
      capabilityReceipt: e?.capabilityReceipt ?? null, result: e?.result ?? null } });
  }
};
