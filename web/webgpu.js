// The webgpu lane's device side (docs/web.md, The WebGPU lane): the
// adapter and device, the q8/q4 weights uploaded once, the WGSL products
// the module's fast lane hands over (tl_host_gpu_* imports, web/wasm/host.c),
// the start-up probes, and what the capability receipt says about them.
// Everything else of the forward pass stays in the module.
import { productsCall, rowProduct } from './products_ref.js';

// tinylm.h status numbers the imports return.
const ST = { ok: 0, invalid_argument: 1, out_of_memory: 9, unsupported_shape: 13, worker_failure: 16 };
const QTYPE = { q8: 3, q4: 4 }; // tl_qtype
const BLOCK_WORDS = { 3: 9, 4: 5 }; // one packed block: its f32 scale and 32 (q8) or 16 (q4) code bytes
const WG = 64; // invocations per workgroup
// A weight buffer holds whole rows, at most this many bytes (Chromium
// refuses a buffer of exactly maxBufferSize on SwiftShader; 256 MiB buffers
// are what the notes measured live in numbers).
const CHUNK_CAP = 256 * 1024 * 1024;

// One invocation per (row, token) output, each computing its row's chain in
// F-4's order (docs/fast-profile.md; docs/webgpu-profile.md): per block the
// exact i32 block sum, p = dw * dx, t = f32(s) * p, sixteen accumulators
// A[b mod 16] += t for b ascending, then the tree T. The packed layouts are
// tl_kern_pack's (weights) and tl_kern_x's (activation codes and scales).
const SOURCE = `
struct Params {
  rows: u32,      // rows in this weight buffer
  row_words: u32, // u32 words per row
  nb: u32,        // blocks per row
  ng: u32,        // groups of 16 blocks
  tokens: u32,
  y_off: u32,     // this buffer's first output: y_off + t * y_stride + r
  y_stride: u32,  // the matrix's rows
  span: u32,      // invocations per row of the dispatch grid
  x_scales: u32,  // word offset of the activation scales in X
};
@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

// T: the upper half onto the lower half, four times.
fn tree(a: array<f32, 16>) -> f32 {
  var b: array<f32, 8>;
  for (var j = 0u; j < 8u; j++) { b[j] = a[j] + a[j + 8u]; }
  var c: array<f32, 4>;
  for (var j = 0u; j < 4u; j++) { c[j] = b[j] + b[j + 4u]; }
  let d0 = c[0] + c[2];
  let d1 = c[1] + c[3];
  return d0 + d1;
}

// The four signed byte products of a weight word and an activation word.
fn dot4(w: i32, x: i32) -> i32 {
  return extractBits(w, 0u, 8u) * extractBits(x, 0u, 8u) + extractBits(w, 8u, 8u) * extractBits(x, 8u, 8u)
       + extractBits(w, 16u, 8u) * extractBits(x, 16u, 8u) + extractBits(w, 24u, 8u) * extractBits(x, 24u, 8u);
}

// q8: code byte 4ms + 4j + k = element 4s + k of block j, stored w + 128.
fn sum_q8(cw: u32, m: u32, j: u32, xw: u32) -> i32 {
  var s = 0i;
  for (var st = 0u; st < 8u; st++) {
    s += dot4(bitcast<i32>(W[cw + m * st + j] ^ 0x80808080u), bitcast<i32>(X[xw + 16u * st + j]));
  }
  return s;
}

// q4: byte 4mc + 4j + k holds element 8c + k low, 8c + 4 + k high, u = q + 8.
fn sum_q4(cw: u32, m: u32, j: u32, xw: u32) -> i32 {
  var s = 0i;
  for (var c = 0u; c < 4u; c++) {
    let w = W[cw + m * c + j];
    let lo = bitcast<i32>(w & 0x0f0f0f0fu);
    let hi = bitcast<i32>((w >> 4u) & 0x0f0f0f0fu);
    let xl = bitcast<i32>(X[xw + 16u * (2u * c) + j]);
    let xh = bitcast<i32>(X[xw + 16u * (2u * c + 1u) + j]);
    for (var k = 0u; k < 4u; k++) {
      s += (extractBits(lo, 8u * k, 8u) - 8) * extractBits(xl, 8u * k, 8u)
         + (extractBits(hi, 8u * k, 8u) - 8) * extractBits(xh, 8u * k, 8u);
    }
  }
  return s;
}

fn product(id: vec3u, q4: bool) {
  let i = id.x + id.y * P.span;
  if (i >= P.rows * P.tokens) { return; }
  let r = i / P.tokens;
  let t = i % P.tokens;
  let bw = select(9u, 5u, q4);
  var a: array<f32, 16>;
  let nb = P.nb/*NB*/;
  for (var b = 0u; b < nb; b++) {
    let g = b / 16u;
    let j = b % 16u;
    let m = min(16u, P.nb - 16u * g);
    let gw = r * P.row_words + g * 16u * bw; // the group's m scales, then its codes
    let xw = (t * P.ng + g) * 128u;          // the activation group's codes
    var s: i32;
    if (q4) { s = sum_q4(gw + m, m, j, xw); } else { s = sum_q8(gw + m, m, j, xw); }
    let p = bitcast<f32>(W[gw + j]) * bitcast<f32>(X[P.x_scales + t * P.ng * 16u + b]);
    a[j] = a[j] + f32(s) * p;
  }
  let y = tree(a);
  Y[P.y_off + t * P.y_stride + r] = /*Y*/y;
}

@compute @workgroup_size(${WG}) fn q8(@builtin(global_invocation_id) id: vec3u) { product(id, false); }
@compute @workgroup_size(${WG}) fn q4(@builtin(global_invocation_id) id: vec3u) { product(id, true); }

// The numerics probes: what this adapter does with subnormals and -0.
@group(0) @binding(4) var<storage, read> PI: array<u32>;
@group(0) @binding(5) var<storage, read_write> PO: array<u32>;
@compute @workgroup_size(1) fn probe() {
  let tiny = bitcast<f32>(PI[0]); // 2^-149
  let normal = bitcast<f32>(PI[1]); // 2^-126
  let half = bitcast<f32>(PI[2]);
  let nz = bitcast<f32>(PI[3]); // -0
  let one = bitcast<f32>(PI[4]);
  PO[0] = select(0u, 1u, tiny > 0.0);
  PO[1] = bitcast<u32>(normal * half);
  PO[2] = bitcast<u32>(nz);
  PO[3] = bitcast<u32>(nz * one);
  PO[4] = bitcast<u32>(min(nz, 0.0));
}
`;

