// The chat page (docs/web.md "Page"): a model picker (bundled, cached, URL
// or file), streaming replies with a stop button, sampling settings, the
// capability panel and receipts. The model itself runs in a Web Worker
// (model_worker.js) through the loader's JS API (tinylm.js); this file is
// only the page.
const $ = (id) => document.getElementById(id);
const state = {
  worker: null,        // the ModelWorker holding the model
  caps: null,          // probe(), as the worker's runtime answers it
  model: null,         // { capabilityReceipt, artifactId, name, bytes, from, opts } once loaded
  messages: [],        // the conversation so far: { role, content }
  busy: false,
  generating: false,
  lastReply: null,     // what the last reply's record holds (no receipt bytes); a stopped one's too
  lastReceipt: null,   // the last reply's receipt (CBOR bytes), stop 'cancelled' for a stopped one
  listed: false,       // whether the model list (models.json, the cache) is there
  listReady: null,     // a promise that settles once it is
};
// For the Chromium tests and the curious: the page's state and a promise
// that settles once start-up (probe, model list) is done.
window.tinylmPage = { state, ready: null, replyParts };

// --- errors -------------------------------------------------------------
// What each typed error means for someone looking at the page.
const HINTS = {
  hash_mismatch: 'The bytes do not match their recorded digests: the file is damaged or was changed.',
  invalid_model: 'This is not a complete tinylm .slm artifact (truncated, or another kind of file).',
  out_of_memory: 'The model does not fit in the memory allowed (the memory budget, or wasm32\'s 4 GiB address space).',
  unsupported_abi: 'The page and the modules come from different builds: rebuild with make web.',
  unsupported_feature: 'This browser lacks a feature this lane needs.',
  unsupported_quantization: 'The artifact uses a quantization this build does not know.',
  self_test_failed: 'No module passed its checks (manifest hash, self-tests): the capability receipt says why.',
  worker_failure: 'A Web Worker failed.',
  context_exceeded: 'The conversation no longer fits the context: start a new conversation.',
  cancelled: 'Stopped.',
  stale_handle: 'The model was disposed: load it again.',
  invalid_handle: 'An internal handle was not valid.',
  invalid_utf8: 'The text is not valid UTF-8.',
  numerical_failure: 'The forward pass produced a non-finite value (the message names where).',
  invalid_argument: 'A setting or the text was refused (the message says which).',
  io: 'The model could not be read.',
};
class PageError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
// A grammar refused by its reader (the schema box's): kind names the reader.
const GRAMMAR_HINT = 'The schema uses something the engine does not enforce or cannot read (named above): it is refused, never ignored.';
function errorText(e) {
  const code = e?.code || e?.name || 'error';
  const hint = GRAMMAR_READERS.includes(e?.kind) ? `\n${GRAMMAR_HINT}` : HINTS[code] ? `\n${HINTS[code]}` : '';
  return `error: ${code}: ${e?.message ?? String(e)}${hint}`;
}
function showError(e) {
  const box = $('error');
  if (!e) {
    box.hidden = true;
    box.textContent = '';
    return;
  }
  box.textContent = errorText(e);
  box.hidden = false;
  console.error(e);
}
const status = (text) => { $('model-status').textContent = text; };

