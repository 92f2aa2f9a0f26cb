// Writes build/web/manifest.json for the JS loader (docs/web.md): each
// module's file, size, SHA-256, the features it needs and its memory,
// and the ABI version, asked of the modules themselves.
//   node scripts/web_manifest.mjs OUT.json VERSION BUILD_ID LANE=FILE[:shared:INITIAL_PAGES]...
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { NO_GPU_IMPORTS } from '../web/webgpu.js';

const [out, version, buildId, ...specs] = process.argv.slice(2);
const FEATURES = { scalar: ['mvp'], simd: ['mvp', 'simd128'], threads: ['mvp', 'simd128', 'atomics', 'bulk-memory', 'shared-memory'] };
const modules = {};
let abi = null;
for (const spec of specs) {
  const [lane, rest] = spec.split('=');
  const [file, shared, initial] = rest.split(':');
  const bytes = readFileSync(file);
  const env = { tl_host_now_ms: () => 0, tl_host_token: () => 0, tl_host_text: () => 0, tl_host_prefill: () => 0, ...NO_GPU_IMPORTS };
  const entry = { file: basename(file), size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), features: FEATURES[lane] };
  if (shared) {
    entry.shared = true;
    entry.initial_pages = Number(initial);
    entry.maximum_pages = 65536;
    env.memory = new WebAssembly.Memory({ initial: entry.initial_pages, maximum: entry.maximum_pages, shared: true });
  }
  const { instance } = await WebAssembly.instantiate(bytes, { env });
  const a = instance.exports.tl_abi_version();
  if (abi !== null && a !== abi) throw new Error(`${file}: ABI ${a}, the others ${abi}`);
  abi = a;
  modules[lane] = entry;
}
const doc = { format: 'tinylm.web-manifest/1', abi, version, build_id: buildId, modules };
writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
console.log(`web: ${join(dirname(out), basename(out))}: ${Object.keys(modules).join(', ')} (ABI ${abi})`);
