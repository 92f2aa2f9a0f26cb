// The JS loader (web/tinylm.js) and the wasm32 API modules under node:
//   node tests/web/loader_test.mjs TINYLM WEB_DIR
// TINYLM is a native tinylm built from the same tree (the receipt ids name
// the build), WEB_DIR the output of make web-modules. Each lane's greedy
// and seeded-sampling replies on the tiny artifacts must equal native
// `tinylm run --json` (same ids, same receipt id); a module with one byte
// changed is refused before instantiation and the loader falls back; a
// manifest that does not parse or names another ABI is refused; stale,
// forged and double-freed handles, pointers outside the memory, a memory
// budget or limit too small, a truncated or changed model, and a
// cancelled reply are typed errors that leave the module usable.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ABI_VERSION, capabilityMetadata, encodeCbor, loadModel, probe } from '../../web/tinylm.js';

const [tinylm, webDir, poolTrapArg] = process.argv.slice(2);
if (!tinylm || !webDir) {
  console.error('usage: loader_test.mjs TINYLM WEB_DIR [POOLTRAP_THREADS_WASM]');
  process.exit(2);
}
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SLM = (name) => join(ROOT, 'tests/golden/slm', name);
const base = pathToFileURL(resolve(webDir) + '/');
// make web-pooltrap: the threads module whose pool worker 1 traps in its 200th call.
const poolTrap = poolTrapArg ?? join(ROOT, 'build/web-pooltrap/tinylm-threads.wasm');
// make web-sampler-mutant: the SIMD128 module whose sampler breaks ties by the higher id.
const samplerMutant = process.env.TL_WEB_SAMPLER_MUTANT || join(ROOT, 'build/web-sampler-mutant/tinylm-simd.wasm');

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
  return ok;
}

async function code(promise) {
  try {
    await promise;
    return 'ok';
  } catch (e) {
    return e.code ?? `untyped ${e}`;
  }
}

// Native `tinylm run --json` with the same prompt and sampling.
function native(model, lane, args) {
  const flags = ['run', model, '--json', '--lane', lane, '-n', String(args.maxTokens)];
  if (args.prompt !== undefined) flags.push('--raw', '--prompt', args.prompt); // the API's text: raw
  else {
    const conv = join(tmp, 'conv.json');
    writeFileSync(conv, JSON.stringify({ messages: args.messages }));
    flags.push('--messages', conv);
  }
  if (args.temperature !== undefined) flags.push('--temperature', String(args.temperature));
  if (args.topK !== undefined) flags.push('--top-k', String(args.topK));
  // the loader's seed is the caller's, 0 by default; run draws a fresh one without --seed
  flags.push('--seed', String(args.seed ?? 0));
  return JSON.parse(execFileSync(tinylm, flags, { encoding: 'utf8' }));
}