// Test-only variants (the loader's webgpu.fault option): a planted fault
// the product probes must catch (the last block of each row dropped), and
// a deviation webgpu/1 allows (every product one ulp further from zero, as
// an adapter that rounds differently might give) that they must accept.
const FAULTS = {
  'drop-last-block': ['/*NB*/', ' - 1u'],
  'one-ulp': ['/*Y*/y', 'bitcast<f32>(bitcast<u32>(y) + 1u)'],
};

export function wgslSource(fault) {
  if (fault !== undefined && !(fault in FAULTS)) throw new Error(`unknown WGSL fault '${fault}'`);
  const src = fault ? SOURCE.replace(...FAULTS[fault]) : SOURCE;
  return src.replace('/*NB*/', '').replace('/*Y*/', '');
}

const groups = (n) => Math.ceil(Math.ceil(n / 32) / 16);

/** A device-lane failure: code is a tl_status name. */
export class GpuError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The adapter and device for the webgpu lane, or GpuError
 *  unsupported_feature (no WebGPU, no adapter) / worker_failure. opts:
 *  featureLevel ('core' | 'compatibility'), powerPreference, fault
 *  (test-only). info: what the capability receipt records, filled as the
 *  lane starts (set before any failure past the adapter). */
export async function openGpu(opts = {}, info = {}) {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) throw new GpuError('unsupported_feature', 'no WebGPU here (navigator.gpu is missing)');
  if (typeof WebAssembly.Suspending !== 'function' || typeof WebAssembly.promising !== 'function')
    throw new GpuError('unsupported_feature', 'no WebAssembly JSPI (WebAssembly.Suspending) to wait for the device');
  const featureLevel = opts.featureLevel ?? 'core';
  const req = { featureLevel };
  if (opts.powerPreference) req.powerPreference = opts.powerPreference;
  let adapter;
  try {
    adapter = await gpu.requestAdapter(req);
  } catch (e) {
    throw new GpuError('unsupported_feature', `requestAdapter failed: ${e.message}`);
  }
  if (!adapter) throw new GpuError('unsupported_feature', 'requestAdapter() gave no adapter (WebGPU disabled or no usable GPU)');
  const a = adapter.info ?? {};
  info.adapter = {
    vendor: a.vendor ?? '', architecture: a.architecture ?? '', device: a.device ?? '', description: a.description ?? '',
    // Chromium 156 has it on the info, not on the adapter.
    isFallback: !!(a.isFallbackAdapter ?? adapter.isFallbackAdapter), featureLevel,
  };
  info.features = Array.from(adapter.features).sort();
  // The shader's identity, known before any device call can fail.
  const source = wgslSource(opts.fault);
  info.wgslSha256 = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(source))),
    (b) => b.toString(16).padStart(2, '0')).join('');
  const want = ['maxStorageBufferBindingSize', 'maxBufferSize'];
  const requiredLimits = Object.fromEntries(want.map((k) => [k, adapter.limits[k]]));
  let device;
  try {
    device = await adapter.requestDevice({ requiredLimits });
  } catch (e) {
    throw new GpuError('worker_failure', `requestDevice failed: ${e.message}`);
  }
  info.limits = Object.fromEntries([...want, 'maxComputeWorkgroupsPerDimension', 'maxComputeInvocationsPerWorkgroup']
    .map((k) => [k, device.limits[k]]));
  const g = new Gpu(device, source, info);
  try {
    await g.compile();
  } catch (e) {
    g.destroy(); // the lane is refused: its device goes with it
    throw e;
  }
  return g;
}

