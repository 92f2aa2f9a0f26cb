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

// One tl_host_gpu_products call's arguments read from the module's memory
// (dv: a DataView of it), in the wasm32 layouts web/wasm/gpu.c asserts:
// mats, nMats records of six u32 (tl_kern_mat: type, w, row_bytes, n, rows,
// y) and xs, tokens records of five u32 (tl_kern_x: f, codes, scales, ...).
// Returns { mats: [{ type, w, rowBytes, n, rows, y }], acts: [{ codes,
// scales }] } (byte offsets into the memory).
export function productsCall(dv, mats, nMats, xs, tokens) {
  const u = (at) => dv.getUint32(at, true);
  return {
    mats: Array.from({ length: nMats }, (_, i) => {
      const at = (mats >>> 0) + 24 * i;
      return { type: u(at), w: u(at + 4), rowBytes: u(at + 8), n: u(at + 12), rows: u(at + 16), y: u(at + 20) };
    }),
    acts: Array.from({ length: tokens }, (_, t) => ({ codes: u((xs >>> 0) + 20 * t + 4), scales: u((xs >>> 0) + 20 * t + 8) })),
  };
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
      const buf = memory().buffer, dv = new DataView(buf), call = productsCall(dv, mats, nMats, xs, tokens);
      for (const [i, { w, n, rows, y }] of call.mats.entries()) {
        const mat = held.get(w);
        if (mat === undefined) return 19; // internal_invariant: never uploaded
        const ng = Math.ceil(Math.ceil(n / 32) / 16);
        call.acts.forEach(({ codes, scales }, t) => {
          const c = new Int8Array(buf, codes, 512 * ng), sc = new Float32Array(buf.slice(scales, scales + 64 * ng));
          for (let r = 0; r < rows; r++) {
            let v = rowProduct(mat.type, mat.bytes, r * mat.rowBytes, n, c, sc);
            if (mutate) v = mutate(v, { i, t, r });
            dv.setFloat32(y + 4 * (t * rows + r), v, true);
          }
        });
      }
      return 0;
    },
  };
}