const tmp = mkdtempSync(join(tmpdir(), 'tinylm-web-'));
try {
  const caps = await probe();
  check('probe: node 20 has SIMD128, atomics and bulk memory', caps.simd128 && caps.atomics && caps.bulkMemory, JSON.stringify(caps));
  check('probe: lanes best first', JSON.stringify(caps.lanes) === '["threads","simd","scalar"]', JSON.stringify(caps.lanes));
  const manifest = JSON.parse(readFileSync(join(webDir, 'manifest.json'), 'utf8'));
  check('manifest: three modules, the loader\'s ABI', manifest.abi === ABI_VERSION &&
    ['scalar', 'simd', 'threads'].every((l) => /^[0-9a-f]{64}$/.test(manifest.modules[l]?.sha256)));

  // Every lane against native, greedy and seeded sampling, f32 and q8.
  const cases = [
    { name: 'greedy', prompt: 'Hello there', maxTokens: 10, temperature: 0 },
    { name: 'seeded sampling', prompt: 'Hello there', maxTokens: 12, temperature: 1, topK: 20, seed: 7 },
    { name: 'messages, greedy', messages: [{ role: 'user', content: 'Hi!' }], maxTokens: 8, temperature: 0 },
  ];
  for (const file of ['tiny-f32.slm', 'tiny-q8.slm']) {
    const bytes = readFileSync(SLM(file));
    for (const lane of ['scalar', 'simd', 'threads']) {
      // The threads lane with a pool of 2 (the caller and one worker).
      const threads = lane === 'threads' ? 2 : undefined;
      const m = await loadModel(new Uint8Array(bytes), { lane, base, threads });
      const r = m.capabilityReceipt;
      check(`${file} ${lane}: lane as asked, self-tests pass, threads`, r.lane === lane && r.selfTests[lane].every((t) => t.ok) &&
        r.refused.length === 0 && r.threads === (threads ?? 1), JSON.stringify(r));
      check(`${file} ${lane}: the tiny forward pass ran on both numerics, the sampler's known answers`, ['forward-strict', 'forward-fast', 'sampler'].every((n) =>
        r.selfTests[lane].some((t) => t.name === n && t.ok)), JSON.stringify(r.selfTests[lane]));
      for (const c of cases) {
        const { name, ...args } = c;
        const streamed = [];
        const out = await m.generate({ ...args, onToken: (t) => streamed.push(t.id) });
        const want = native(SLM(file), lane === 'scalar' ? 'scalar' : 'fast', args);
        check(`${file} ${lane} ${name}: ids and receipt id == native`, JSON.stringify(out.ids) === JSON.stringify(want.ids) &&
          out.receiptId === want.receipt_id && out.stop === want.stop && out.text === want.text,
        `${JSON.stringify(out.ids)} ${out.receiptId} vs ${JSON.stringify(want.ids)} ${want.receipt_id}`);
        check(`${file} ${lane} ${name}: onToken streamed every id`, JSON.stringify(streamed) === JSON.stringify(out.ids));
        if (threads) check(`${file} ${lane} ${name}: both threads of the pool ran tasks`, out.poolTasks?.length === 2 && out.poolTasks.every((n) => n > 0), JSON.stringify(out.poolTasks));
      }
      await m.dispose();
    }
    // The MVP module's fast lane (the scalar twins) gives the fast lane's bits.
    const m = await loadModel(new Uint8Array(bytes), { lane: 'scalar', numerics: 'fast', base });
    const args = { prompt: 'Hello there', maxTokens: 12, temperature: 1, topK: 20, seed: 7 };
    const out = await m.generate(args);
    const want = native(SLM(file), 'fast', args);
    check(`${file} scalar module, fast numerics: ids and receipt id == native fast lane`,
      JSON.stringify(out.ids) === JSON.stringify(want.ids) && out.receiptId === want.receipt_id && m.capabilityReceipt.kernels === 'scalar');
    await m.dispose();
  }

  // A larger synthetic model (a reply of 200 tokens takes a while), so a
  // cancel from the page lands while the threads lane's worker computes.
  const slow = join(tmp, 'slow.slm');
  writeFileSync(join(tmp, 'slow.json'), JSON.stringify({ vocab_size: 346, hidden_size: 256, intermediate_size: 768,
    num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, max_position_embeddings: 2048 }));
  execFileSync(tinylm, ['synth', '--config', join(tmp, 'slow.json'), '--seed', '5', '--dtype', 'bf16',
    '--tokenizer-dir', join(ROOT, 'tests/fixtures/tiny-tokenizer'), '-o', join(tmp, 'slow-hf')]);
  rmSync(join(tmp, 'slow-hf', 'generation_config.json'), { force: true });
  execFileSync(tinylm, ['convert', join(tmp, 'slow-hf'), '-o', slow, '--quant', 'q8']);
  {
    const args = { prompt: 'Hello there', maxTokens: 12, temperature: 1, topK: 20, seed: 3 };
    const want = native(slow, 'fast', args);
    // Here (node's main thread may wait, as a worker's may) and in a host
    // worker (as on a page's main thread).
    for (const [threads, worker] of [[1, false], [2, false], [3, false], [1, true], [2, true], [3, true]]) {
      const where = `${threads} threads${worker ? ', in a worker' : ''}`;
      const m = await loadModel(new Uint8Array(readFileSync(slow)), { lane: 'threads', threads, base, worker });
      const out = await m.generate(args);
      check(`threads lane at ${where}: ids and receipt id == native`, JSON.stringify(out.ids) === JSON.stringify(want.ids) &&
        out.receiptId === want.receipt_id && m.capabilityReceipt.threads === threads, `${out.ids} ${out.receiptId}`);
      if (threads > 1)
        check(`threads lane at ${where}: every thread ran tasks`, out.poolTasks?.length === threads && out.poolTasks.every((n) => n > 0), JSON.stringify(out.poolTasks));
      if (threads === 2 && worker) {
        const ac = new AbortController();
        let n = 0;
        const long = { prompt: 'Hello there', maxTokens: 200, temperature: 0 };
        const c = await code(m.generate({ ...long, signal: ac.signal, onToken: () => { if (++n === 2) ac.abort(); } }));
        check('threads lane: the page\'s abort reaches the worker mid-reply (cancelled)', c === 'cancelled' && n < 200, `${c} after ${n}`);
        const again = await m.generate(args);
        check('threads lane: after the cancel the next reply equals a fresh one', again.receiptId === want.receipt_id);
        await m.dispose();
        check('threads lane: generate after dispose: stale_handle', await code(m.generate(args)) === 'stale_handle');
      } else await m.dispose();
    }
  }

  {
    // The simd lane in a worker (as in an isolated page): the same reply,
    // streamed, and a cancel that reaches it mid-reply.
    const args = { prompt: 'Hello there', maxTokens: 12, temperature: 1, topK: 20, seed: 3 };
    const want = native(slow, 'fast', args);
    const m = await loadModel(new Uint8Array(readFileSync(slow)), { lane: 'simd', worker: true, base });
    const streamed = [];
    const out = await m.generate({ ...args, onToken: (t) => streamed.push(t.id) });
    check('simd lane in a worker: ids and receipt id == native, streamed', out.receiptId === want.receipt_id &&
      JSON.stringify(streamed) === JSON.stringify(want.ids) && m.capabilityReceipt.lane === 'simd' && !('poolTasks' in out));
    const ac = new AbortController();
    let n = 0;
    const c = await code(m.generate({ prompt: 'Hello there', maxTokens: 200, temperature: 0, signal: ac.signal, onToken: () => { if (++n === 2) ac.abort(); } }));
    check('simd lane in a worker: an abort reaches it mid-reply', c === 'cancelled' && n < 200, `${c} after ${n}`);
    check('simd lane in a worker: the next reply equals a fresh one', (await m.generate(args)).receiptId === want.receipt_id);
    await m.dispose();
  }

  const bytes = new Uint8Array(readFileSync(SLM('tiny-q8.slm')));
  const greedy = { prompt: 'Hello there', maxTokens: 10, temperature: 0 };

  // A module with one byte changed: refused by its hash, the next lane used.
  const bad = join(tmp, 'web');
  cpSync(webDir, bad, { recursive: true });
  const simd = readFileSync(join(bad, 'tinylm-simd.wasm'));
  simd[simd.length >> 1] ^= 1;
  writeFileSync(join(bad, 'tinylm-simd.wasm'), simd);
  {
    const m = await loadModel(bytes.slice(), { lane: 'simd', base: pathToFileURL(bad + '/') });
    const r = m.capabilityReceipt;
    check('changed simd module: refused as hash_mismatch before instantiation, fell back to scalar',
      r.lane === 'scalar' && r.refused.length === 1 && r.refused[0].lane === 'simd' && r.refused[0].code === 'hash_mismatch' &&
      !('simd' in r.selfTests), JSON.stringify(r.refused));
    check('fallback lane named in the receipt', /fell back/.test(r.laneReason), r.laneReason);
    await m.dispose();
  }
  writeFileSync(join(bad, 'manifest.json'), '{"format": "tinylm.web-manifest/1", ');
  check('a manifest that does not parse: invalid_argument', await code(loadModel(bytes.slice(), { base: pathToFileURL(bad + '/') })) === 'invalid_argument');
  writeFileSync(join(bad, 'manifest.json'), JSON.stringify({ ...manifest, abi: ABI_VERSION + 1 }));
  check('a manifest of another ABI: unsupported_abi', await code(loadModel(bytes.slice(), { base: pathToFileURL(bad + '/') })) === 'unsupported_abi');

  // Handles and the boundary, on one module instance.
  const m = await loadModel(bytes.slice(), { lane: 'simd', base });
  const first = await m.generate(greedy);
  const x = m.rt.x;
  const rt = m.rt;
  const slot = rt.alloc(8);
  // A pointer past the end of memory, an output inside the module's data.
  const end = rt.memory.buffer.byteLength;
  let st = x.tl_model_open_bytes(end - 8, 64, 0, slot);
  check('open_bytes with data past the memory: bounds, the message names the argument',
    rt.statusName(st) === 'bounds' && /data outside the memory/.test(rt.detail(0).message), rt.detail(0).message);
  st = x.tl_model_artifact_id(m.handle, 8);
  check('an output pointer into the module\'s own data: bounds', rt.statusName(st) === 'bounds');
  st = x.tl_model_encode(m.handle, slot, 4, end - 4, 16, slot);
  check('encode with ids running past the memory: bounds', rt.statusName(st) === 'bounds');
  st = x.tl_generation_run(0x7fffffff, end - 16);
  check('run with params past the memory: bounds', rt.statusName(st) === 'bounds');
  st = x.tl_model_open_bytes(slot, 16, 0, 0);
  check('a NULL out pointer: the API\'s own invalid_argument', rt.statusName(st) === 'invalid_argument');
  {
    // Stop strings whose pointer array lies past the memory.
    const p = rt.alloc(128);
    const text = rt.put(new TextEncoder().encode('Hello'));
    rt.u8().fill(0, p, p + 128);
    const d = rt.dv();
    d.setUint32(p, text, true);
    d.setUint32(p + 4, 5, true);
    d.setUint32(p + 88, end - 4, true);
    d.setUint32(p + 96, 2, true);
    const [gen] = rt.outs(1, (out) => x.tl_generation_new(m.session, out));
    st = x.tl_generation_run(gen, p);
    check('stop strings past the memory: bounds', rt.statusName(st) === 'bounds' && /stop_strings/.test(rt.detail(0).message), rt.detail(0).message);
    d.setUint32(p + 88, 0, true);
    d.setUint32(p + 104, 1, true); // a callback field set
    st = x.tl_generation_run(gen, p);
    check('a callback pointer in the params: invalid_argument', rt.statusName(st) === 'invalid_argument');
    x.tl_generation_free(gen);
    x.free(p);
    x.free(text);
  }
  check('the module is usable after the refusals (same reply)', JSON.stringify((await m.generate(greedy)).ids) === JSON.stringify(first.ids));
  {
    // Random calls across the boundary: pointers that are NULL, inside a
    // scratch buffer, at or past the end of memory or wrapping; lengths
    // small, large or wrapping; handles live, forged or random. No call
    // may trap, and each returns a status the API defines. (The scratch
    // holds the longest valid length: the boundary checks memory, not the
    // caller's buffers, as C does.)
    const scratch = rt.alloc(65536); // room for the largest valid length below (4096 u32s)
    const known = new Set([0, 1, 4, 5, 6, 8, 9, 10, 11, 13, 14, 32, 33, 35, 36]);
    let seed = 12345;
    const rand = (n) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
    // The end of memory as it is now (calls may grow it).
    const top = () => rt.memory.buffer.byteLength;
    const ptr = () => [0, scratch, scratch + 64, top() - 1, top(), top() + 4096, 0xfffffff0, 8][rand(8)];
    const len = () => [0, 1, 16, 592, 4096, 0x7fffffff, 0xffffffff][rand(7)];
    const handle = () => [m.handle, m.session, 0, 0x40000001, 0x80000001, 0xc0000001, rand(0xffffffff)][rand(7)];
    const calls = [
      () => x.tl_error_detail(handle(), ptr()),
      () => x.tl_model_artifact_id(handle(), ptr()),
      () => x.tl_model_preflight(handle(), ptr(), ptr()),
      () => x.tl_session_position(handle(), ptr()),
      () => x.tl_model_render(handle(), ptr(), len(), ptr(), len(), ptr(), ptr()),
      () => x.tl_model_encode(handle(), ptr(), len(), ptr(), len(), ptr()),
      () => x.tl_model_decode(handle(), ptr(), len(), rand(4), ptr(), len(), ptr()),
      () => x.tl_generation_new(handle(), ptr()),
      () => x.tl_generation_run(handle(), ptr()),
      () => x.tl_generation_result_get(handle(), ptr()),
      () => x.tl_model_open_bytes(ptr(), len(), rand(3), ptr()),
      () => x.tl_session_observe(handle(), ptr(), len(), ptr(), len(), ptr(), len(), ptr()),
    ];
    let traps = 0;
    const odd = new Set();
    for (let i = 0; i < 3000; i++) {
      rt.u8().fill(0, scratch, scratch + 65536);
      try {
        const st = calls[rand(calls.length)]();
        if (!known.has(st)) odd.add(st);
      } catch (err) {
        traps++;
        if (traps === 1) console.log(`  first trap: ${err}`);
      }
    }
    check('3000 random calls across the boundary: none traps, every status typed', traps === 0 && odd.size === 0, `${traps} traps, statuses ${[...odd]}`);
    x.free(scratch);
  }
  check('the module is usable after the random calls (same reply)', JSON.stringify((await m.generate(greedy)).ids) === JSON.stringify(first.ids));
  // A forged handle: kind bits of a session, a slot never used.
  const saved = m.session;
  m.session = (2 << 30) | (1000 << 20) | 1;
  check('generate on a forged session handle: invalid_handle', await code(m.generate(greedy)) === 'invalid_handle');
  m.session = m.handle; // a model handle where a session belongs
  check('a handle of another kind: invalid_handle', await code(m.generate(greedy)) === 'invalid_handle');
  m.session = saved;
  // Cancellation: the reply stops with cancelled; the next equals a fresh one.
  const ac = new AbortController();
  let n = 0;
  let stopped = null;
  const c = await m.generate({ ...greedy, signal: ac.signal, onToken: () => { if (++n === 3) ac.abort(); } })
    .then(() => 'ok', (e) => { stopped = e.result ?? null; return e.code ?? `untyped ${e}`; });
  // The abort is seen at the next token (its id was already generated).
  check('a reply aborted at its third token: cancelled there', c === 'cancelled' && n === 4, `${c} after ${n}`);
  // Its result comes with the error: the 4 ids streamed (the full reply's
  // first 4) and a receipt with stop cancelled, as tinylm run writes one.
  check('the cancelled error carries the result: stop cancelled, the reply\'s first 4 ids, a receipt',
    stopped?.stop === 'cancelled' && JSON.stringify(stopped.ids) === JSON.stringify(first.ids.slice(0, 4)) &&
    stopped.receipt?.length > 0 && /^[0-9a-f]{64}$/.test(stopped.receiptId), JSON.stringify(stopped && { ...stopped, raw: null, receipt: null }));
  check('after the cancel the next reply equals a fresh one', JSON.stringify((await m.generate(greedy)).ids) === JSON.stringify(first.ids));
  await m.dispose();
  check('generate after dispose: stale_handle', await code(m.generate(greedy)) === 'stale_handle');
  check('a second close of the model: stale_handle', rt.statusName(x.tl_model_close(m.handle)) === 'stale_handle');
  check('a second free of the session: stale_handle', rt.statusName(x.tl_session_free(m.session)) === 'stale_handle');

  // Memory: a budget the plan exceeds, a limit the session cannot fit in.
  let e = null;
  try {
    await loadModel(bytes.slice(), { lane: 'scalar', base, memoryBudget: 100000 });
  } catch (err) {
    e = err;
  }
  check('a memory budget below the plan: out_of_memory with the figures', e?.code === 'out_of_memory' && /MB/.test(e.message), e?.message);
  check('the refusal names the JS option, not the CLI flag', /over the memoryBudget option [\d.]+ MB/.test(e?.message) && !e.message.includes('--mem-budget'), e?.message);
  e = null;
  try {
    await loadModel(bytes.slice(), { lane: 'scalar', base, memoryLimit: bytes.length });
  } catch (err) {
    e = err;
  }
  check('a memory limit the model cannot fit in: out_of_memory before copying, with the numbers',
    e?.code === 'out_of_memory' && new RegExp(`model is ${bytes.length} bytes`).test(e.message), e?.message);
  // A limit the bytes fit in but the session's plan does not.
  const used = Number(/(\d+) already in use/.exec(e?.message ?? '')?.[1]);
  e = null;
  try {
    await loadModel(bytes.slice(), { lane: 'scalar', base, memoryLimit: used + bytes.length + 65536 });
  } catch (err) {
    e = err;
  }
  check('a memory limit the session\'s plan exceeds: out_of_memory naming the plan',
    e?.code === 'out_of_memory' && /the session needs \d+ bytes \(weights \d+, KV cache \d+/.test(e.message) && e.plan?.total > 0, e?.message);

  // Bad models.
  check('a truncated model: invalid_model', await code(loadModel(bytes.slice(0, bytes.length - 100), { lane: 'scalar', base })) === 'invalid_model');
  const flipped = bytes.slice();
  flipped[bytes.length - 10] ^= 0x40;
  check('a model with one byte changed: hash_mismatch', await code(loadModel(flipped, { lane: 'scalar', base })) === 'hash_mismatch');
  check('a changed model on the threads lane: hash_mismatch from its worker', await code(loadModel(flipped, { lane: 'threads', threads: 2, base })) === 'hash_mismatch');
  check('an unknown lane: invalid_argument', await code(loadModel(bytes.slice(), { lane: 'gpu', base })) === 'invalid_argument');
  // A packed q8 code outside Q-17 under resealed digests (the convert
  // stage's writer): only the codes' check before use can refuse it, and
  // the strict lane's decoder checks only the stored layout.
  const invalidPath = join(tmp, 'invalid-code.slm');
  execFileSync('/usr/bin/python3', [join(ROOT, 'tests/convert/convert_test.py'), '--invalid-code', SLM('tiny-q8.slm'), invalidPath]);
  const invalid = new Uint8Array(readFileSync(invalidPath));
  for (const lane of ['scalar', 'simd']) {
    let e;
    try { await loadModel(invalid.slice(), { lane, base }); } catch (err) { e = err; }
    check(`a packed code outside Q-17 on ${lane}: invalid_model naming the weights`,
      e?.code === 'invalid_model' && /invalid quantized weights/.test(e.message), e?.message);
  }

  // A File/Blob is streamed into the module's memory chunk by chunk (no
  // whole copy in JS), hashed as it lands: every lane, where the loader runs
  // and in a host worker (the Blob is passed on), replies as native, with
  // the file's SHA-256 as artifact id.
  const blobArgs = { prompt: 'Hello there', maxTokens: 6, temperature: 0 };
  const sha = createHash('sha256').update(bytes).digest('hex');
  for (const [lane, worker] of [['scalar', false], ['simd', false], ['simd', true], ['threads', false], ['threads', true]]) {
    const m = await loadModel(new Blob([bytes]), { lane, base, worker, threads: lane === 'threads' ? 2 : undefined });
    const out = await m.generate(blobArgs);
    const want = native(SLM('tiny-q8.slm'), lane === 'scalar' ? 'scalar' : 'fast', blobArgs);
    check(`a Blob on ${lane}${worker ? ' in a host worker' : ''}: streamed, the file's SHA-256 as id, replies as native`,
      m.capabilityReceipt.memory?.from === 'stream' && m.artifactId === sha &&
      JSON.stringify(out.ids) === JSON.stringify(want.ids) && out.receiptId === want.receipt_id,
      `${JSON.stringify(m.capabilityReceipt.memory)} ${m.artifactId} ${JSON.stringify(out.ids)} vs ${JSON.stringify(want.ids)}`);
    await m.dispose();
  }
  check('a truncated Blob: invalid_model', await code(loadModel(new Blob([bytes.slice(0, bytes.length - 100)]), { lane: 'simd', base })) === 'invalid_model');
  check('a Blob with one byte changed: hash_mismatch', await code(loadModel(new Blob([flipped]), { lane: 'simd', base })) === 'hash_mismatch');
  // A file that changes while it is read: its stream gives fewer or more bytes than its size.
  class Shrinking extends Blob { stream() { return new Blob([bytes.slice(0, 4096)]).stream(); } }
  class Growing extends Blob { stream() { return new Blob([bytes, bytes.slice(0, 10)]).stream(); } }
  let shortErr, longErr;
  try { await loadModel(new Shrinking([bytes]), { lane: 'simd', base }); } catch (err) { shortErr = err; }
  try { await loadModel(new Growing([bytes]), { lane: 'simd', base }); } catch (err) { longErr = err; }
  check('a file that shrinks while read: io, naming the bytes read', shortErr?.code === 'io' && /ended after 4096 of its \d+ bytes/.test(shortErr.message), shortErr?.message);
  check('a file that grows while read: io', longErr?.code === 'io' && /grew while it was read/.test(longErr.message), longErr?.message);

  // The capability receipt file (tinylm.capability-receipt/1): native
  // `tinylm receipt show` verifies the module's node id, which the node-id
  // formula of docs/receipts.md gives here too (node:crypto over the
  // loader's CBOR of the record); forged copies are refused.
  const nodeId = (meta) => createHash('sha256').update(Buffer.concat([Buffer.from('tinylm-node-v1'),
    encodeCbor('capability'), meta, encodeCbor(0)])).digest();
  const capFile = (metadata, id) => encodeCbor({ format: 'tinylm.capability-receipt/1', root: id,
    nodes: [{ id, type: 'capability', metadata, children: [] }] });
  const show = (doc, ...flags) => {
    const f = join(tmp, 'capability.cbor');
    writeFileSync(f, doc);
    return spawnSync(tinylm, ['receipt', 'show', ...flags, f], { encoding: 'utf8' });
  };
  let capMeta = null;
  for (const [lane, worker] of [['scalar', false], ['threads', true]]) {
    const m = await loadModel(new Uint8Array(bytes), { lane, base, worker, threads: lane === 'threads' ? 2 : undefined });
    const p = show(m.capabilityReceiptCbor, '--json');
    let doc = null;
    try { doc = JSON.parse(p.stdout); } catch { /* reported below */ }
    const meta = doc?.nodes?.[0]?.metadata;
    check(`capability receipt on ${lane}${worker ? ' in a host worker' : ''}: tinylm receipt show verifies it, root = the loader's id`,
      p.status === 0 && doc?.verified === true && doc.root === m.capabilityReceiptId && meta?.lane === lane &&
      meta.artifact_id === sha && meta.threads === (lane === 'threads' ? 2 : 1) &&
      meta.self_tests.some((t) => t.name === 'forward-fast' && t.ok), `${p.status} ${p.stdout.slice(0, 300)} ${p.stderr}`);
    const metadata = capabilityMetadata(m.capabilityReceipt);
    const id = nodeId(encodeCbor(metadata));
    check(`capability receipt on ${lane}: the node-id formula here gives the module's id and the same file`,
      id.toString('hex') === m.capabilityReceiptId && Buffer.from(capFile(metadata, id)).equals(Buffer.from(m.capabilityReceiptCbor)));
    if (lane === 'scalar') {
      capMeta = metadata;
      const text = show(m.capabilityReceiptCbor);
      check('receipt show (text) names the capability receipt and its id', text.status === 0 &&
        text.stdout.startsWith(`capability receipt ${m.capabilityReceiptId}`), text.stdout + text.stderr);
    }
    await m.dispose();
  }
  const forged = (change, sameId = false) => {
    const meta = structuredClone(capMeta);
    change(meta);
    const id = sameId ? nodeId(encodeCbor(capMeta)) : nodeId(encodeCbor(meta));
    return capFile(meta, id);
  };
  for (const [name, doc, code, detail] of [
    ['a field changed, the id kept', forged((x) => { x.lane = 'simd'; }, true), 'hash_mismatch', 'does not hash to its id'],
    ['an unknown field', forged((x) => { x.forged = 1; }), 'invalid_argument', "unknown field 'forged'"],
    ['a missing field', forged((x) => { delete x.lane; }), 'invalid_argument', "missing field 'lane'"],
    ['a mistyped field', forged((x) => { x.threads = 'two'; }), 'invalid_argument', 'threads: expected an unsigned integer'],
    ['a mistyped self-test', forged((x) => { x.self_tests[0].ok = 'yes'; }), 'invalid_argument', 'self_tests[0].ok: expected a bool'],
    ['a module hash of 31 bytes', forged((x) => { x.modules[0].sha256 = x.modules[0].sha256.slice(1); }), 'invalid_argument', 'sha256: expected 32 bytes'],
    ['text holding U+0000', forged((x) => { x.user_agent = 'a\0b'; }), 'invalid_argument', 'user_agent: text holds U+0000'],
    ['a root that is not the node', (() => { const id = nodeId(encodeCbor(capMeta)); return encodeCbor({ format: 'tinylm.capability-receipt/1', root: new Uint8Array(32), nodes: [{ id, type: 'capability', metadata: capMeta, children: [] }] }); })(), 'invalid_argument', "not the capability node's id"],
    ['two nodes', (() => { const id = nodeId(encodeCbor(capMeta)); const n = { id, type: 'capability', metadata: capMeta, children: [] }; return encodeCbor({ format: 'tinylm.capability-receipt/1', root: id, nodes: [n, n] }); })(), 'invalid_argument', 'one node'],
    ['another node type', (() => { const id = nodeId(encodeCbor(capMeta)); return encodeCbor({ format: 'tinylm.capability-receipt/1', root: id, nodes: [{ id, type: 'generation', metadata: capMeta, children: [] }] }); })(), 'invalid_argument', "unknown node type 'generation'"],
  ]) {
    const p = show(doc);
    check(`a capability receipt with ${name}: ${code}`, p.status !== 0 && p.stderr.startsWith(`error: ${code}:`) && p.stderr.includes(detail), p.stderr);
  }
  // A pool worker whose task traps (the make web-pooltrap module in a copy
  // of the site) ends the reply with worker_failure instead of leaving the
  // host waiting for it; the next reply is refused the same way; dispose
  // works. In a host worker (a hang shows as the timeout), then where the
  // loader runs.
  // A copy of the site whose lane runs the module in file (the manifest
  // updated to its size and hash).
  const siteWith = (name, lane, file) => {
    const site = join(tmp, name);
    cpSync(webDir, site, { recursive: true });
    const module = readFileSync(file);
    writeFileSync(join(site, `tinylm-${lane}.wasm`), module);
    const manifest = JSON.parse(readFileSync(join(site, 'manifest.json'), 'utf8'));
    manifest.modules[lane] = { ...manifest.modules[lane], size: module.length,
      sha256: createHash('sha256').update(module).digest('hex') };
    writeFileSync(join(site, 'manifest.json'), JSON.stringify(manifest));
    return site;
  };
  const trapSite = siteWith('pooltrap', 'threads', poolTrap);
  let hung = false;
  for (const worker of [true, false]) {
    const where = worker ? 'in a host worker' : 'where the loader runs';
    // Where the loader runs, a hang would block this test for good.
    if (!check(`the pool-trap case ${where} runs`, !hung, 'skipped: the host-worker case hung')) break;
    const m = await loadModel(new Uint8Array(bytes), { lane: 'threads', threads: 2, worker, base: pathToFileURL(trapSite + '/') });
    const replies = (async () => {
      for (let i = 0; i < 20; i++) await m.generate({ prompt: 'Hello there', maxTokens: 16, temperature: 0 });
      return null;
    })().catch((err) => err);
    const first = await Promise.race([replies, new Promise((r) => setTimeout(() => r('hang'), 60000))]);
    hung = first === 'hang';
    check(`a pool worker that traps mid-reply, ${where}: worker_failure, no hang`,
      first?.code === 'worker_failure' && /pool worker 1 of the threads lane failed during this reply/.test(first.message), String(first?.message ?? first));
    check(`after the pool worker failed, ${where}: the next reply is worker_failure`,
      first !== 'hang' && await code(m.generate({ prompt: 'Hi', maxTokens: 2 })) === 'worker_failure');
    check(`after the pool worker failed, ${where}: dispose works`, first !== 'hang' && await code(m.dispose()) === 'ok');
  }

  // A lane whose sampler is wrong (one tie rule reversed; every other
  // self-test passes) is refused by its `sampler` self-test and the loader
  // falls back to the next lane; the capability receipt says so and verifies.
  const mutSite = siteWith('sampler-mutant', 'simd', samplerMutant);
  {
    const m = await loadModel(new Uint8Array(bytes), { lane: 'simd', base: pathToFileURL(mutSite + '/') });
    const r = m.capabilityReceipt;
    const simd = r.selfTests.simd ?? [];
    check('a SIMD128 module with a wrong sampler: only its sampler self-test fails',
      simd.length > 1 && simd.every((t) => t.ok === (t.name !== 'sampler')) && simd.some((t) => t.name === 'sampler'), JSON.stringify(simd));
    check('a SIMD128 module with a wrong sampler: the lane is refused and the loader falls back to scalar',
      r.lane === 'scalar' && r.refused.length === 1 && r.refused[0].lane === 'simd' && r.refused[0].code === 'self_test_failed' &&
      r.refused[0].why.includes('simd: sampler failed') && r.selfTests.scalar.every((t) => t.ok), JSON.stringify(r.refused));
    const p = show(m.capabilityReceiptCbor, '--json');
    let doc = null;
    try { doc = JSON.parse(p.stdout); } catch { /* reported below */ }
    const meta = doc?.nodes?.[0]?.metadata;
    check('a SIMD128 module with a wrong sampler: tinylm receipt show verifies the capability receipt naming the failure',
      p.status === 0 && doc?.verified === true && meta?.lane === 'scalar' &&
      meta.self_tests.some((t) => t.lane === 'simd' && t.name === 'sampler' && t.ok === false), `${p.status} ${p.stdout.slice(0, 300)} ${p.stderr}`);
    const got = await m.generate({ prompt: 'Hello there', maxTokens: 4, temperature: 0 });
    check('a SIMD128 module with a wrong sampler: the fallback lane replies', got.ids.length > 0, JSON.stringify(got.ids));
    await m.dispose();
  }

} finally {
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