// --- bytes: fetch, file, digest --------------------------------------------
async function readStream(stream, total, onProgress) {
  const reader = stream.getReader();
  let buf = new Uint8Array(total || 1 << 20);
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (n + value.length > buf.length) {
      // Without a length up front (or past it), grow geometrically.
      const bigger = new Uint8Array(Math.max(buf.length * 2, n + value.length));
      bigger.set(buf.subarray(0, n));
      buf = bigger;
    }
    buf.set(value, n);
    n += value.length;
    onProgress(n, total);
  }
  return n === buf.length ? buf.buffer : buf.slice(0, n).buffer;
}
async function fetchBytes(url, onProgress) {
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new PageError('io', `${url}: ${e.message}`);
  }
  if (!r.ok) throw new PageError('io', `${url}: HTTP ${r.status} ${r.statusText}`);
  return readOrIo(url, r.body, Number(r.headers.get('Content-Length')) || 0, onProgress);
}
// A stream that breaks off (network gone, file unreadable) is an io error.
async function readOrIo(name, stream, total, onProgress) {
  try {
    return await readStream(stream, total, onProgress);
  } catch (e) {
    throw new PageError('io', `${name}: ${e.message}`);
  }
}
async function sha256Hex(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

// --- the model cache (Cache API), keyed by artifact id ---------------------
// An artifact id is the SHA-256 of the artifact's bytes, so a cached copy is
// checked against its key before use, and one entry serves every URL or
// file that holds the same bytes. localStorage remembers which source gave
// which id, so a reload finds the copy without fetching the source again.
// The model worker writes new entries (model_worker.js).
const CACHE_NAME = 'tinylm-models-v1';
const INDEX_KEY = 'tinylm.models.v1';
const cacheDir = () => new URL('tinylm-model-cache/', location.href).href;
const cacheUrl = (id) => new URL(`${id}.slm`, cacheDir()).href;
const haveCache = () => typeof caches !== 'undefined';
function cacheIndex() {
  try {
    return JSON.parse(localStorage.getItem(INDEX_KEY)) || {};
  } catch {
    return {};
  }
}
function rememberSource(source, info) {
  const index = cacheIndex();
  index[source] = info;
  localStorage.setItem(INDEX_KEY, JSON.stringify(index));
}
async function cacheGet(id) {
  if (!haveCache() || !/^[0-9a-f]{64}$/.test(id)) return null;
  const cache = await caches.open(CACHE_NAME);
  const hit = await cache.match(cacheUrl(id));
  if (!hit) return null;
  const bytes = await hit.arrayBuffer();
  if ((await sha256Hex(bytes)) === id) return bytes;
  await cache.delete(cacheUrl(id)); // damaged: forget it, fetch again
  return null;
}
// --- the model worker --------------------------------------------------------
// Requests to model_worker.js, one promise each; a generation's tokens
// arrive through onToken while its request runs.
class ModelWorker {
  constructor() {
    this.worker = new Worker(new URL('model_worker.js', import.meta.url), { type: 'module' });
    // Stop's flag, shared with the worker; shared memory needs isolation.
    this.cancel = globalThis.crossOriginIsolated ? new Int32Array(new SharedArrayBuffer(4)) : null;
    this.pending = new Map();
    this.next = 1;
    this.worker.onmessage = ({ data }) => {
      const call = this.pending.get(data.id);
      if (!call) return;
      if (data.op === 'token') return call.onToken?.(data.text);
      this.pending.delete(data.id);
      if (data.op === 'done') call.ok(data.value);
      else call.fail(Object.assign(new PageError(data.error.code, data.error.message), { kind: data.error.kind, offset: data.error.offset, capabilityReceipt: data.error.capabilityReceipt, result: data.error.result }));
    };
    this.worker.onerror = (ev) => {
      ev.preventDefault();
      this.end(new PageError('worker_failure', `the model worker failed: ${ev.message || 'it did not start'}`));
    };
    // A worker that fails to start fails every request; this one's
    // failure is reported through them.
    this.call('init', { cancel: this.cancel }).catch(() => {});
  }
  call(op, args = {}, { transfer = [], onToken = null } = {}) {
    const id = this.next++;
    return new Promise((ok, fail) => {
      this.pending.set(id, { ok, fail, onToken });
      this.worker.postMessage({ id, op, ...args }, transfer);
    });
  }
  // Ends the worker (and the model in it); every pending request fails with e.
  end(e) {
    this.worker.terminate();
    for (const call of this.pending.values()) call.fail(e);
    this.pending.clear();
    if (state.worker === this) state.worker = null;
  }
}
function worker() {
  state.worker ??= new ModelWorker();
  return state.worker;
}

// --- model list ------------------------------------------------------------
function addOption(list, label, value) {
  const o = document.createElement('option');
  o.textContent = label;
  o.value = JSON.stringify(value);
  list.append(o);
  return o;
}
const mib = (n) => `${(n / 1048576).toFixed(n < 10485760 ? 2 : 1)} MiB`;
async function fillModelList() {
  const list = $('model-list');
  const keep = list.value;
  list.replaceChildren();
  addOption(list, '(none)', null);
  let bundled = [];
  try {
    const r = await fetch('models.json', { cache: 'no-cache' });
    if (r.ok) bundled = (await r.json()).models || [];
  } catch {
    // No models.json: nothing bundled.
  }
  const seen = new Set();
  for (const m of bundled) {
    seen.add(m.artifactId);
    addOption(list, `${m.name} — ${mib(m.bytes)}`, { kind: 'url', url: m.url, name: m.name, artifactId: m.artifactId });
  }
  for (const [source, info] of Object.entries(cacheIndex())) {
    if (seen.has(info.artifactId)) continue;
    seen.add(info.artifactId);
    addOption(list, `cached: ${info.name} — ${mib(info.bytes)}`, { kind: 'cached', source, ...info });
  }
  // The first bundled model is the default; a choice made stays.
  if ([...list.options].some((o) => o.value === keep) && keep !== 'null') list.value = keep;
  else if (list.options.length > 1) list.selectedIndex = 1;
}

// The bytes of the chosen source, from the cache when it holds them.
async function acquire(choice, onProgress) {
  let id = choice.artifactId || cacheIndex()[choice.source]?.artifactId;
  if (id) {
    const cached = await cacheGet(id);
    if (cached) return { bytes: cached, artifactId: id, from: 'cache' };
    if (choice.kind === 'cached') {
      if (choice.source.startsWith('url:')) return acquire({ kind: 'url', url: choice.source.slice(4), name: choice.name, source: choice.source }, onProgress);
      throw new PageError('io', `${choice.name} is no longer in this browser's cache: pick the file again`);
    }
  }
  // A file goes to the model worker as it is: the loader streams it into
  // the module's memory (no copy here), and its id is the artifact id.
  if (choice.kind === 'file') return { bytes: choice.file, artifactId: null, from: 'file' };
  const bytes = await fetchBytes(choice.url, onProgress);
  id = await sha256Hex(bytes);
  if (choice.artifactId && choice.artifactId !== id)
    throw new PageError('hash_mismatch', `${choice.url}: SHA-256 ${id}, but the model list says ${choice.artifactId}`);
  return { bytes, artifactId: id, from: 'network' };
}

function chosenSource() {
  const file = $('model-file').files[0];
  if (file) return { kind: 'file', file, name: file.name, source: `file:${file.name}:${file.size}:${file.lastModified}` };
  const url = $('model-url').value.trim();
  if (url) {
    const abs = new URL(url, location.href).href;
    return { kind: 'url', url: abs, name: url.split('/').pop() || url, source: `url:${abs}` };
  }
  const picked = JSON.parse($('model-list').value || 'null');
  if (!picked) return null;
  if (picked.kind === 'url') picked.source = `url:${new URL(picked.url, location.href).href}`;
  return picked;
}

function loadOptions() {
  const opts = { threads: number('threads', { min: 1 }) };
  if ($('lane').value) opts.lane = $('lane').value;
  const budget = $('budget').value.trim();
  if (budget) opts.memoryBudget = Math.round(number('budget', { integer: false }) * 1048576);
  return opts;
}

// Loads bytes into the worker: the model, its receipt, the panel. The
// model loaded before stays until the new one has loaded (the worker
// swaps them then): a load that fails leaves it loaded and working.
async function start(got, name, opts) {
  // The worker takes the bytes over (no copy; a File is passed as it is)
  // and, once the model has loaded, puts them in the cache under the
  // artifact id: no second copy on this side.
  const cache = got.from === 'cache' || !haveCache() ? null : { name: CACHE_NAME, dir: cacheDir() };
  const isFile = got.bytes instanceof Blob;
  const bytes = isFile ? got.bytes.size : got.bytes.byteLength;
  const t0 = performance.now();
  const m = await worker().call('load', { bytes: got.bytes, opts, cache }, { transfer: isFile ? [] : [got.bytes] });
  const ms = performance.now() - t0;
  got.artifactId = m.artifactId;
  state.model = { capabilityReceipt: m.capabilityReceipt, artifactId: m.artifactId, name, bytes, from: got.from, opts };
  showCapabilities(m.capabilityReceipt, m.capabilityReceiptCbor, m.capabilityReceiptId);
  return { ms, cached: got.from === 'cache' || m.cached };
}

async function onLoad(ev) {
  ev.preventDefault();
  if (state.busy) return;
  showError(null);
  let opts;
  try {
    opts = loadOptions();
  } catch (e) {
    return showError(e);
  }
  setBusy(true);
  const bar = $('load-progress');
  let choice = null;
  try {
    choice = chosenSource();
    // Load pressed before the model list is there, with no URL or file
    // given: the list's default is what is meant, so wait for it.
    if (!choice && !state.listed) {
      status('Waiting for the model list …');
      await state.listReady;
      choice = chosenSource();
    }
    if (!choice) throw new PageError('invalid_argument', 'choose a bundled or cached model, a URL or a file');
    bar.hidden = false;
    bar.removeAttribute('value');
    status(`Reading ${choice.name} …`);
    const got = await acquire(choice, (n, total) => {
      if (total) bar.value = n / total;
      status(`Reading ${choice.name}: ${mib(n)}${total ? ` of ${mib(total)}` : ''}`);
    });
    bar.removeAttribute('value');
    status(`Verifying and loading ${choice.name} (${mib(got.bytes.byteLength ?? got.bytes.size)}) …`);
    const { ms, cached } = await start(got, choice.name, opts);
    // Only a source that gave these bytes is remembered as giving them.
    if (cached && got.from !== 'cache' && choice.source) rememberSource(choice.source, { artifactId: got.artifactId, name: choice.name, bytes: state.model.bytes });
    status(`Loaded ${choice.name} from ${got.from} in ${(ms / 1000).toFixed(2)} s · artifact ${got.artifactId.slice(0, 16)}… · ` +
      (cached ? 'cached in this browser' : 'not cached'));
    state.messages = [];
    $('transcript').replaceChildren();
    if (got.from !== 'cache') await fillModelList();
  } catch (e) {
    // A worker that failed took the model with it; otherwise the model
    // loaded before (if any) is still loaded and answers as before.
    if (!state.worker) state.model = null;
    if (state.model) {
      status(`Loading ${choice?.name ?? 'the model'} failed (${e.code ?? 'error'}): ${modelLine()} is still loaded.`);
    } else {
      status(choice ? `Loading ${choice.name} failed (${e.code ?? 'error'}): no model loaded.` : modelLine());
      if (e.capabilityReceipt) showCapabilities(e.capabilityReceipt);
    }
    showError(e);
  } finally {
    bar.hidden = true;
    setBusy(false);
  }
}
// The loaded model and the settings that shape its replies, for the status line.
function modelLine() {
  const m = state.model;
  if (!m) return 'No model loaded.';
  return `${m.name} (${m.capabilityReceipt?.lane ?? '?'} lane, artifact ${m.artifactId.slice(0, 16)}…)`;
}

// --- the capability panel --------------------------------------------------
const hexOf = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
function kv(obj) {
  const dl = document.createElement('dl');
  dl.className = 'kv';
  for (const [k, v] of Object.entries(obj)) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    if (v instanceof Node) {
      dd.append(v);
    } else {
      dd.textContent = String(v);
      if (/[0-9a-f]{40,}/.test(dd.textContent)) dd.className = 'mono';
    }
    dl.append(dt, dd);
  }
  return dl;
}
function span(text, cls) {
  return Object.assign(document.createElement('span'), { textContent: text, className: cls || '' });
}
function showProbe(caps) {
  const lanes = caps.lanes.join(', ');
  const missing = Object.entries(caps.why || {}).map(([lane, why]) => `${lane}: ${why}`).join('; ');
  $('caps-summary').replaceChildren(...kv({
    'SIMD128': caps.simd128 ? 'yes' : 'no',
    'threads': caps.threads ? 'yes' : 'no',
    'cross-origin isolated': caps.crossOriginIsolated ? 'yes' : 'no',
    'WebGPU': caps.webgpu ? 'yes (the adapter is asked for at load)' : 'no',
    'lanes available': lanes,
    ...(missing ? { 'unavailable': missing } : {}),
  }).childNodes);
}
// The webgpu lane's adapter and what its probes found.
function webgpuSummary(g) {
  const a = g.adapter;
  const name = [a.vendor, a.architecture, a.device].filter(Boolean).join(' ') || 'unnamed';
  const probes = Object.entries(g.probes ?? {}).map(([k, v]) => `${k} ${v}`).join(', ');
  return `${name}${a.isFallback ? ' (fallback adapter: CPU emulation, not a GPU)' : ''}; ${probes}`;
}
// The receipt's essentials on top; the whole receipt below, folded.
// r: the capability receipt's JSON view; cbor and id: the receipt file
// (tinylm.capability-receipt/1) and its id, once a model has loaded.
function showCapabilities(r, cbor = null, id = null) {
  $('caps-receipt').textContent = toJSON(r ?? {});
  const summary = {};
  if (r?.lane) {
    summary.lane = r.lane;
    summary.why = r.laneReason;
    summary.numerics = r.numerics ?? '';
    summary.kernels = r.kernels ?? '';
    summary.threads = `${r.threads}${r.threadsRequested !== r.threads ? ` (asked for ${r.threadsRequested})` : ''}`;
    const tests = document.createElement('span');
    for (const t of r.selfTests?.[r.lane] ?? []) tests.append(span(`${t.name} ${t.ok ? '✓' : '✗'}`, t.ok ? 'pass' : 'fail'), ' ');
    summary['self-tests'] = tests;
    summary.module = `${r.modules?.[r.lane]?.file ?? '?'} sha256 ${r.modules?.[r.lane]?.sha256 ?? '?'}`;
    if (r.lane === 'webgpu' && r.webgpu) summary.adapter = webgpuSummary(r.webgpu);
    if (r.memory) summary.memory = `model ${mib(r.memory.modelBytes)}, session plan ${mib(r.memory.plan.total)}, wasm memory ${mib(r.memory.wasmMemoryBytes)}`;
  } else {
    summary.lane = 'none: no lane passed its checks';
  }
  if (r?.refused?.length) {
    const list = document.createElement('span');
    for (const x of r.refused) list.append(span(`${x.lane}: ${x.code} — ${x.why}`, 'fail'), document.createElement('br'));
    summary.refused = list;
  }
  if (r?.artifactId) summary.artifact = r.artifactId;
  if (id) summary.receipt = id;
  $('caps-summary').replaceChildren(...kv(summary).childNodes);
  $('download-caps').disabled = !r;
  $('download-caps-cbor').disabled = !cbor;
  state.shownReceipt = r;
  state.shownReceiptCbor = cbor && { cbor, id };
}
function download(name, data, type) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([data], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
const toJSON = (v) => JSON.stringify(v, (k, x) => (x instanceof Uint8Array ? hexOf(x) : typeof x === 'bigint' ? String(x) : x), 2);

// --- chat -----------------------------------------------------------------
function setBusy(busy) {
  state.busy = busy;
  $('load').disabled = busy;
  $('prompt').disabled = !state.model;
  $('send').disabled = !state.model || busy;
  $('stop').disabled = !state.generating;
  $('download-reply').disabled = !state.lastReceipt;
}
function bubble(role, text) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  const think = document.createElement('div');
  think.className = 'think';
  think.hidden = true;
  const body = document.createElement('span');
  body.className = 'body';
  div.append(think, body);
  $('transcript').append(div);
  setText(div, text);
  return div;
}
function note(div, text) {
  div.append(span(text, 'meta'));
}
// A reply's think block apart from its answer, by the rules of the server's
// reasoning_content (src/core/gen/think.h, docs/server.md Reasoning): a
// block only where the reply opens with <think>; its text without the tags
// and the newlines around them; the answer after </think> and its
// newlines; a block never closed is all reasoning. While the reply streams
// (final false) text that could still become a tag is held back, so the
// answer never shows a piece of one.
const THINK_OPEN = '<think>', THINK_CLOSE = '</think>';
function replyParts(text, final) {
  if (!text.startsWith(THINK_OPEN)) {
    const undecided = !final && THINK_OPEN.startsWith(text);
    return { reasoning: null, answer: undecided ? '' : text };
  }
  const close = text.indexOf(THINK_CLOSE, THINK_OPEN.length);
  let reasoning = close >= 0 ? text.slice(THINK_OPEN.length, close) : text.slice(THINK_OPEN.length);
  if (close < 0 && !final) {
    for (let k = THINK_CLOSE.length - 1; k > 0; k--) {
      if (reasoning.endsWith(THINK_CLOSE.slice(0, k))) { reasoning = reasoning.slice(0, -k); break; }
    }
  }
  reasoning = reasoning.replace(/^\n+/, '').replace(/\n+$/, '');
  const answer = close >= 0 ? text.slice(close + THINK_CLOSE.length).replace(/^\n+/, '') : '';
  return { reasoning, answer };
}
// A bubble's text: an assistant's think block in its own muted "Thinking"
// box (hidden when empty), the answer in the body.
function setText(div, text, final = true) {
  const [think, body] = [div.querySelector('.think'), div.querySelector('.body')];
  const p = div.classList.contains('assistant') ? replyParts(text, final) : { reasoning: null, answer: text };
  think.hidden = !p.reasoning;
  think.textContent = p.reasoning ?? '';
  body.textContent = p.answer;
  $('transcript').scrollTop = $('transcript').scrollHeight;
}
// A settings field as a number: not one (or a fraction where an integer is
// wanted) is "not an integer ≥ min"; one only too large for the parameter it
// sets says so with the largest it takes (max: a count's uint32, the seed's
// largest integer a JavaScript number holds exactly).
const U32_MAX = 2 ** 32 - 1;
function number(id, { min = 0, integer = true, max = integer ? Number.MAX_SAFE_INTEGER : Infinity } = {}) {
  const el = $(id);
  const label = el.labels[0]?.textContent.trim() || id;
  const v = Number(el.value);
  const tooLarge = v > max; // '1e999' too: a number in form, only too large
  if (!tooLarge && (el.value.trim() === '' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))))
    throw new PageError('invalid_argument', `${label}: '${el.value}' is not ${integer ? 'an integer' : 'a number'} ≥ ${min}`);
  if (tooLarge)
    throw new PageError('invalid_argument', `${label}: '${el.value}' is too large: at most ${max}`);
  return v;
}