class Gpu {
  constructor(device, source, info) {
    this.device = device;
    this.source = source;
    this.info = info;
    this.failure = null; // why the device is unusable (lost, an uncaptured error)
    this.failureCode = 'worker_failure'; // out_of_memory when the device ran out of it
    this.mats = new Map(); // key -> { type, n, rows, rowBytes, nb, chunks: [{ buf, r0, rows }] }
    this.bufs = {}; // reused: x, y, staging, params
    device.lost.then((l) => { if (!this.destroyed) this.failure ??= `the WebGPU device was lost (${l.reason}: ${l.message})`; });
    // A buffer the device cannot hold shows here, after upload() returned.
    device.addEventListener('uncapturederror', (e) => {
      if (this.failure) return;
      this.failure = `WebGPU error: ${e.error.message}`;
      if (e.error instanceof GPUOutOfMemoryError) this.failureCode = 'out_of_memory';
    });
    const lim = device.limits;
    this.chunkBytes = Math.min(lim.maxStorageBufferBindingSize, lim.maxBufferSize - 4096, CHUNK_CAP);
  }

  async compile() {
    const d = this.device;
    d.pushErrorScope('validation');
    const module = d.createShaderModule({ code: this.source, label: 'tinylm' });
    const ci = await module.getCompilationInfo();
    this.info.compilation = ci.messages.map((m) => ({ module: 'tinylm', type: m.type, line: m.lineNum, column: m.linePos, message: m.message }));
    const errors = ci.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      await d.popErrorScope();
      throw new GpuError('self_test_failed', `the WGSL does not compile: ${errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ')}`);
    }
    try {
      this.pipes = {};
      for (const [name, t] of [['q8', QTYPE.q8], ['q4', QTYPE.q4], ['probe', 'probe']])
        this.pipes[t] = await d.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: name } });
    } catch (e) {
      await d.popErrorScope();
      throw new GpuError('self_test_failed', `a WGSL pipeline was refused: ${e.message}`);
    }
    const err = await d.popErrorScope();
    if (err) throw new GpuError('self_test_failed', `WGSL validation: ${err.message}`);
  }

  // A buffer of at least size bytes in slot name, grown by doubling.
  buffer(name, size, usage) {
    const b = this.bufs[name];
    if (b && b.size >= size) return b;
    b?.destroy();
    const n = Math.max(256, 2 ** Math.ceil(Math.log2(size)));
    return (this.bufs[name] = this.device.createBuffer({ size: n, usage, label: name }));
  }

  /** Keeps a packed q8/q4 matrix (bytes: rows rows of rowBytes) under key,
   *  split by rows into buffers within the device's limits. A status. */
  upload(key, type, bytes, rowBytes, n, rows) {
    if (this.failure) return ST[this.failureCode];
    if (!(type in BLOCK_WORDS) || rowBytes % 4 || rowBytes !== BLOCK_WORDS[type] * 4 * Math.ceil(n / 32))
      return ST.unsupported_shape;
    const per = Math.floor(this.chunkBytes / rowBytes);
    if (per < 1) return ST.out_of_memory;
    this.release(key);
    const m = { type, n, rows, rowBytes, nb: Math.ceil(n / 32), chunks: [] };
    try {
      for (let r0 = 0; r0 < rows; r0 += per) {
        const k = Math.min(per, rows - r0);
        const buf = this.device.createBuffer({ size: k * rowBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: `w${key}:${r0}` });
        m.chunks.push({ buf, r0, rows: k });
        this.device.queue.writeBuffer(buf, 0, bytes, r0 * rowBytes, k * rowBytes);
      }
    } catch (e) {
      for (const c of m.chunks) c.buf.destroy();
      return e instanceof RangeError ? ST.out_of_memory : ST.worker_failure;
    }
    this.mats.set(key, m);
    return this.failure ? ST[this.failureCode] : ST.ok;
  }

  release(key) {
    const m = this.mats.get(key);
    if (!m) return;
    for (const c of m.chunks) c.buf.destroy();
    this.mats.delete(key);
  }

  /** The products of the matrices keys (all of the same n) with tokens
   *  activations x (tl_kern_x's codes of every token, then their scales,
   *  as words: tokens * ng * 128 + tokens * ng * 16); resolves to one
   *  Float32Array per matrix, y[t * rows + r]. Throws GpuError. */
  async run(keys, x, tokens) {
    if (this.failure) throw new GpuError(this.failureCode, this.failure);
    const ms = keys.map((k) => this.mats.get(k));
    if (ms.some((m) => !m)) throw new GpuError('invalid_argument', 'a product names a matrix that was not uploaded');
    const ng = groups(ms[0].n);
    if (ms.some((m) => groups(m.n) !== ng)) throw new GpuError('invalid_argument', 'the matrices of one call differ in width');
    const d = this.device, U = GPUBufferUsage;
    const xbuf = this.buffer('x', x.byteLength, U.STORAGE | U.COPY_DST);
    d.queue.writeBuffer(xbuf, 0, x.buffer, x.byteOffset, x.byteLength);
    const total = ms.reduce((s, m) => s + m.rows * tokens, 0);
    const ybuf = this.buffer('y', 4 * total, U.STORAGE | U.COPY_SRC);
    const staging = this.buffer('staging', 4 * total, U.MAP_READ | U.COPY_DST);
    const jobs = [];
    let off = 0;
    for (const m of ms) {
      for (const c of m.chunks) jobs.push({ m, c, y_off: off + c.r0 });
      off += m.rows * tokens;
    }
    const params = this.buffer('params', 256 * jobs.length, U.UNIFORM | U.COPY_DST);
    const pw = new Uint32Array(64 * jobs.length);
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass();
    jobs.forEach(({ m, c, y_off }, i) => {
      const wgs = Math.ceil((c.rows * tokens) / WG);
      const gx = Math.min(wgs, d.limits.maxComputeWorkgroupsPerDimension);
      const gy = Math.ceil(wgs / gx);
      pw.set([c.rows, m.rowBytes / 4, m.nb, ng, tokens, y_off, m.rows, gx * WG, tokens * ng * 128], 64 * i);
      const pipe = this.pipes[m.type];
      pass.setPipeline(pipe);
      pass.setBindGroup(0, d.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [
        { binding: 0, resource: { buffer: c.buf } },
        { binding: 1, resource: { buffer: xbuf, size: x.byteLength } },
        { binding: 2, resource: { buffer: ybuf, size: 4 * total } },
        { binding: 3, resource: { buffer: params, offset: 256 * i, size: 48 } },
      ] }));
      pass.dispatchWorkgroups(gx, gy);
    });
    pass.end();
    d.queue.writeBuffer(params, 0, pw);
    enc.copyBufferToBuffer(ybuf, 0, staging, 0, 4 * total);
    d.queue.submit([enc.finish()]);
    try {
      await staging.mapAsync(GPUMapMode.READ, 0, 4 * total);
    } catch (e) {
      throw new GpuError(this.failure ? this.failureCode : 'worker_failure', this.failure ?? `reading the products back failed: ${e.message}`);
    }
    const all = new Float32Array(staging.getMappedRange(0, 4 * total).slice(0));
    staging.unmap();
    if (this.failure) throw new GpuError(this.failureCode, this.failure);
    off = 0;
    return ms.map((m) => all.subarray(off, (off += m.rows * tokens)));
  }

  /** The env imports of a module on this lane; memory() is its current
   *  memory (re-read after every await: it may have grown). */
  imports(memory) {
    const u8 = () => new Uint8Array(memory().buffer);
    const dv = () => new DataView(memory().buffer);
    // A failure's status; one not foreseen marks the device failed (the
    // loader's call() then throws it with its reason).
    const status = (e) => {
      if (e instanceof GpuError) return ST[e.code] ?? ST.worker_failure;
      this.failure ??= `the products failed: ${e?.message ?? e}`;
      return ST.worker_failure;
    };
    return {
      tl_host_gpu_upload: (type, w, rowBytes, n, rows) => {
        w >>>= 0;
        return this.upload(w, type, u8().subarray(w, w + (rows >>> 0) * (rowBytes >>> 0)), rowBytes >>> 0, n >>> 0, rows >>> 0);
      },
      // Every matrix inside [w, w + len): the session's lane stopped.
      tl_host_gpu_release: (w, len) => {
        w >>>= 0;
        for (const k of [...this.mats.keys()]) if (k >= w && k < w + (len >>> 0)) this.release(k);
      },
      tl_host_gpu_products: new WebAssembly.Suspending(async (mats, nMats, xs, tokens) => {
        try {
          const { mats: recs, acts } = productsCall(dv(), mats, nMats, xs, tokens);
          if (!recs.length) return ST.ok;
          const ng = groups(recs[0].n);
          const x = new Uint32Array(tokens * ng * 144);
          const xb = new Uint8Array(x.buffer);
          const m8 = u8();
          acts.forEach(({ codes, scales }, t) => {
            xb.set(m8.subarray(codes, codes + 512 * ng), 512 * ng * t);
            xb.set(m8.subarray(scales, scales + 64 * ng), 512 * ng * tokens + 64 * ng * t);
          });
          const ys = await this.run(recs.map((r) => r.w), x, tokens);
          const out = u8();
          ys.forEach((y, i) => out.set(new Uint8Array(y.buffer, y.byteOffset, y.byteLength), recs[i].y));
          return ST.ok;
        } catch (e) {
          return status(e);
        }
      }),
    };
  }

  /** The WGSL probes (docs/web.md): [{ name, ok, status }] for the
   *  capability receipt's selfTests; their outcomes go to info.probes.
   *  bound(type, row, n, codes, scales): W-3's bound of docs/webgpu-profile.md
   *  for one packed row and activation (the module's tl_wasm_gpu_bound). */
  async selfTests(bound) {
    const probes = (this.info.probes = {});
    const hex = (v) => `0x${v.toString(16)}`;
    const tests = [
      ['wgsl-subnormal', async () => {
        const o = await this.probe();
        probes['subnormal-compare'] = o[0] ? 'kept' : 'flushed';
        probes['subnormal-product'] = o[1] === 0x00400000 ? 'kept' : o[1] === 0 ? 'flushed' : `wrong ${hex(o[1])}`;
        // Kept or flushed: both are within the profile; anything else is not.
        return o[1] === 0x00400000 || o[1] === 0;
      }],
      ['wgsl-negative-zero', async () => {
        const o = await this.probe();
        // IEEE leaves min(-0, +0) to the implementation: recorded only.
        probes['negative-zero-min'] = o[4] === 0x80000000 ? '-0' : o[4] === 0 ? '+0' : `wrong ${hex(o[4])}`;
        const ok = o[2] === 0x80000000 && o[3] === 0x80000000;
        probes['negative-zero'] = ok ? 'preserved' : `lost (load/store ${hex(o[2])}, times one ${hex(o[3])})`;
        return ok;
      }],
      ['wgsl-i32-block-sums', () => this.extremes(bound)],
      ['wgsl-q8-product', async () => {
        probes['q8-product'] = await this.seeded(QTYPE.q8, bound);
        return true;
      }],
      ['wgsl-q4-product', async () => {
        probes['q4-product'] = await this.seeded(QTYPE.q4, bound);
        return true;
      }],
    ];
    const results = [];
    for (const [name, fn] of tests) {
      try {
        const ok = await fn();
        results.push({ name, ok, status: ok ? 'ok' : 'self_test_failed' });
      } catch (e) {
        results.push({ name, ok: false, status: e.code ?? 'self_test_failed', why: e.message });
      }
    }
    return results;
  }

  async probe() {
    if (this.probed) return this.probed;
    const d = this.device, U = GPUBufferUsage;
    const inb = d.createBuffer({ size: 32, usage: U.STORAGE | U.COPY_DST });
    const outb = d.createBuffer({ size: 32, usage: U.STORAGE | U.COPY_SRC });
    const rd = d.createBuffer({ size: 32, usage: U.MAP_READ | U.COPY_DST });
    const f = new Float32Array([1, 1, 0.5, -0, 1]);
    const w = new Uint32Array(f.buffer);
    w[0] = 1; // 2^-149
    w[1] = 0x00800000; // 2^-126
    d.queue.writeBuffer(inb, 0, w);
    const enc = d.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(this.pipes.probe);
    pass.setBindGroup(0, d.createBindGroup({ layout: this.pipes.probe.getBindGroupLayout(0), entries: [
      { binding: 4, resource: { buffer: inb } }, { binding: 5, resource: { buffer: outb } }] }));
    pass.dispatchWorkgroups(1);
    pass.end();
    enc.copyBufferToBuffer(outb, 0, rd, 0, 32);
    d.queue.submit([enc.finish()]);
    await rd.mapAsync(GPUMapMode.READ);
    this.probed = Array.from(new Uint32Array(rd.getMappedRange().slice(0)));
    for (const b of [inb, outb, rd]) b.destroy();
    return this.probed;
  }

  // Products of generated matrices against F-4/F-5 in JS (products_ref.js,
  // written from docs/fast-profile.md). Without bound every product must be
  // the reference's bits; with it each may lie within W-3 of them (webgpu/1 lets the
  // adapter contract and flush). Returns the outcome for info.probes:
  // 'bit-equal' or 'within W-3 (k of N differ, largest ratio R)'.
  async check(type, rowsCodes, rowScales, xCodes, xScales, n, bound = null) {
    const key = `probe-${type}`;
    const bytes = packRows(type, rowsCodes, rowScales, n);
    const rowBytes = bytes.length / rowsCodes.length;
    const st = this.upload(key, type, bytes, rowBytes, n, rowsCodes.length);
    if (st !== ST.ok) throw new GpuError('self_test_failed', `uploading the probe matrix: status ${st}`);
    try {
      const tokens = xCodes.length;
      const x = packActivations(xCodes, xScales, n);
      const ng = groups(n);
      const [y] = await this.run([key], x, tokens);
      const bad = [];
      let differ = 0, worst = 0;
      rowsCodes.forEach((w, r) => xCodes.forEach((_, t) => {
        const codes = new Int8Array(x.buffer, 512 * ng * t, 512 * ng);
        const scales = new Float32Array(x.buffer, 4 * (128 * ng * tokens + 16 * ng * t), 16 * ng);
        const got = y[t * rowsCodes.length + r];
        const want = rowProduct(type, bytes, r * rowBytes, n, codes, scales);
        if (Object.is(got, want)) return;
        differ++;
        const b = bound ? bound(type, bytes.subarray(r * rowBytes, (r + 1) * rowBytes), n, codes, scales) : 0;
        const ratio = b > 0 ? Math.abs(got - want) / b : Infinity; // NaN: never within
        if (ratio > worst || Number.isNaN(ratio)) worst = Number.isNaN(ratio) ? Infinity : ratio;
        if (!(ratio <= 1)) bad.push(`row ${r} token ${t}: ${got} != ${want}${bound ? ` (bound ${b})` : ''}`);
      }));
      const total = rowsCodes.length * tokens;
      if (bad.length)
        throw new GpuError('self_test_failed', `${bad.length} of ${total} products ${bound ? 'outside W-3 of' : 'differ from'} the F-4 reference: ${bad.slice(0, 3).join('; ')}`);
      return differ ? `within W-3 (${differ} of ${total} differ, largest ratio ${worst.toPrecision(3)})` : 'bit-equal';
    } finally {
      this.release(key);
    }
  }

  // The i32 block sums at their extremes: one block, unit scales, so each
  // output is the exact sum (q8: 32 * 127 * 127; q4: 32 * 8 * 127). W-3's
  // bound there is below 1 (0.43 and 0.03), so an integer sum off by one
  // is outside it.
  async extremes(bound) {
    const fill = (v) => new Int8Array(32).fill(v);
    const ones = (k) => Array.from({ length: k }, () => Float32Array.of(1));
    const xs = [fill(127), fill(-127)];
    await this.check(QTYPE.q8, [fill(127), fill(-127)], ones(2), xs, ones(2), 32, bound);
    await this.check(QTYPE.q4, [fill(-8), fill(7)], ones(2), xs, ones(2), 32, bound);
    return true;
  }

  // Seeded rows of 1287 elements (41 blocks: a short last block and a short
  // last group), 7 rows, 3 tokens, scales kept normal (a flushing adapter
  // and IEEE agree on them).
  async seeded(type, bound) {
    const n = 1287, rows = 7, tokens = 3;
    const rnd = mulberry32(type * 7919 + n);
    const nb = Math.ceil(n / 32);
    const codes = (lo, hi) => {
      const c = new Int8Array(nb * 32);
      for (let i = 0; i < n; i++) c[i] = lo + Math.floor(rnd() * (hi - lo + 1));
      return c;
    };
    const scales = (e) => Float32Array.from({ length: nb }, () => Math.fround((1 + rnd()) * 2 ** -(e + Math.floor(rnd() * 4))));
    const [lo, hi] = type === QTYPE.q8 ? [-127, 127] : [-8, 7];
    const w = Array.from({ length: rows }, () => codes(lo, hi));
    const ws = Array.from({ length: rows }, () => scales(8));
    const x = Array.from({ length: tokens }, () => codes(-127, 127));
    const xsc = Array.from({ length: tokens }, () => scales(4));
    return this.check(type, w, ws, x, xsc, n, bound);
  }

  destroy() {
    this.destroyed = true;
    for (const k of [...this.mats.keys()]) this.release(k);
    for (const b of Object.values(this.bufs)) b.destroy();
    this.bufs = {};
    this.device.destroy();
  }
}

