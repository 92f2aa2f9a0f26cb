// F-4 / F-5 of docs/fast-profile.md in plain JavaScript, written from that
// page (not from the C kernels): one packed q8/q4 row times one quantized
// activation, every float operation rounded to binary32 by Math.fround in
// F-4's order. The WebGPU lane's start-up probe compares the device's
// products with it (docs/webgpu-profile.md), and the node test of the
// device glue (tests/web/gpu_glue_test.mjs) uses it as a device on the CPU.

const GROUP = 16; // blocks per group (F-4's lanes)
const f = Math.fround;

// Code i (< 32) of block j of a packed group of m blocks whose codes start
// at byte c of bytes (tl_kern_pack's layout).
function code(q8, bytes, c, m, j, i) {
  const s = i >> 2, k = i & 3;
  if (q8) return ((bytes[c + 4 * m * s + 4 * j + k] ^ 0x80) << 24) >> 24;
  return ((bytes[c + 4 * m * (s >> 1) + 4 * j + k] >> (4 * (s & 1))) & 0xf) - 8;
}

// F-6's tree over the 16 accumulators.
export function tree(a) {
  const b = [], c = [], d = [];
  for (let j = 0; j < 8; j++) b[j] = f(a[j] + a[j + 8]);
  for (let j = 0; j < 4; j++) c[j] = f(b[j] + b[j + 4]);
  for (let j = 0; j < 2; j++) d[j] = f(c[j] + c[j + 2]);
  return f(d[0] + d[1]);
}

// type: 3 (q8) or 4 (q4); bytes/at: the packed row; n: its elements;
// codes (Int8Array) and scales (Float32Array): one token's activation in
// tl_kern_x's layout. Returns F-4's value (a JS number holding a binary32).
export function rowProduct(type, bytes, at, n, codes, scales) {
  const q8 = type === 3, bb = q8 ? 36 : 20, nb = Math.ceil(n / 32);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const acc = new Array(GROUP).fill(0);
  for (let g0 = 0; g0 < nb; g0 += GROUP) {
    const m = Math.min(GROUP, nb - g0), g = at + g0 * bb, c = g + 4 * m;
    const xc = (g0 / GROUP) * 512;
    for (let j = 0; j < m; j++) {
      const b = g0 + j;
      let s = 0;
      for (let i = 0; i < 32; i++) s += code(q8, bytes, c, m, j, i) * codes[xc + 64 * (i >> 2) + 4 * j + (i & 3)];
      const p = f(view.getFloat32(g + 4 * j, true) * scales[b]);
      acc[b % GROUP] = f(acc[b % GROUP] + f(s * p));
    }
  }
  return tree(acc);
}

// The device imports of a wasm32 module (web/wasm/gpu.h) computed here on
// the CPU, synchronously: memory() returns the module's memory. mutate
// (tests only) changes each result after it is computed.
export function cpuDevice(memory, mutate = null) {
  const held = new Map(); // w -> { type, rowBytes, n, rows, bytes }
  return {
    tl_host_gpu_upload(type, w, rowBytes, n, rows) {
      w >>>= 0;
      held.set(w, { type, rowBytes: rowBytes >>> 0, n: n >>> 0, rows: rows >>> 0,
                    bytes: new Uint8Array(memory().buffer, w, (rowBytes >>> 0) * (rows >>> 0)).slice() });
      return 0;
    },
    tl_host_gpu_release(w, len) {
      w >>>= 0; len >>>= 0;
      for (const k of [...held.keys()]) if (k >= w && k < w + len) held.delete(k);
    },
    tl_host_gpu_products(mats, nMats, xs, tokens) {
      const dv = new DataView(memory().buffer);
      for (let i = 0; i < nMats; i++) {
        const at = (mats >>> 0) + 24 * i, u = (o) => dv.getUint32(at + o, true);
        const mat = held.get(u(4));
        if (mat === undefined) return 19; // internal_invariant: never uploaded
        const n = u(12), rows = u(16), y = u(20), ng = Math.ceil(Math.ceil(n / 32) / 16);
        for (let t = 0; t < tokens; t++) {
          const x = (xs >>> 0) + 20 * t;
          const codes = new Int8Array(memory().buffer, dv.getUint32(x + 4, true), 512 * ng);
          const scales = new Float32Array(memory().buffer.slice(dv.getUint32(x + 8, true), dv.getUint32(x + 8, true) + 64 * ng));
          for (let r = 0; r < rows; r++) {
            let v = rowProduct(mat.type, mat.bytes, r * mat.rowBytes, n, codes, scales);
            if (mutate) v = mutate(v, { i, t, r });
            dv.setFloat32(y + 4 * (t * rows + r), v, true);
          }
        }
      }
      return 0;
    },
  };
}