const optional = (key, id, opts) => ($(id).value.trim() === '' ? {} : { [key]: number(id, opts) });

// --- structured output (docs/structured.md) ---------------------------------
// Output: text, any JSON object, or JSON that a schema accepts; the loader
// compiles the grammar for the reply (tl_grammar_compile) and the core
// masks every draw with it. The schema is checked as JSON here, as it is
// typed; what the engine refuses (a keyword it does not enforce) comes back
// with the reply's error and is shown under the box too.
const GRAMMAR_READERS = ['json_schema', 'json_object'];
const outputMode = () => $('output-mode').value;
function schemaError(text) {
  const box = $('schema-error');
  box.textContent = text || '';
  box.hidden = !text;
}
// The schema box's text if it is JSON, else a PageError saying where not.
function schemaText() {
  const text = $('schema').value;
  try {
    JSON.parse(text);
  } catch (e) {
    throw new PageError('invalid_argument', `the schema is not JSON: ${e.message}`);
  }
  return text;
}
function checkSchema() {
  if (outputMode() !== 'schema') return schemaError('');
  try {
    schemaText();
    schemaError('');
  } catch (e) {
    schemaError(e.message);
  }
}
function showOutputMode() {
  const mode = outputMode();
  $('schema-box').hidden = mode !== 'schema';
  $('think-budget').disabled = mode === 'text';
  checkSchema();
}
// What the reply is asked to keep to, as generate() takes it.
function outputSettings() {
  const mode = outputMode();
  if (mode === 'text') return {};
  const budget = optional('thinkBudget', 'think-budget', { min: 1, max: U32_MAX });
  if (mode === 'json') return { output: 'json', jsonObject: true, ...budget };
  try {
    return { output: 'schema', jsonSchema: schemaText(), ...budget };
  } catch (e) {
    schemaError(e.message);
    throw e;
  }
}
// A JSON reply's answer (after any <think> block) pretty-printed; a reply
// that stopped before its JSON was complete stays as it came.
function showJson(div, out) {
  const body = div.querySelector('.body');
  div.classList.add('json');
  try {
    body.textContent = JSON.stringify(JSON.parse(body.textContent), null, 2);
    return '';
  } catch {
    return ` · not complete JSON (stop: ${out.stop})`;
  }
}