/** Rows of codes and block scales in tl_kern_pack's layout (kernels.h). */
export function packRows(type, rows, scales, n) {
  const nb = Math.ceil(n / 32), bw = BLOCK_WORDS[type];
  const out = new Uint8Array(rows.length * nb * bw * 4);
  const f = new DataView(out.buffer);
  rows.forEach((w, r) => {
    for (let g = 0; g * 16 < nb; g++) {
      const m = Math.min(16, nb - 16 * g);
      const at = (r * nb + 16 * g) * bw * 4;
      for (let j = 0; j < m; j++) {
        const b = 16 * g + j;
        f.setFloat32(at + 4 * j, scales[r][b], true);
        const code = (i) => w[32 * b + i];
        for (let k = 0; k < 4; k++) {
          if (type === QTYPE.q8) for (let s = 0; s < 8; s++) out[at + 4 * m + 4 * m * s + 4 * j + k] = (code(4 * s + k) + 128) & 0xff;
          else for (let c = 0; c < 4; c++) out[at + 4 * m + 4 * m * c + 4 * j + k] = (code(8 * c + k) + 8) | ((code(8 * c + 4 + k) + 8) << 4);
        }
      }
    }
  });
  return out;
}

/** Activations (codes and block scales per token) in tl_kern_x's layout,
 *  as the products import passes them to run(): every token's codes, then
 *  every token's scales (padding blocks: scale +0, codes 0). */
export function packActivations(xs, scales, n) {
  const ng = groups(n), nb = Math.ceil(n / 32);
  const out = new Uint32Array(xs.length * ng * 144);
  const b8 = new Uint8Array(out.buffer), f = new Float32Array(out.buffer);
  xs.forEach((x, t) => {
    for (let b = 0; b < nb; b++) {
      const g = b >> 4, j = b & 15;
      for (let e = 0; e < 32; e++) b8[512 * (ng * t + g) + 64 * (e >> 2) + 4 * j + (e & 3)] = x[32 * b + e] & 0xff;
      f[xs.length * ng * 128 + ng * 16 * t + b] = scales[t][b];
    }
  });
  return out;
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The imports a module gets on every other lane: they never call them. */
export const NO_GPU_IMPORTS = {
  tl_host_gpu_upload: () => ST.worker_failure,
  tl_host_gpu_release: () => {},
  tl_host_gpu_products: () => ST.worker_failure,
};
