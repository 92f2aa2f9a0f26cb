// tinylm's JS loader (docs/web.md): capability probes, lane choice, the
// modules' SHA-256 checked against manifest.json before instantiation,
// per-lane self-tests, a capability receipt, memory preflight, and models
// with generate()/dispose() over the public C API the modules export.
// Plain ES module; runs in browsers and in node >= 20 (tests/web/).
import { openGpu, NO_GPU_IMPORTS } from './webgpu.js';

export const ABI_VERSION = 1; // include/tinylm.h TL_ABI_VERSION
const WASM32_BYTES = 4294967296; // the wasm32 address space
const LANES = ['threads', 'simd', 'scalar']; // best first
// Asked for only (its own numerical profile, webgpu/1): then the simd lane, then scalar.
const WEBGPU_ORDER = ['webgpu', 'simd', 'scalar'];
const LANE_CODE = { scalar: 1, fast: 2 }; // tinylm.h TL_LANE_*
const OPEN_BORROW = 1;
const GENERATE_CONTINUE = 1;
const GENERATE_GRAMMAR = 4; // tinylm.h TL_GENERATE_GRAMMAR: params carry grammar and think_budget
// tl_generation_params on wasm32 (web/wasm/api_exports.c's _Static_asserts):
// its first 136 bytes, grammar at 124, think_budget at 128 (the penalty
// fields after them are read only with TL_GENERATE_PENALTIES, never set here).
const PARAMS_BYTES = 136;
const PARAMS_GRAMMAR = 124;
const PARAMS_THINK_BUDGET = 128;
// The generate()/compileGrammar() keys that give a grammar, and each one's
// tinylm.h TL_GRAMMAR_* kind and tl_error kind (the reader's name).
const GRAMMAR_KINDS = {
  jsonObject: { code: 1, name: 'json_object' },
  jsonSchema: { code: 2, name: 'json_schema' },
  grammar: { code: 3, name: 'gbnf' },
  regex: { code: 4, name: 'regex' },
};
const GRAMMAR_READERS = new Set(Object.values(GRAMMAR_KINDS).map((k) => k.name));
const U32_MAX = 0xffffffff;
const GIVEN = { temperature: 1, topK: 2, topP: 4, minP: 8, repeatPenalty: 16 };
const STATUS_BOUNDS = 6; // tinylm.h TL_ERR_BOUNDS
const SELF_TESTS = ['blake3', 'philox', 'fast-f32-dot', 'forward-strict', 'forward-fast', 'sampler']; // tl_wasm_self_test(0..5)
const SELF_TEST_WEBGPU = 6; // forward-webgpu: the tiny models with the device, in check mode
// The exports that can reach the device's products (a JSPI suspending
// import): awaited through WebAssembly.promising on the webgpu lane.
const SUSPENDING = ['tl_generation_run', 'tl_session_observe', 'tl_wasm_self_test'];

/** A typed failure: code is tinylm's error code (tl_status_name), status
 *  its number; the other fields come from tl_error where the C side set them. */
export class TinylmError extends Error {
  constructor(code, message, extra = {}) {
    super(`${code}: ${message}`);
    this.name = 'TinylmError';
    this.code = code;
    this.detail = message;
    Object.assign(this, extra);
  }
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node;

// ---- capability probes ------------------------------------------------------
// Tiny modules that validate only where a feature exists.
const PROBE_SIMD = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
  10, 22, 1, 20, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11]);
const PROBE_BULK = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0,
  5, 3, 1, 0, 1, 10, 13, 1, 11, 0, 65, 0, 65, 0, 65, 0, 252, 11, 0, 11]);
const PROBE_THREADS = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0,
  5, 4, 1, 3, 1, 1, 10, 11, 1, 9, 0, 65, 0, 254, 16, 2, 0, 26, 11]);