async function onSend(ev) {
  ev.preventDefault();
  if (!state.model || state.busy) return;
  showError(null);
  const text = $('prompt').value;
  if (!text.trim()) return;
  let settings;
  try {
    // An empty temperature or top-k leaves the artifact's generation
    // defaults in force (as tinylm run without the flag); 0 is greedy / off.
    settings = {
      ...optional('temperature', 'temperature', { integer: false }),
      ...optional('topK', 'top-k', { max: U32_MAX }),
      seed: number('seed'),
      maxTokens: number('max-tokens', { min: 1, max: U32_MAX }),
      enableThinking: $('thinking').checked,
      ...outputSettings(),
    };
  } catch (e) {
    return showError(e);
  }
  const { output, ...args } = settings;
  const messages = [...state.messages, { role: 'user', content: text }];
  bubble('user', text);
  $('prompt').value = '';
  const reply = bubble('assistant', '');
  reply.classList.add('streaming');
  let streamed = '';
  state.generating = true;
  setBusy(true);
  try {
    const out = await worker().call('generate', { args: { messages, ...args } }, {
      onToken: (t) => {
        streamed += t;
        setText(reply, streamed, false);
      },
    });
    setText(reply, out.text);
    const incomplete = output ? showJson(reply, out) : '';
    note(reply, replyNote(out, settings) + incomplete);
    state.messages = [...messages, { role: 'assistant', content: out.text }];
    record(out, messages, settings);
  } catch (e) {
    // A stopped or failed turn is not part of the conversation.
    reply.remove();
    $('prompt').value = text;
    if (e.code === 'cancelled') {
      const b = bubble('assistant', streamed);
      // Its receipt (stop 'cancelled') is offered as a finished reply's:
      // tinylm run writes one for a reply stopped at Ctrl-C too.
      note(b, `stopped (not kept in the conversation)${e.result ? ` · ${replyNote(e.result, settings)}` : ''}`);
      if (e.result) record(e.result, messages, settings);
      if (!state.worker) await restartAfterStop(b);
    } else {
      // The engine's refusal of the schema (the keyword named) beside it too.
      if (GRAMMAR_READERS.includes(e.kind)) schemaError(`${e.code}: ${e.message}`);
      // A worker that failed took the model with it.
      if (!state.worker) {
        state.model = null;
        status('The model worker failed: load the model again.');
      }
      showError(e);
    }
  } finally {
    reply.classList.remove('streaming');
    state.generating = false;
    setBusy(false);
  }
}
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(x < 100 ? 1 : 0) : '—');
const replyNote = (out, settings) =>
  `${out.ids.length} tokens · stop: ${out.stop} · thinking ${settings.enableThinking ? 'on' : 'off'} · ` +
  (out.grammarDigest ? `${settings.output === 'schema' ? 'JSON Schema' : 'JSON'} grammar ${out.grammarDigest.slice(0, 16)}… · ` : '') +
  `receipt ${out.receiptId.slice(0, 16)}…`;
// A reply's record (finished or stopped): the speed line, the receipt the
// panel's button downloads, and what the page shows in tinylmPage.state.
function record(out, messages, settings) {
  const t = out.timings || {};
  $('speed').textContent = `Prefill ${fmt(t.prefillTokensPerS)} tokens/s · decode ${fmt(t.decodeTokensPerS)} tokens/s ` +
    `(${out.promptTokens} prompt tokens, ${out.ids.length} generated)`;
  state.lastReceipt = out.receipt;
  state.lastReply = {
    artifactId: state.model.artifactId,
    lane: state.model.capabilityReceipt.lane,
    numerics: state.model.capabilityReceipt.numerics,
    conversation: { messages, enable_thinking: settings.enableThinking },
    settings,
    ids: out.ids,
    text: out.text,
    stop: out.stop,
    promptTokens: out.promptTokens,
    receiptId: out.receiptId,
    grammarDigest: out.grammarDigest ?? null,
    timings: t,
  };
  $('download-reply').textContent = out.stop === 'cancelled' ? 'Download last reply\'s receipt (stopped: cancelled)' : 'Download last reply\'s receipt';
}

// Stop: through the shared flag the worker's generation polls, or, without
// cross-origin isolation (no shared memory), by ending the worker.
function onStop() {
  const w = state.worker;
  if (!state.generating || !w) return;
  if (w.cancel) {
    Atomics.store(w.cancel, 0, 1);
    w.worker.postMessage({ op: 'cancel' });
  } else {
    w.end(new PageError('cancelled', 'stopped'));
  }
}
// After the worker was ended: the same model again, from the cache.
async function restartAfterStop(b) {
  const m = state.model;
  state.model = null;
  const bytes = await cacheGet(m.artifactId);
  if (!bytes) {
    status('Stopping ended the model (this page is not cross-origin isolated) and it is not cached: load it again.');
    return;
  }
  try {
    await start({ bytes, artifactId: m.artifactId, from: 'cache' }, m.name, m.opts);
    note(b, 'the model was reloaded from the cache: without cross-origin isolation, Stop ends the model\'s worker');
  } catch (e) {
    status('No model loaded.');
    showError(e);
  }
}