function validates(bytes) {
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/** What this runtime offers: { simd128, bulkMemory, atomics, sharedArrayBuffer,
 *  crossOriginIsolated, threads, webgpu, lanes (best first; webgpu, which
 *  is only used when asked for, is not among them), why (per missing
 *  lane), userAgent, hardwareConcurrency }. webgpu: navigator.gpu and
 *  WebAssembly JSPI exist (whether an adapter comes is known at load). */
export async function probe() {
  const simd128 = validates(PROBE_SIMD);
  const bulkMemory = validates(PROBE_BULK);
  const atomics = validates(PROBE_THREADS) && typeof Atomics === 'object';
  const sharedArrayBuffer = typeof SharedArrayBuffer === 'function';
  // Node has no cross-origin isolation to ask for: shared memory is always allowed there.
  const crossOriginIsolated = isNode ? true : globalThis.crossOriginIsolated === true;
  const threads = simd128 && bulkMemory && atomics && sharedArrayBuffer && crossOriginIsolated;
  const why = {};
  if (!simd128) why.simd = 'WebAssembly SIMD128 does not validate here';
  if (!threads)
    why.threads = !simd128 ? 'needs SIMD128'
      : !crossOriginIsolated ? 'the page is not cross-origin isolated (COOP/COEP headers)'
      : !sharedArrayBuffer ? 'no SharedArrayBuffer'
      : !atomics ? 'WebAssembly atomics do not validate here' : 'no bulk memory';
  const jspi = typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
  const webgpu = simd128 && jspi && !!globalThis.navigator?.gpu;
  if (!webgpu)
    why.webgpu = !simd128 ? 'needs SIMD128' : !globalThis.navigator?.gpu ? 'no WebGPU here (navigator.gpu is missing)'
      : 'no WebAssembly JSPI (WebAssembly.Suspending) to wait for the device';
  const lanes = LANES.filter((l) => l === 'scalar' || (l === 'simd' ? simd128 : threads));
  return {
    simd128, bulkMemory, atomics, sharedArrayBuffer, crossOriginIsolated, threads, webgpu, lanes, why,
    userAgent: globalThis.navigator?.userAgent ?? (isNode ? `node/${process.versions.node}` : 'unknown'),
    hardwareConcurrency: globalThis.navigator?.hardwareConcurrency ?? 1,
  };
}

// ---- fetching ---------------------------------------------------------------
async function readUrl(url) {
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return new Uint8Array(await readFile(url));
  }
  const r = await fetch(url);
  if (!r.ok) throw new TinylmError('io', `${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function sha256Hex(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (h) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));

// ---- deterministic CBOR and the capability receipt ----------------------------
function cborHead(major, n) {
  n = BigInt(n);
  if (n < 24n) return [(major << 5) | Number(n)];
  const width = n < 0x100n ? 1 : n < 0x10000n ? 2 : n < 0x100000000n ? 4 : 8;
  const out = [(major << 5) | (24 + Math.log2(width))];
  for (let i = width - 1; i >= 0; i--) out.push(Number((n >> BigInt(8 * i)) & 0xffn));
  return out;
}

function compareBytes(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** Deterministic CBOR (docs/cbor.md: RFC 8949's core deterministic
 *  encoding, no floats) of null, booleans, non-negative integers (Number or
 *  BigInt below 2^64), strings (text), Uint8Array (bytes), arrays and plain
 *  objects (maps, keys sorted by their encoded bytes). Anything else is
 *  invalid_argument. */
export function encodeCbor(value) {
  const parts = [];
  const put = (x) => {
    if (x === null) parts.push(Uint8Array.of(0xf6));
    else if (x === true || x === false) parts.push(Uint8Array.of(x ? 0xf5 : 0xf4));
    else if ((typeof x === 'number' && Number.isSafeInteger(x) && x >= 0) ||
      (typeof x === 'bigint' && x >= 0n && x < 1n << 64n)) parts.push(Uint8Array.from(cborHead(0, x)));
    else if (typeof x === 'string') {
      if (!x.isWellFormed()) throw new TinylmError('invalid_argument', 'CBOR text holds a lone surrogate');
      const b = new TextEncoder().encode(x);
      parts.push(Uint8Array.from(cborHead(3, b.length)), b);
    } else if (x instanceof Uint8Array) parts.push(Uint8Array.from(cborHead(2, x.length)), x);
    else if (Array.isArray(x)) {
      parts.push(Uint8Array.from(cborHead(4, x.length)));
      x.forEach(put);
    } else if (typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype) {
      const pairs = Object.entries(x).map(([k, v]) => [encodeCbor(k), v]).sort(([a], [b]) => compareBytes(a, b));
      parts.push(Uint8Array.from(cborHead(5, pairs.length)));
      for (const [k, v] of pairs) {
        parts.push(k);
        put(v);
      }
    } else throw new TinylmError('invalid_argument', `no deterministic CBOR for ${typeof x} ${String(x)}`);
  };
  put(value);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The capability node's metadata (docs/web.md, The capability receipt)
 *  from a capabilityReceipt record: every field of it is in the node's id. */
export function capabilityMetadata(r) {
  return {
    runtime: { loader: r.loader, abi: r.abi, version: r.build.version, build_id: r.build.buildId },
    user_agent: r.userAgent,
    hardware_concurrency: r.hardwareConcurrency,
    features: {
      simd128: r.features.simd128, bulk_memory: r.features.bulkMemory, atomics: r.features.atomics,
      shared_array_buffer: r.features.sharedArrayBuffer, cross_origin_isolated: r.features.crossOriginIsolated,
    },
    requested: r.requested,
    lane: r.lane,
    lane_reason: r.laneReason,
    refused: r.refused.map((x) => ({ lane: x.lane, code: x.code, why: x.why ?? '' })),
    modules: Object.entries(r.modules).map(([lane, m]) => ({ lane, file: m.file, sha256: unhex(m.sha256), size: m.size })),
    self_tests: Object.entries(r.selfTests).flatMap(([lane, tests]) =>
      tests.map((t) => ({ lane, name: t.name, ok: t.ok, status: t.status }))),
    kernels: r.kernels,
    numerics: r.numerics,
    threads_requested: r.threadsRequested,
    threads: r.threads,
    artifact_id: unhex(r.artifactId),
    ...(r.webgpu ? { webgpu: webgpuMetadata(r.webgpu) } : {}),
  };
}

// The webgpu lane's adapter, device and probes (docs/web.md), present when
// that lane was tried and an adapter came.
function webgpuMetadata(g) {
  const a = g.adapter;
  return {
    adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description,
      is_fallback: a.isFallback, feature_level: a.featureLevel },
    features: g.features ?? [],
    limits: Object.entries(g.limits ?? {}).map(([name, value]) => ({ name, value })),
    wgsl_sha256: unhex(g.wgslSha256),
    compilation: g.compilation ?? [],
    probes: Object.entries(g.probes ?? {}).map(([name, outcome]) => ({ name, outcome })),
  };
}

/** The capability receipt file (tinylm.capability-receipt/1) of record, its
 *  node id computed by the module (tl_wasm_node_id, which also checks that
 *  the metadata is deterministic CBOR): { cbor, id }. */
function capabilityReceiptFile(rt, record) {
  const metadata = capabilityMetadata(record);
  const meta = encodeCbor(metadata);
  const type = new TextEncoder().encode('capability');
  const pm = rt.put(meta);
  const pt = rt.put(type);
  const out = rt.alloc(32);
  try {
    const st = rt.x.tl_wasm_node_id(pt, type.length, pm, meta.length, 0, 0, out);
    if (st !== 0) throw new TinylmError(rt.statusName(st), 'the capability receipt\'s node id');
    const id = rt.u8().slice(out, out + 32);
    const cbor = encodeCbor({ format: 'tinylm.capability-receipt/1', root: id,
      nodes: [{ id, type: 'capability', metadata, children: [] }] });
    return { cbor, id: hex(id) };
  } finally {
    for (const p of [pm, pt, out]) rt.x.free(p);
  }
}

function defaultBase() {
  return new URL('./', import.meta.url);
}

async function manifestOf(base) {
  const url = new URL('manifest.json', base);
  let doc;
  try {
    doc = JSON.parse(new TextDecoder().decode(await readUrl(url)));
  } catch (e) {
    if (e instanceof TinylmError) throw e;
    throw new TinylmError('invalid_argument', `${url}: the manifest does not parse (${e.message})`);
  }
  if (doc?.format !== 'tinylm.web-manifest/1' || typeof doc.modules !== 'object')
    throw new TinylmError('invalid_argument', `${url}: not a tinylm.web-manifest/1 document`);
  if (doc.abi !== ABI_VERSION)
    throw new TinylmError('unsupported_abi', `${url}: the modules have ABI ${doc.abi}, this loader ${ABI_VERSION}`);
  return doc;
}

// ---- one module instance ----------------------------------------------------
class Runtime {
  constructor(lane, entry, bytes, gpu = null) {
    this.lane = lane;
    this.entry = entry;
    this.bytes = bytes;
    this.gpu = gpu; // the webgpu lane's device (web/webgpu.js)
    this.streams = new Map(); // generation handle -> its callbacks
  }

  async start() {
    const now = () => (globalThis.performance ? performance.now() : Date.now());
    const env = {
      tl_host_now_ms: now,
      // Handles arrive as i32 (their kind bits make them negative): >>> 0.
      tl_host_token: (gen, id) => this.streams.get(gen >>> 0)?.token(id >>> 0) ?? 0,
      tl_host_text: (gen, ptr, len) => this.streams.get(gen >>> 0)?.text(ptr >>> 0, len >>> 0) ?? 0,
      tl_host_prefill: (gen, done, total) => this.streams.get(gen >>> 0)?.prefill(done >>> 0, total >>> 0) ?? 0,
      // The WebGPU lane's device (web/webgpu.js, web/wasm/gpu.h); a module
      // on another lane never calls these: worker_failure (16) if it did.
      ...(this.gpu ? this.gpu.imports(() => this.memory) : NO_GPU_IMPORTS),
    };
    if (this.entry.shared) {
      env.memory = new WebAssembly.Memory({
        initial: this.entry.initial_pages, maximum: this.entry.maximum_pages, shared: true,
      });
    }
    this.module = await WebAssembly.compile(this.bytes);
    const instance = await WebAssembly.instantiate(this.module, { env });
    this.x = instance.exports;
    this.memory = this.x.memory ?? env.memory;
    if (this.entry.shared) {
      // Thread-local storage of this (the main) instance: tl_error's last record.
      const align = Math.max(this.x.__tls_align.value, 1);
      const tls = this.alloc(this.x.__tls_size.value + align);
      this.x.__wasm_init_tls(Math.ceil(tls / align) * align);
    }
    const abi = this.x.tl_abi_version();
    if (abi !== ABI_VERSION)
      throw new TinylmError('unsupported_abi', `module ABI ${abi}, loader ${ABI_VERSION}`);
    this.check(this.x.tl_api_init(ABI_VERSION), 0);
  }

  /** Export name called with args; a promise on the webgpu lane, where
   *  the exports that reach the device suspend while it computes. A
   *  device that failed meanwhile is worker_failure with its reason. */
  async call(name, ...args) {
    if (!this.gpu || !SUSPENDING.includes(name)) return this.x[name](...args);
    this.promising ??= {};
    const st = await (this.promising[name] ??= WebAssembly.promising(this.x[name]))(...args);
    if (st !== 0 && this.gpu.failure) throw new TinylmError(this.gpu.failureCode, `${this.gpu.failure}; load the model again`);
    return st;
  }

  u8() { return new Uint8Array(this.memory.buffer); }
  dv() { return new DataView(this.memory.buffer); }
  cstr(ptr) {
    ptr >>>= 0;
    const m = this.u8();
    let end = ptr;
    while (m[end] !== 0) end++;
    return new TextDecoder().decode(m.slice(ptr, end));
  }
  statusName(st) { return this.cstr(this.x.tl_status_name(st)); }

  alloc(n) {
    const p = this.x.malloc(Math.max(n, 1)) >>> 0; // addresses past 2 GiB arrive negative
    if (!p) throw new TinylmError('out_of_memory', `no room for ${n} bytes in wasm memory (${this.memory.buffer.byteLength} bytes in use of ${WASM32_BYTES})`);
    return p;
  }
  put(bytes) {
    const p = this.alloc(bytes.length);
    this.u8().set(bytes, p);
    return p;
  }

  /** The tl_error record of handle (0: the last failed call). */
  detail(handle) {
    const p = this.alloc(592);
    try {
      this.x.tl_error_detail(handle, p);
      const d = this.dv();
      const text = (off, cap) => {
        const b = this.u8().slice(p + off, p + off + cap);
        const z = b.indexOf(0);
        return new TextDecoder().decode(z < 0 ? b : b.subarray(0, z));
      };
      return {
        status: d.getInt32(p, true), stage: text(4, 24), layer: d.getInt32(p + 28, true),
        position: d.getUint32(p + 32, true), index: d.getBigUint64(p + 40, true),
        kind: text(48, 24), line: d.getUint32(p + 72, true), column: d.getUint32(p + 76, true),
        message: text(80, 512),
      };
    } finally {
      this.x.free(p);
    }
  }

  /** Throws the typed error of a failed call (status st on handle h). */
  check(st, h) {
    if (st === 0) return;
    const code = this.statusName(st);
    let e = this.detail(h);
    // A handle that names no live object has no record of its own.
    if (e.status !== st) e = this.detail(0);
    const extra = { status: st };
    for (const k of ['stage', 'kind']) if (e[k]) extra[k] = e[k];
    if (e.layer >= 0 && e.stage) Object.assign(extra, { layer: e.layer, position: e.position, index: e.index });
    if (e.kind === 'json') Object.assign(extra, { line: e.line, column: e.column });
    // A grammar refused by its reader: the byte offset in its text.
    if (GRAMMAR_READERS.has(e.kind)) extra.offset = Number(e.index);
    throw new TinylmError(code, e.message || code, extra);
  }

  /** Runs a call with u32 out slots; returns their values. */
  outs(n, fn) {
    const p = this.alloc(8 * n);
    try {
      fn(...Array.from({ length: n }, (_, i) => p + 8 * i));
      const d = this.dv();
      return Array.from({ length: n }, (_, i) => d.getUint32(p + 8 * i, true));
    } finally {
      this.x.free(p);
    }
  }

  selfTests() {
    const results = SELF_TESTS.map((name, i) => {
      const st = this.x.tl_wasm_self_test(i);
      return { name, ok: st === 0, status: this.statusName(st) };
    });
    return results;
  }
}

async function startLane(lane, manifest, base, record, opts = {}) {
  // The webgpu lane runs the simd module with its products on the device.
  const entry = manifest.modules[lane === 'webgpu' ? 'simd' : lane];
  if (!entry) throw new TinylmError('unsupported_feature', `the manifest lists no ${lane} module`);
  const gpu = lane === 'webgpu' ? await startGpu(opts.webgpu, record) : null;
  try {
    return await startModule(lane, entry, base, record, gpu, !!opts.webgpu?.check);
  } catch (e) {
    gpu?.destroy();
    throw e;
  }
}

async function startGpu(options, record) {
  const info = {};
  try {
    return await openGpu(options, info);
  } catch (e) {
    throw new TinylmError(e.code ?? 'worker_failure', e.message);
  } finally {
    if (info.adapter) record.webgpu = info;
  }
}

async function startModule(lane, entry, base, record, gpu, checkAll = false) {
  const url = new URL(entry.file, base);
  const bytes = await readUrl(url);
  const got = await sha256Hex(bytes);
  if (bytes.length !== entry.size || got !== entry.sha256)
    throw new TinylmError('hash_mismatch', `${entry.file}: SHA-256 ${got} (${bytes.length} bytes), the manifest says ${entry.sha256} (${entry.size} bytes)`);
  record.modules[lane] = { file: entry.file, sha256: got, size: bytes.length };
  const rt = new Runtime(lane, entry, bytes, gpu);
  await rt.start();
  const tests = rt.selfTests();
  // SHA-256 through the module against WebCrypto (an independent oracle).
  const sample = Uint8Array.from({ length: 4099 }, (_, j) => j % 251);
  const expect = await sha256Hex(sample);
  const p = rt.put(sample);
  const out = rt.alloc(32);
  const st = rt.x.tl_wasm_sha256(p, sample.length, out);
  const mine = hex(rt.u8().slice(out, out + 32));
  rt.x.free(p);
  rt.x.free(out);
  tests.push({ name: 'sha256-vs-webcrypto', ok: st === 0 && mine === expect, status: rt.statusName(st) });
  record.selfTests[lane] = tests;
  if (gpu && tests.every((t) => t.ok)) await gpuSelfTests(rt, tests, checkAll);
  const failed = tests.filter((t) => !t.ok);
  if (failed.length)
    throw new TinylmError('self_test_failed', `${lane}: ${failed.map((t) => (t.why ? `${t.name} (${t.why})` : t.name)).join(', ')} failed`);
  rt.kernels = rt.cstr(rt.x.tl_wasm_kernels());
  if (gpu) rt.kernels += `; q8/q4 products: WGSL on ${record.webgpu.adapter.architecture || record.webgpu.adapter.vendor || 'the WebGPU adapter'}`;
  return rt;
}

// The webgpu lane's probes in WGSL, then (all passing) the device on and
// the tiny forward pass through it in check mode (self-test 6). Appends to
// tests; a failure's reason is its why.
async function gpuSelfTests(rt, tests, checkAll) {
  // W-3's bound from the module (tl_wasm_gpu_bound: the one implementation,
  // docs/webgpu-profile.md) for the product probes' results that are not
  // the reference's bits.
  const bound = (type, row, n, codes, scales) => {
    const ps = [row, new Uint8Array(codes.buffer, codes.byteOffset, codes.byteLength),
      new Uint8Array(scales.buffer, scales.byteOffset, scales.byteLength)].map((b) => rt.put(b));
    try {
      return rt.x.tl_wasm_gpu_bound(type, ps[0], n, ps[1], ps[2]);
    } finally {
      for (const p of ps) rt.x.free(p);
    }
  };
  tests.push(...await rt.gpu.selfTests(bound));
  if (!tests.every((t) => t.ok)) return;
  const test = { name: 'forward-webgpu', ok: false, status: 'unsupported_feature' };
  tests.push(test);
  if (typeof rt.x.tl_wasm_gpu_enable !== 'function') {
    test.why = 'this module has no device hook (tl_wasm_gpu_enable)';
    return;
  }
  rt.check(rt.x.tl_wasm_gpu_enable(1), 0);
  try {
    const st = await rt.call('tl_wasm_self_test', SELF_TEST_WEBGPU);
    Object.assign(test, { ok: st === 0, status: rt.statusName(st) });
    // webgpu.check: every product of the model's passes held to W-3 too
    if (st === 0 && checkAll) rt.check(rt.x.tl_wasm_gpu_check(1), 0);
  } catch (e) {
    Object.assign(test, { status: e.code ?? 'worker_failure', why: e.detail ?? e.message });
  }
}

// ---- the threads lane's pool ------------------------------------------------
const POOL_STACK = 1 << 20; // each pool worker's stack, as the main instance's

/** Starts threads - 1 pool workers for rt (the threads module), each its
 *  own instance over rt's shared memory with its own stack and TLS, in
 *  tl_wasm_worker (web/wasm/pool.c); returns the threads that compute.
 *  Only where the calling thread may wait (a worker, node). */
async function startPool(rt, threads) {
  const x = rt.x;
  rt.pool = [];
  // A page's main thread may not wait (the pool's caller waits for its
  // workers): the module then computes there alone.
  if (threads <= 1 || onPageThread) return 1;
  if (x.tl_wasm_pool_init(threads) !== 0)
    throw new TinylmError('invalid_argument', `threads must be 1..256, not ${threads}`);
  const url = new URL('tinylm-worker.js', import.meta.url);
  let failure = null;
  for (let w = 1; w < threads; w++) {
    const stack = rt.alloc(POOL_STACK);
    const align = x.__tls_align.value || 1;
    const tls = rt.alloc(x.__tls_size.value + align);
    const worker = await spawn(url, { detached: true });
    worker.onError((e) => { failure = e; });
    worker.post({ role: 'pool', module: rt.module, memory: rt.memory, w,
      stackTop: ((stack + POOL_STACK) & ~15) >>> 0, tls: Math.ceil(tls / align) * align });
    rt.pool.push(worker);
  }
  // Every worker in its loop before the first call (a few seconds at most).
  for (let waited = 0; x.tl_wasm_pool_ready() !== threads - 1; waited += 5) {
    if (failure || waited > 30000) {
      for (const w of rt.pool) w.terminate();
      rt.pool = [];
      throw new TinylmError('worker_failure', failure ? `a pool worker failed: ${failure.message ?? failure}`
        : `${x.tl_wasm_pool_ready()} of ${threads - 1} pool workers started in 30 s`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return threads;
}

// ---- models -----------------------------------------------------------------
const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;

// The model's bytes: a Uint8Array, or a File/Blob as it is (Model.open
// streams it into the module's memory, without a whole copy in JS).
async function bytesOf(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (isBlob(source)) return source;
  if (typeof source === 'string' || source instanceof URL) return readUrl(new URL(source, globalThis.location?.href ?? defaultBase()));
  throw new TinylmError('invalid_argument', 'source must be a URL, File/Blob, ArrayBuffer or Uint8Array');
}

/**
 * Loads a .slm model on the best lane (or opts.lane), verified and
 * self-tested. opts: lane ('scalar' | 'simd' | 'threads'), threads,
 * numerics ('strict' | 'fast'; default strict on scalar, fast otherwise),
 * context (KV tokens; default the model's, at most 4096), memoryBudget
 * (bytes: the C side refuses a larger plan), memoryLimit (bytes of wasm
 * memory this model may bring the module to; default and at most 4 GiB,
 * the wasm32 address space), base (URL of manifest.json's folder;
 * default this file's), worker (run the lane in a worker; default: on a
 * page's main thread, the threads lane, and every lane when the page is
 * cross-origin isolated).
 */
export async function loadModel(source, opts = {}) {
  const caps = await probe();
  const base = opts.base ? new URL(opts.base) : defaultBase();
  const record = {
    format: 'tinylm.capability/1', loader: 'web/tinylm.js', abi: ABI_VERSION,
    userAgent: caps.userAgent, hardwareConcurrency: caps.hardwareConcurrency,
    features: {
      simd128: caps.simd128, bulkMemory: caps.bulkMemory, atomics: caps.atomics,
      sharedArrayBuffer: caps.sharedArrayBuffer, crossOriginIsolated: caps.crossOriginIsolated,
    },
    requested: opts.lane ?? null, lane: null, laneReason: '', refused: [], modules: {}, selfTests: {},
  };
  if (opts.lane !== undefined && !LANES.includes(opts.lane) && opts.lane !== 'webgpu')
    throw new TinylmError('invalid_argument', `lane must be one of webgpu, ${LANES.join(', ')}, not '${opts.lane}'`);
  const manifest = await manifestOf(base);
  record.build = { version: manifest.version, buildId: manifest.build_id };
  record.threadsRequested = opts.threads ?? 1;
  // The requested lane first (if this runtime has it), then the lanes below it.
  let order = caps.lanes;
  if (opts.lane === 'webgpu') {
    // Refused here without a try when the runtime lacks what it needs.
    if (!caps.webgpu) record.refused.push({ lane: 'webgpu', code: 'unsupported_feature', why: caps.why.webgpu });
    order = WEBGPU_ORDER.filter((l) => (l === 'webgpu' ? caps.webgpu : caps.lanes.includes(l)));
  } else if (opts.lane) {
    if (!caps.lanes.includes(opts.lane)) record.refused.push({ lane: opts.lane, code: 'unsupported_feature', why: caps.why[opts.lane] });
    order = LANES.slice(LANES.indexOf(opts.lane)).filter((l) => caps.lanes.includes(l));
  }
  const bytes = await bytesOf(source);
  for (const lane of order) {
    let rt;
    try {
      if (inWorker(lane, opts, caps)) {
        // In a worker: the threads lane always (a page's main thread may
        // not wait), other lanes on cross-origin isolated pages (the page
        // stays responsive and a cancel reaches the running reply). The
        // lane's checks happen there; a refused lane comes back as null
        // (recorded), a model's error is thrown.
        const m = await RemoteModel.open(lane, base, bytes, opts, record, caps);
        if (m) return m;
        continue;
      }
      rt = await startLane(lane, manifest, base, record, opts);
    } catch (e) {
      if (inWorker(lane, opts, caps) && e.code !== 'worker_failure') throw e;
      record.refused.push({ lane, code: e.code ?? 'error', why: e.message });
      continue;
    }
    chosen(record, rt, opts, caps);
    record.threads = lane === 'threads' ? await startPool(rt, opts.threads ?? 1) : 1;
    return Model.open(rt, bytes, opts, record);
  }
  throw new TinylmError('self_test_failed', `no lane passed its checks: ${JSON.stringify(record.refused)}`, { capabilityReceipt: record });
}

function chosen(record, rt, opts, caps) {
  record.lane = rt.lane;
  record.laneReason = opts.lane === rt.lane ? 'requested'
    : opts.lane ? `requested ${opts.lane}; fell back (see refused)`
    : rt.lane === caps.lanes[0] ? 'the best lane this runtime offers'
    : 'the best lane that passed its checks (see refused)';
  record.kernels = rt.kernels;
}

/** A File/Blob read chunk by chunk straight into the module's memory at
 *  `at` (blob.size bytes allocated there), each chunk hashed where it
 *  landed as it arrives (the module's SHA-256 in steps); returns that
 *  digest, which the artifact id tl_model_open_bytes computes must equal. */
async function streamInto(rt, blob, at) {
  const reader = blob.stream().getReader();
  let n = 0;
  rt.x.tl_wasm_sha256_begin();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.length > blob.size - n) throw new TinylmError('io', `the file grew while it was read (${blob.size} bytes when it was picked)`);
      rt.u8().set(value, at + n);
      const st = rt.x.tl_wasm_sha256_add(at + n, value.length);
      if (st !== 0) throw new TinylmError(rt.statusName(st), 'hashing the streamed model');
      n += value.length;
    }
  } catch (e) {
    if (e instanceof TinylmError) throw e;
    throw new TinylmError('io', `reading the file: ${e.message}`);
  }
  if (n !== blob.size) throw new TinylmError('io', `the file ended after ${n} of its ${blob.size} bytes`);
  const out = rt.alloc(32);
  try {
    const st = rt.x.tl_wasm_sha256_end(out);
    if (st !== 0) throw new TinylmError(rt.statusName(st), 'hashing the streamed model');
    return hex(rt.u8().slice(out, out + 32));
  } finally {
    rt.x.free(out);
  }
}

// The grammar args names ([key, value]) or null: at most one of
// jsonObject, jsonSchema, grammar and regex (exactly one when required).
function grammarOf(args, required) {
  const given = Object.keys(GRAMMAR_KINDS).filter((k) => args[k] !== undefined && args[k] !== false);
  if (given.length > 1)
    throw new TinylmError('invalid_argument', `at most one of jsonObject, jsonSchema, grammar and regex, not ${given.join(' and ')}`);
  if (given.length === 0) {
    if (required) throw new TinylmError('invalid_argument', 'give one of jsonObject, jsonSchema, grammar and regex');
    return null;
  }
  return [given[0], args[given[0]]];
}

// The bytes tl_grammar_compile reads for key's value.
function grammarText(key, value) {
  let text;
  if (key === 'jsonObject') {
    if (value !== true) throw new TinylmError('invalid_argument', `jsonObject must be true, not ${String(value)}`);
    text = '';
  } else if (key === 'jsonSchema') {
    // A schema as an object is sent as its JSON; as text, as it is.
    text = typeof value === 'string' ? value : JSON.stringify(value);
    if (text === undefined) throw new TinylmError('invalid_argument', `jsonSchema must be a schema (an object, a boolean) or its JSON text, not ${typeof value}`);
  } else {
    if (typeof value !== 'string') throw new TinylmError('invalid_argument', `${key} must be text, not ${typeof value}`);
    text = value;
  }
  if (!text.isWellFormed())
    throw new TinylmError('invalid_utf8', `the ${key} text holds a lone surrogate (not UTF-8)`, { kind: GRAMMAR_KINDS[key].name });
  return new TextEncoder().encode(text);
}

class Model {
  static async open(rt, bytes, opts, record) {
    // Memory preflight, first on the bytes alone: they must fit beside what is used.
    const limit = Math.min(WASM32_BYTES, opts.memoryLimit ?? WASM32_BYTES);
    const used = rt.memory.buffer.byteLength;
    const size = isBlob(bytes) ? bytes.size : bytes.length;
    if (size > limit - used)
      throw new TinylmError('out_of_memory', `the model is ${size} bytes; the memory limit is ${limit} (wasm32: at most ${WASM32_BYTES}), ${used} already in use: it cannot fit`, { capabilityReceipt: record });
    const data = isBlob(bytes) ? rt.alloc(size) : rt.put(bytes);
    const m = new Model(rt, data, record);
    try {
      const streamed = isBlob(bytes) ? await streamInto(rt, bytes, data) : null;
      [m.handle] = rt.outs(1, (out) => rt.check(rt.x.tl_model_open_bytes(data, size, OPEN_BORROW, out), 0));
      m.artifactId = m.#artifactId();
      if (streamed !== null && streamed !== m.artifactId)
        throw new TinylmError('hash_mismatch', `the streamed bytes have SHA-256 ${streamed}, the model in memory ${m.artifactId}`);
      const numerics = opts.numerics ?? (rt.lane === 'scalar' ? 'strict' : 'fast');
      if (numerics !== 'strict' && numerics !== 'fast')
        throw new TinylmError('invalid_argument', `numerics must be strict or fast, not '${numerics}'`);
      // The device takes the fast lane's products (profile webgpu/1).
      if (rt.gpu && numerics !== 'fast')
        throw new TinylmError('invalid_argument', 'the webgpu lane computes with the fast numerics (profile webgpu/1), not strict');
      m.numerics = numerics;
      m.options = { lane: numerics === 'strict' ? LANE_CODE.scalar : LANE_CODE.fast, threads: opts.threads ?? 0, context: opts.context ?? 0, budget: opts.memoryBudget ?? 0 };
      m.plan = m.preflight();
      // What the session still has to allocate: all of the plan but the
      // model's own bytes (already here) and its tokenizer (made at open);
      // the fast lane packs a copy of the weights, so those count.
      const need = m.plan.total - m.plan.tokenizer - (numerics === 'strict' ? m.plan.weights : 0);
      const room = limit - rt.memory.buffer.byteLength;
      if (need > room)
        throw new TinylmError('out_of_memory', `the session needs ${need} bytes (weights ${m.plan.weights}, KV cache ${m.plan.kv_cache}, scratch ${m.plan.scratch}, logits ${m.plan.logits}, sampler ${m.plan.sampler}) beyond the ${size}-byte model; ${room} bytes are left of the ${limit}-byte limit (wasm32: at most ${WASM32_BYTES})`, { plan: m.plan });
      try {
        m.session = m.#newSession();
      } catch (e) {
        // The C side names the CLI's flag; here the budget is an option.
        if (e.code !== 'out_of_memory' || !e.detail.includes('--mem-budget')) throw e;
        throw new TinylmError(e.code, e.detail.replace('--mem-budget', 'the memoryBudget option'), { status: e.status, plan: m.plan });
      }
      record.memory = { modelBytes: size, from: isBlob(bytes) ? 'stream' : 'buffer', plan: m.plan, wasmMemoryBytes: rt.memory.buffer.byteLength };
      record.numerics = numerics;
      record.artifactId = m.artifactId;
      ({ cbor: m.capabilityReceiptCbor, id: m.capabilityReceiptId } = capabilityReceiptFile(rt, record));
      return m;
    } catch (e) {
      m.#release();
      if (e instanceof TinylmError) e.capabilityReceipt = record;
      throw e;
    }
  }

  constructor(rt, data, record) {
    this.rt = rt;
    this.data = data;
    this.handle = 0;
    this.session = 0;
    this.capabilityReceipt = record;
    this.lane = rt.lane;
    this.turn = 0;
    this.grammars = new Map(); // handle -> the grammar compileGrammar() gave for it
  }

  #artifactId() {
    const rt = this.rt;
    const p = rt.alloc(32);
    try {
      rt.check(rt.x.tl_model_artifact_id(this.handle, p), this.handle);
      return hex(rt.u8().slice(p, p + 32));
    } finally {
      rt.x.free(p);
    }
  }

  #options() {
    const rt = this.rt;
    const p = rt.alloc(24);
    const d = rt.dv();
    d.setUint32(p, this.options.lane, true);
    d.setUint32(p + 4, this.options.threads, true);
    d.setUint32(p + 8, this.options.context, true);
    d.setUint32(p + 12, 0, true);
    d.setBigUint64(p + 16, BigInt(this.options.budget), true);
    return p;
  }

  /** The memory plan (bytes) of this model's session (tl_model_preflight). */
  preflight() {
    const rt = this.rt;
    const o = this.#options();
    const p = rt.alloc(64);
    try {
      rt.check(rt.x.tl_model_preflight(this.handle, o, p), this.handle);
      const d = rt.dv();
      const n = (off) => Number(d.getBigUint64(p + off, true));
      return { context: d.getUint32(p, true), weights: n(8), tokenizer: n(16), kv_cache: n(24), scratch: n(32), logits: n(40), sampler: n(48), total: n(56) };
    } finally {
      rt.x.free(o);
      rt.x.free(p);
    }
  }

  #newSession() {
    const rt = this.rt;
    const o = this.#options();
    try {
      return rt.outs(1, (out) => rt.check(rt.x.tl_session_new(this.handle, o, out), this.handle))[0];
    } finally {
      rt.x.free(o);
    }
  }

  /**
   * Compiles a grammar once (tl_grammar_compile), for any number of
   * replies: spec gives exactly one of jsonObject (true: any JSON object),
   * jsonSchema (a JSON Schema, draft 2020-12: an object or its JSON text),
   * grammar (llama.cpp GBNF text, start rule root) or regex (text the whole
   * reply matches). Returns { handle, kind, digest (hex: the id receipts
   * name it by) }, a plain object: generate({ grammar: it }) uses it, and
   * freeGrammar(it) ends it (dispose() ends those left). A grammar the
   * engine does not enforce is refused, never ignored: TinylmError
   * unsupported_feature (a keyword, construct) or invalid_argument
   * (malformed text), its message naming what, kind the reader
   * ('json_schema', 'gbnf', 'regex'), offset the byte in the text.
   */
  compileGrammar(spec = {}) {
    const rt = this.rt;
    const [key, value] = grammarOf(spec, true);
    const kind = GRAMMAR_KINDS[key];
    const b = grammarText(key, value);
    const p = rt.put(b);
    try {
      const [handle] = rt.outs(1, (out) => rt.check(rt.x.tl_grammar_compile(kind.code, p, b.length, out), 0));
      const d = rt.alloc(32);
      try {
        rt.check(rt.x.tl_grammar_get_digest(handle, d), handle);
        const g = { handle, kind: kind.name, digest: hex(rt.u8().slice(d, d + 32)) };
        this.grammars.set(handle, g);
        return { ...g };
      } catch (e) {
        rt.x.tl_grammar_free(handle);
        throw e;
      } finally {
        rt.x.free(d);
      }
    } finally {
      rt.x.free(p);
    }
  }

  /** Ends a grammar compileGrammar() gave (a later use is stale_handle). */
  freeGrammar(g) {
    const mine = this.#grammar(g);
    this.grammars.delete(mine.handle);
    this.rt.check(this.rt.x.tl_grammar_free(mine.handle), mine.handle);
  }

  // This model's record of g (from compileGrammar, possibly as a copy that
  // crossed postMessage): a handle of another module, or one freed, is
  // refused here, before the C side could take it for another grammar.
  #grammar(g) {
    const mine = this.grammars.get(g?.handle);
    if (!mine || mine.digest !== g.digest)
      throw new TinylmError('stale_handle', 'this grammar was freed or compiled for another model (compileGrammar)');
    return mine;
  }

  /**
   * One reply. args: prompt (text) or messages ([{role, content}]) with
   * enableThinking; maxTokens (0: until the context is full), seed,
   * temperature, topK, topP, minP, repeatPenalty (given ones override the
   * artifact's defaults), repeatWindow, stop ([strings]), continue (the
   * prompt follows the session's cache), turn, onToken({id, text}),
   * onText(text), signal (AbortSignal, polled at every token).
   * Structured output (docs/structured.md), at most one of: jsonObject
   * (true), jsonSchema (object or JSON text), grammar (GBNF text, or a
   * grammar from compileGrammar()), regex (text): compiled for this reply
   * and freed after it (a refusal is compileGrammar()'s typed error), its
   * token mask applied before every draw; thinkBudget (tokens of a
   * <think> block before the constraint starts; default 1024).
   * Returns { ids, text, stop, receiptId, receipt (CBOR bytes), promptTokens,
   * position, timings: { prefillUs, decodeUs, prefillTokensPerS, decodeTokensPerS } },
   * and grammarDigest (hex) when a grammar applied.
   * A reply stopped through signal throws TinylmError 'cancelled' whose
   * `result` is that object for what was generated (stop 'cancelled').
   */
  async generate(args = {}) {
    const rt = this.rt;
    const enc = new TextEncoder();
    const frees = [];
    const keep = (p) => (frees.push(p), p);
    let gen = 0;
    // The threads lane: 1 + a pool worker whose task trapped (web/wasm/pool.c).
    const poolFailed = () => rt.x.tl_wasm_pool_failed?.() ?? 0;
    const workerFailure = (w, when) => new TinylmError('worker_failure',
      `pool worker ${w - 1} of the threads lane failed ${when}; load the model again`);
    if (poolFailed()) throw workerFailure(poolFailed(), 'during an earlier reply');
    let grammar = null, ownGrammar = false;
    try {
      const g = grammarOf(args, false);
      if (g && g[0] === 'grammar' && typeof g[1] === 'object' && g[1] !== null) grammar = this.#grammar(g[1]);
      else if (g) {
        grammar = this.compileGrammar({ [g[0]]: g[1] });
        ownGrammar = true;
      }
      const p = keep(rt.alloc(PARAMS_BYTES));
      rt.u8().fill(0, p, p + PARAMS_BYTES);
      const d = () => rt.dv();
      if ((args.prompt === undefined) === (args.messages === undefined))
        throw new TinylmError('invalid_argument', 'give exactly one of prompt and messages');
      if (args.prompt !== undefined) {
        const b = enc.encode(String(args.prompt));
        d().setUint32(p, keep(rt.put(b)), true);
        d().setUint32(p + 4, b.length, true);
      } else {
        const conv = { messages: args.messages };
        if (args.enableThinking !== undefined) conv.enable_thinking = !!args.enableThinking;
        const b = enc.encode(JSON.stringify(conv));
        d().setUint32(p + 8, keep(rt.put(b)), true);
        d().setUint32(p + 12, b.length, true);
      }
      let given = 0;
      const f64 = (key, off) => {
        if (args[key] === undefined) return;
        given |= GIVEN[key];
        d().setFloat64(p + off, Number(args[key]), true);
      };
      f64('temperature', 32);
      f64('topP', 40);
      f64('minP', 48);
      f64('repeatPenalty', 56);
      if (args.topK !== undefined) {
        given |= GIVEN.topK;
        d().setUint32(p + 64, args.topK, true);
      }
      d().setUint32(p + 24, given, true);
      d().setUint32(p + 68, args.repeatWindow ?? 0, true);
      d().setBigUint64(p + 72, BigInt(args.seed ?? 0), true);
      d().setUint32(p + 80, args.turn ?? 0, true);
      d().setUint32(p + 84, args.maxTokens ?? 64, true);
      const stops = args.stop ?? [];
      if (stops.length) {
        const ptrs = keep(rt.alloc(4 * stops.length));
        const lens = keep(rt.alloc(4 * stops.length));
        stops.forEach((s, i) => {
          const b = enc.encode(String(s));
          d().setUint32(ptrs + 4 * i, keep(rt.put(b)), true);
          d().setUint32(lens + 4 * i, b.length, true);
        });
        d().setUint32(p + 88, ptrs, true);
        d().setUint32(p + 92, lens, true);
        d().setUint32(p + 96, stops.length, true);
      }
      let flags = args.continue ? GENERATE_CONTINUE : 0;
      // A think budget without a grammar goes to the C side, which refuses it.
      if (grammar || args.thinkBudget !== undefined) {
        const budget = args.thinkBudget ?? 0;
        if (!Number.isInteger(budget) || budget < 0 || budget > U32_MAX)
          throw new TinylmError('invalid_argument', `thinkBudget must be an integer 0..${U32_MAX}, not ${budget}`, { kind: 'think_budget' });
        flags |= GENERATE_GRAMMAR;
        d().setUint32(p + PARAMS_GRAMMAR, grammar?.handle ?? 0, true);
        d().setUint32(p + PARAMS_THINK_BUDGET, budget, true);
      }
      d().setUint32(p + 100, flags, true);
      [gen] = rt.outs(1, (out) => rt.check(rt.x.tl_generation_new(this.session, out), this.session));
      const decoder = new TextDecoder();
      let pending = null;
      const flush = () => {
        if (pending && args.onToken) args.onToken(pending);
        pending = null;
      };
      const stopNow = () => (args.signal?.aborted || poolFailed() ? 1 : 0);
      rt.streams.set(gen, {
        token: (id) => {
          flush();
          pending = { id, text: '' };
          return stopNow();
        },
        text: (ptr, len) => {
          const t = decoder.decode(rt.u8().slice(ptr, ptr + len), { stream: true });
          if (pending) pending.text += t;
          if (args.onText && t) args.onText(t);
          return stopNow();
        },
        prefill: () => stopNow(),
      });
      // The threads lane: the parallel tasks each thread runs for this reply.
      const tasks = () => Array.from({ length: this.capabilityReceipt.threads }, (_, w) => rt.x.tl_wasm_pool_tasks(w));
      const before = rt.x.tl_wasm_pool_tasks ? tasks() : null;
      let st;
      try {
        st = await rt.call('tl_generation_run', gen, p);
      } finally {
        flush();
        rt.streams.delete(gen);
      }
      if (poolFailed()) throw workerFailure(poolFailed(), 'during this reply');
      try {
        rt.check(st, gen);
      } catch (e) {
        // A cancelled reply has its result too, receipt included (stop
        // 'cancelled', as tinylm run writes one at Ctrl-C): e.result.
        if (e.code === 'cancelled') e.result = this.#result(gen, grammar);
        throw e;
      }
      const out = this.#result(gen, grammar);
      if (before) out.poolTasks = tasks().map((n, w) => n - before[w]);
      return out;
    } finally {
      if (gen) rt.x.tl_generation_free(gen);
      if (ownGrammar) {
        this.grammars.delete(grammar.handle);
        rt.x.tl_grammar_free(grammar.handle);
      }
      for (const q of frees) rt.x.free(q);
    }
  }

  #result(gen, grammar = null) {
    const rt = this.rt;
    const p = rt.alloc(136);
    try {
      rt.check(rt.x.tl_generation_result_get(gen, p), gen);
      const d = rt.dv();
      const u = (off) => d.getUint32(p + off, true);
      const bytes = (ptr, n) => rt.u8().slice(ptr, ptr + n);
      const ids = new Uint32Array(rt.memory.buffer.slice(u(0), u(0) + 4 * u(4)));
      const prefillUs = Number(d.getBigUint64(p + 40, true));
      const decodeUs = Number(d.getBigUint64(p + 48, true));
      const promptTokens = u(28);
      const rate = (n, us) => (us > 0 ? n / (us / 1e6) : null);
      return {
        ids: Array.from(ids),
        text: new TextDecoder().decode(bytes(u(8), u(12))),
        raw: bytes(u(16), u(20)),
        stop: rt.cstr(u(24)),
        promptTokens,
        position: u(32),
        receipt: u(56) ? bytes(u(56), u(60)) : null,
        receiptId: rt.cstr(p + 64),
        timings: { prefillUs, decodeUs, prefillTokensPerS: rate(promptTokens, prefillUs), decodeTokensPerS: rate(ids.length, decodeUs) },
        ...(grammar ? { grammarDigest: grammar.digest } : {}),
      };
    } finally {
      rt.x.free(p);
    }
  }

  /** The webgpu lane's device products since load (tl_wasm_gpu_stats):
   *  { products, elements, notBitEqual (elements not bit-equal to the fast
   *  lane's, counted in check mode), maxBoundRatio, failures }; null on
   *  other lanes. */
  gpuStats() {
    const rt = this.rt;
    if (!rt.gpu || typeof rt.x.tl_wasm_gpu_stats !== 'function') return null;
    const p = rt.alloc(48);
    try {
      rt.check(rt.x.tl_wasm_gpu_stats(p, 0), 0);
      const [products, elements, notBitEqual, maxBoundRatio, failures] = Array.from({ length: 5 }, (_, i) => rt.dv().getFloat64(p + 8 * i, true));
      return { products, elements, notBitEqual, maxBoundRatio, failures };
    } finally {
      rt.x.free(p);
    }
  }

  /** Empties the session's KV cache (the next reply starts afresh). */
  reset() {
    this.rt.check(this.rt.x.tl_session_reset(this.session), this.session);
  }

  /**
   * The observation records of a prompt's forward pass on this model's
   * lane (docs/observe.md): args { prompt } (text) or { ids } (token ids).
   * Returns the tinylm.observe/1 document (CBOR bytes, a Uint8Array), which
   * `tinylm observe --compare` compares with another lane's. The session's
   * cache is empty afterwards.
   */
  async observe(args = {}) {
    const rt = this.rt;
    const frees = [];
    const keep = (p) => (frees.push(p), p);
    try {
      if ((args.prompt === undefined) === (args.ids === undefined))
        throw new TinylmError('invalid_argument', 'give exactly one of prompt and ids');
      let text = 0, textLen = 0, ids = 0, nIds = 0;
      if (args.prompt !== undefined) {
        const b = new TextEncoder().encode(String(args.prompt));
        text = keep(rt.put(b));
        textLen = b.length;
      } else {
        const a = Uint32Array.from(args.ids);
        ids = keep(rt.alloc(4 * a.length));
        nIds = a.length;
        a.forEach((v, i) => rt.dv().setUint32(ids + 4 * i, v, true));
      }
      const len = keep(rt.alloc(4));
      // The length first (TL_ERR_BOUNDS says it), then the document.
      const st = await rt.call('tl_session_observe', this.session, text, textLen, ids, nIds, 0, 0, len);
      if (st !== STATUS_BOUNDS) rt.check(st, this.session);
      const n = rt.dv().getUint32(len, true);
      const out = keep(rt.alloc(n));
      rt.check(await rt.call('tl_session_observe', this.session, text, textLen, ids, nIds, out, n, len), this.session);
      return rt.u8().slice(out, out + rt.dv().getUint32(len, true));
    } finally {
      for (const q of frees) rt.x.free(q);
    }
  }

  #release() {
    const rt = this.rt;
    for (const h of this.grammars.keys()) rt.x.tl_grammar_free(h);
    this.grammars.clear();
    if (this.session) rt.x.tl_session_free(this.session);
    if (this.handle) rt.x.tl_model_close(this.handle);
    // The bytes were borrowed by the model: free them only after it is gone.
    if (this.data) rt.x.free(this.data);
    this.data = 0;
    for (const w of rt.pool ?? []) w.terminate();
    rt.pool = [];
    rt.gpu?.destroy();
    rt.gpu = null;
  }

  /** Closes the session and the model. Their handles stay stale afterwards:
   *  a later generate() is the typed error stale_handle. */
  async dispose() {
    this.#release();
  }
}

// ---- workers: the threads lane ----------------------------------------------
// Web Workers in browsers, worker_threads under node, behind one shape.
function canSpawn() {
  return isNode || typeof Worker === 'function';
}

// Whether lane runs in a worker: opts.worker when given; else on a page's
// main thread, which may not wait, the threads lane, and in a cross-origin
// isolated page every lane (the page stays responsive; the cancel word
// needs a SharedArrayBuffer). In a worker or node the lane runs here.
const onPageThread = typeof window !== 'undefined' && typeof document !== 'undefined';
function inWorker(lane, opts, caps) {
  if (!canSpawn()) return false;
  if (opts.worker !== undefined) return !!opts.worker && caps.sharedArrayBuffer;
  return onPageThread && (lane === 'threads' || caps.crossOriginIsolated);
}

export async function spawn(url, { detached = false } = {}) {
  if (isNode) {
    const { Worker: NodeWorker } = await import('node:worker_threads');
    const w = new NodeWorker(url);
    // A pool worker waits in wasm for good: it must not keep node alive.
    if (detached) w.unref();
    return {
      post: (m) => w.postMessage(m),
      on: (fn) => w.on('message', fn),
      onError: (fn) => w.on('error', fn),
      terminate: () => w.terminate(),
    };
  }
  const w = new Worker(url, { type: 'module' });
  return {
    post: (m) => w.postMessage(m),
    on: (fn) => w.addEventListener('message', (e) => fn(e.data)),
    onError: (fn) => w.addEventListener('error', (e) => fn(e.error ?? new Error(e.message))),
    terminate: () => w.terminate(),
  };
}

// What crosses postMessage: a TinylmError as plain data, and back.
export function errorData(e) {
  const out = { code: e?.code ?? 'internal_invariant', detail: e?.detail ?? String(e?.message ?? e) };
  for (const k of ['status', 'stage', 'layer', 'position', 'index', 'kind', 'line', 'column', 'offset', 'plan', 'capabilityReceipt', 'result'])
    if (e?.[k] !== undefined) out[k] = e[k];
  return out;
}
function errorOf(d) {
  const { code, detail, ...extra } = d;
  return new TinylmError(code, detail, extra);
}

/** A model whose runtime (a module, and on the threads lane its Web Worker
 *  pool) lives in a worker; the same interface as Model, every call a
 *  message. */
class RemoteModel {
  static async open(lane, base, bytes, opts, record, caps) {
    let w;
    try {
      w = await spawn(new URL('tinylm-worker.js', base));
    } catch (e) {
      throw new TinylmError('worker_failure', `cannot start the worker: ${e.message}`);
    }
    // One word the page sets to cancel the running reply (shared memory:
    // the worker reads it between tokens while it computes).
    const ctrl = new Int32Array(new SharedArrayBuffer(4));
    const m = new RemoteModel(w, ctrl, record);
    const { threads, memoryBudget, memoryLimit, numerics, context, webgpu } = opts;
    let got;
    try {
      got = await m.call({ op: 'open', lane, base: String(base), bytes, ctrl, record, caps,
        opts: { lane: opts.lane, threads, memoryBudget, memoryLimit, numerics, context, webgpu } });
    } catch (e) {
      w.terminate(); // the model was refused: nothing is left to run there
      throw e;
    }
    if (got.refused) {
      Object.assign(record, got.record);
      w.terminate();
      return null;
    }
    m.capabilityReceipt = got.record;
    m.capabilityReceiptCbor = got.capabilityReceiptCbor;
    m.capabilityReceiptId = got.capabilityReceiptId;
    m.lane = lane;
    m.artifactId = got.artifactId;
    m.plan = got.plan;
    m.numerics = got.numerics;
    return m;
  }

  constructor(w, ctrl, record) {
    this.w = w;
    this.ctrl = ctrl;
    this.capabilityReceipt = record;
    this.pending = new Map();
    this.next = 1;
    this.disposed = false;
    w.on((msg) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      if (msg.token) return p.token?.(msg.token);
      this.pending.delete(msg.id);
      if (msg.error) {
        const e = errorOf(msg.error);
        if (e.capabilityReceipt) Object.assign(this.capabilityReceipt, e.capabilityReceipt);
        p.reject(e);
      } else p.resolve(msg.value);
    });
    w.onError((err) => {
      for (const p of this.pending.values()) p.reject(new TinylmError('worker_failure', String(err?.message ?? err)));
      this.pending.clear();
    });
  }

  call(msg, token) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, token });
      this.w.post({ ...msg, id });
    });
  }

  async generate(args = {}) {
    if (this.disposed) throw new TinylmError('stale_handle', 'the model was disposed');
    const { onToken, onText, signal, ...rest } = args;
    Atomics.store(this.ctrl, 0, 0);
    const abort = () => Atomics.store(this.ctrl, 0, 1);
    if (signal?.aborted) abort();
    signal?.addEventListener?.('abort', abort);
    try {
      return await this.call({ op: 'generate', args: rest }, (ev) => {
        if (onToken) onToken(ev);
        if (onText && ev.text) onText(ev.text);
      });
    } finally {
      signal?.removeEventListener?.('abort', abort);
    }
  }

  preflight() { return this.plan; }
  async compileGrammar(spec = {}) {
    if (this.disposed) throw new TinylmError('stale_handle', 'the model was disposed');
    return this.call({ op: 'compileGrammar', spec });
  }
  async freeGrammar(g) {
    if (this.disposed) throw new TinylmError('stale_handle', 'the model was disposed');
    return this.call({ op: 'freeGrammar', grammar: g });
  }
  async reset() { return this.call({ op: 'reset' }); }
  async gpuStats() { return this.call({ op: 'gpuStats' }); }
  async observe(args = {}) {
    if (this.disposed) throw new TinylmError('stale_handle', 'the model was disposed');
    return this.call({ op: 'observe', args });
  }

  async dispose() {
    if (this.disposed) return;
    this.disposed = true;
    try {
      await this.call({ op: 'dispose' });
    } finally {
      this.w.terminate();
    }
  }
}

// For web/tinylm-worker.js only.
export const _internal = { Model, TinylmError, manifestOf, startLane, startPool, chosen, isNode };