// What the next reply is sent with, in words, beside the settings: thinking
// first (the chat template's enable_thinking; on unless unticked).
function showSettings() {
  const v = (id, none) => $(id).value.trim() || none;
  $('settings-state').textContent = `Next reply: thinking ${$('thinking').checked ? 'on' : 'off'} · ` +
    `temperature ${v('temperature', 'model\'s')} · top-k ${v('top-k', 'model\'s')} · seed ${v('seed', '0')} · ` +
    `at most ${v('max-tokens', '?')} tokens · output ${$('output-mode').selectedOptions[0].textContent}`;
}

// --- start-up ---------------------------------------------------------------
async function init() {
  $('model-form').addEventListener('submit', onLoad);
  $('chat-form').addEventListener('submit', onSend);
  $('stop').addEventListener('click', onStop);
  $('settings').addEventListener('input', showSettings);
  $('settings').addEventListener('change', showSettings);
  $('output-mode').addEventListener('change', () => { showOutputMode(); showSettings(); });
  $('schema').addEventListener('input', checkSchema);
  showOutputMode();
  showSettings();
  $('clear').addEventListener('click', () => {
    if (state.busy) return;
    state.messages = [];
    $('transcript').replaceChildren();
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      $('chat-form').requestSubmit();
    }
  });
  // A file or URL picked replaces the list's choice.
  $('model-file').addEventListener('change', () => { $('model-url').value = ''; });
  $('model-url').addEventListener('input', () => { $('model-file').value = ''; });
  $('download-caps').addEventListener('click', () => {
    download('tinylm-capability-receipt.json', toJSON(state.shownReceipt ?? {}), 'application/json');
  });
  $('download-caps-cbor').addEventListener('click', () => {
    const r = state.shownReceiptCbor;
    if (r) download(`tinylm-capability-${r.id}.cbor`, r.cbor, 'application/cbor');
  });
  $('download-reply').addEventListener('click', () => {
    if (state.lastReceipt) download(`tinylm-receipt-${state.lastReply.receiptId}.cbor`, state.lastReceipt, 'application/cbor');
  });
  // Offline once loaded (sw.js); the page works without it.
  navigator.serviceWorker?.register('sw.js').catch((e) => console.warn('service worker:', e));
  // Load works from now on (index.html has it disabled until this script
  // handles it): one pressed before the list is there waits for it.
  state.listReady = fillModelList().finally(() => { state.listed = true; });
  $('load').disabled = false;
  try {
    state.caps = await worker().call('probe');
    showProbe(state.caps);
    // The threads lane's default: one thread per CPU the browser reports.
    $('threads').value = String(Math.min(Math.max(1, state.caps.hardwareConcurrency || 1), 16));
  } catch (e) {
    showError(e);
  }
  await state.listReady;
  if (!state.busy) setBusy(false);
}
window.tinylmPage.ready = init();
