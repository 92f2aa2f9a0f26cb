// The chat page (docs/web.md "Page"): a model picker (bundled, cached, URL
// or file), streaming replies with a stop button, sampling settings, the
// capability panel and receipts. Everything the model does goes through
// the loader's JS API (./tinylm.js); this file is only the page.
import { probe, loadModel } from './tinylm.js';

const $ = (id) => document.getElementById(id);
const state = {
  caps: null,          // probe()
  model: null,         // loadModel()'s model
  modelInfo: null,     // { name, artifactId, bytes, from }
  messages: [],        // the conversation so far: { role, content }
  busy: false,
  abort: null,         // AbortController of the reply being generated
  lastReply: null,     // the record "Download last reply's record" saves
};
// For the Chromium tests and the curious: the page's state and a promise
// that settles once start-up (probe, model list) is done.
window.tinylmPage = { state, ready: null };

// --- errors -------------------------------------------------------------
// What each typed error means for someone looking at the page.
const HINTS = {
  hash_mismatch: 'The bytes do not match their recorded digests: the file is damaged or was changed.',
  invalid_model: 'This is not a complete tinylm .slm artifact (truncated, or another kind of file).',
  out_of_memory: 'The model does not fit in the memory this lane can use (wasm32 has at most 4 GiB).',
  unsupported_abi: 'The page and the modules come from different builds: rebuild with make web.',
  unsupported_feature: 'This browser lacks a feature this lane needs.',
  unsupported_quantization: 'The artifact uses a quantization this build does not know.',
  self_test_failed: 'A module failed its start-up self-test and was refused.',
  worker_failure: 'A Web Worker of the threads lane failed.',
  context_exceeded: 'The conversation no longer fits the context: start a new conversation.',
  cancelled: 'Stopped.',
  stale_handle: 'The model was disposed: load it again.',
  invalid_handle: 'An internal handle was not valid.',
  invalid_utf8: 'The text is not valid UTF-8.',
  numerical_failure: 'The forward pass produced a non-finite value (the message names where).',
  invalid_argument: 'A setting is out of range.',
  io: 'The model could not be read.',
};
class PageError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
function errorText(e) {
  const code = e?.code || e?.status || e?.name || 'error';
  const hint = HINTS[code] ? `\n${HINTS[code]}` : '';
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
  return readStream(r.body, Number(r.headers.get('Content-Length')) || 0, onProgress);
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
const CACHE_NAME = 'tinylm-models-v1';
const INDEX_KEY = 'tinylm.models.v1';
const cacheUrl = (id) => new URL(`tinylm-model-cache/${id}.slm`, location.href).href;
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
async function cachePut(id, bytes) {
  if (!haveCache()) return false;
  try {
    const cache = await caches.open(CACHE_NAME);
    await cache.put(cacheUrl(id), new Response(bytes, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.byteLength) },
    }));
    return true;
  } catch (e) {
    // A full quota only costs the next reload a fetch.
    console.warn('model cache:', e);
    return false;
  }
}

// --- model list ------------------------------------------------------------
function addOption(list, label, value) {
  const o = document.createElement('option');
  o.textContent = label;
  o.value = JSON.stringify(value);
  list.append(o);
  return o;
}
async function fillModelList() {
  const list = $('model-list');
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
  let first = null;
  for (const m of bundled) {
    seen.add(m.artifactId);
    const o = addOption(list, `${m.name} — ${mib(m.bytes)}`, { kind: 'url', url: m.url, name: m.name, artifactId: m.artifactId });
    first ??= o;
  }
  for (const [source, info] of Object.entries(cacheIndex())) {
    if (seen.has(info.artifactId)) continue;
    seen.add(info.artifactId);
    addOption(list, `cached: ${info.name} — ${mib(info.bytes)}`, { kind: 'cached', source, ...info });
  }
  if (first) first.selected = true;
}
const mib = (n) => `${(n / 1048576).toFixed(n < 10485760 ? 2 : 1)} MiB`;

// The bytes of the chosen source, from the cache when it holds them.
async function acquire(choice, onProgress) {
  let id = choice.artifactId || cacheIndex()[choice.source]?.artifactId;
  if (id) {
    const cached = await cacheGet(id);
    if (cached) return { bytes: cached, artifactId: id, from: 'cache' };
    if (choice.kind === 'cached') {
      if (choice.source.startsWith('url:')) return acquire({ kind: 'url', url: choice.source.slice(4), name: choice.name }, onProgress);
      throw new PageError('io', `${choice.name} is no longer in the browser's cache: pick the file again`);
    }
  }
  const bytes = choice.kind === 'file'
    ? await readStream(choice.file.stream(), choice.file.size, onProgress)
    : await fetchBytes(choice.url, onProgress);
  id = await sha256Hex(bytes);
  if (choice.artifactId && choice.artifactId !== id)
    throw new PageError('hash_mismatch', `${choice.url}: SHA-256 ${id}, but the model list says ${choice.artifactId}`);
  return { bytes, artifactId: id, from: choice.kind === 'file' ? 'file' : 'network' };
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

async function onLoad(ev) {
  ev.preventDefault();
  if (state.busy) return;
  showError(null);
  const choice = chosenSource();
  if (!choice) return showError(new PageError('invalid_argument', 'choose a bundled or cached model, a URL or a file'));
  setBusy(true);
  const bar = $('load-progress');
  bar.hidden = false;
  bar.removeAttribute('value');
  try {
    if (state.model) {
      const old = state.model;
      state.model = null;
      await old.dispose();
    }
    status(`Reading ${choice.name} …`);
    const got = await acquire(choice, (n, total) => {
      if (total) bar.value = n / total;
      status(`Reading ${choice.name}: ${mib(n)}${total ? ` of ${mib(total)}` : ''}`);
    });
    bar.removeAttribute('value');
    status(`Verifying and loading ${choice.name} (${mib(got.bytes.byteLength)}) …`);
    const opts = { threads: Math.max(1, Number($('threads').value) || 1) };
    if ($('lane').value) opts.lane = $('lane').value;
    // The cache gets its own copy: the loader may take over the buffer.
    const cacheCopy = got.from === 'cache' ? null : got.bytes.slice(0);
    const t0 = performance.now();
    state.model = await loadModel(got.bytes, opts);
    const ms = performance.now() - t0;
    state.modelInfo = { name: choice.name, artifactId: got.artifactId, bytes: cacheCopy?.byteLength ?? got.bytes.byteLength, from: got.from };
    let cached = got.from === 'cache';
    if (cacheCopy) cached = await cachePut(got.artifactId, cacheCopy);
    if (cached && choice.source) rememberSource(choice.source, { artifactId: got.artifactId, name: choice.name, bytes: state.modelInfo.bytes });
    status(`Loaded ${choice.name} from ${got.from} in ${(ms / 1000).toFixed(2)} s · artifact ${got.artifactId.slice(0, 16)}… · ` +
      (cached ? 'cached in this browser' : 'not cached'));
    state.messages = [];
    $('transcript').replaceChildren();
    showCapabilities(state.model.capabilityReceipt);
    if (got.from !== 'cache') await fillModelList();
  } catch (e) {
    status(state.model ? 'The previous model was disposed.' : 'No model loaded.');
    state.model = null;
    showError(e);
  } finally {
    bar.hidden = true;
    setBusy(false);
  }
}

// --- the capability panel --------------------------------------------------
function kv(obj) {
  const dl = document.createElement('dl');
  dl.className = 'kv';
  for (const [k, v] of Object.entries(obj)) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
      dd.append(kv(v));
    } else {
      const text = v instanceof Uint8Array ? Array.from(v, (b) => b.toString(16).padStart(2, '0')).join('') : String(v);
      dd.textContent = text;
      if (v === true || v === 'pass' || v === 'passed') dd.className = 'pass';
      else if (v === false || v === 'fail' || v === 'failed') dd.className = 'fail';
      if (/^[0-9a-f]{40,}$/.test(text)) dd.classList.add('mono');
    }
    dl.append(dt, dd);
  }
  return dl;
}
function showProbe(caps) {
  const lanes = Array.isArray(caps.lanes) ? caps.lanes.join(', ') : String(caps.lanes);
  $('caps-summary').replaceChildren(...kv({
    'SIMD128': caps.simd128 ? 'yes' : 'no',
    'threads': caps.threads ? 'yes' : `no${caps.crossOriginIsolated ? '' : ' (page not cross-origin isolated)'}`,
    'lanes available': lanes,
  }).childNodes);
}
function showCapabilities(receipt) {
  $('caps-receipt').replaceChildren(kv(receipt ?? {}));
  const pick = (...keys) => keys.map((k) => receipt?.[k]).find((v) => v !== undefined);
  const summary = {
    'lane': pick('lane') ?? '?',
    'why': pick('laneReason', 'reason', 'why') ?? '',
    'threads': pick('threads') ?? '',
  };
  const tests = pick('selfTests', 'selfTest');
  if (tests) summary['self-tests'] = tests;
  const fallbacks = pick('fallbacks', 'refused');
  if (fallbacks && (!Array.isArray(fallbacks) || fallbacks.length)) summary['fallbacks'] = fallbacks;
  $('caps-summary').replaceChildren(...kv(summary).childNodes);
  $('download-caps').disabled = !receipt;
}
function download(name, data, type) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([data], { type }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
const toJSON = (v) => JSON.stringify(v, (k, x) => (x instanceof Uint8Array ? Array.from(x, (b) => b.toString(16).padStart(2, '0')).join('') : x), 2);

// --- chat -----------------------------------------------------------------
function setBusy(busy) {
  state.busy = busy;
  const ready = !!state.model && !busy;
  $('load').disabled = busy;
  $('prompt').disabled = !state.model;
  $('send').disabled = !ready;
  $('stop').disabled = !(busy && state.abort);
  $('download-reply').disabled = !state.lastReply;
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
// A reply's reasoning (between <think> and </think>) apart from its answer.
function setText(div, text) {
  const [think, body] = [div.querySelector('.think'), div.querySelector('.body')];
  const m = /^\s*<think>([\s\S]*?)(<\/think>|$)\s*/.exec(text);
  think.hidden = !m || !m[1].trim();
  think.textContent = m ? m[1].trim() : '';
  body.textContent = m ? text.slice(m[0].length) : text;
  $('transcript').scrollTop = $('transcript').scrollHeight;
}
function number(id, { min = 0, integer = true } = {}) {
  const el = $(id);
  const v = Number(el.value);
  if (el.value.trim() === '' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v)))
    throw new PageError('invalid_argument', `${el.labels[0]?.textContent.trim() || id}: '${el.value}' is not ${integer ? 'an integer' : 'a number'} ≥ ${min}`);
  return v;
}

async function onSend(ev) {
  ev.preventDefault();
  if (!state.model || state.busy) return;
  showError(null);
  const text = $('prompt').value;
  if (!text.trim()) return;
  let settings;
  try {
    settings = {
      temperature: number('temperature', { integer: false }),
      topK: number('top-k'),
      seed: number('seed'),
      maxTokens: number('max-tokens', { min: 1 }),
      enableThinking: $('thinking').checked,
    };
  } catch (e) {
    return showError(e);
  }
  const messages = [...state.messages, { role: 'user', content: text }];
  bubble('user', text);
  $('prompt').value = '';
  const reply = bubble('assistant', '');
  reply.classList.add('streaming');
  let streamed = '';
  state.abort = new AbortController();
  setBusy(true);
  try {
    const out = await state.model.generate({
      messages,
      ...settings,
      signal: state.abort.signal,
      onToken: (t) => {
        streamed += typeof t === 'string' ? t : (t?.text ?? '');
        setText(reply, streamed);
      },
    });
    setText(reply, out.text);
    const t = out.timings || {};
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = `${out.ids.length} tokens · stop: ${out.stop} · receipt ${String(out.receiptId).slice(0, 16)}…`;
    reply.append(meta);
    $('speed').textContent = `Prefill ${fmt(t.prefillTokensPerS)} tokens/s · decode ${fmt(t.decodeTokensPerS)} tokens/s`;
    state.messages = [...messages, { role: 'assistant', content: out.text }];
    state.lastReply = {
      model: state.modelInfo,
      lane: state.model.capabilityReceipt?.lane,
      conversation: { messages, enable_thinking: settings.enableThinking },
      settings,
      ids: Array.from(out.ids),
      text: out.text,
      stop: out.stop,
      receiptId: out.receiptId,
      timings: t,
    };
  } catch (e) {
    // A stopped or failed turn is not part of the conversation.
    reply.remove();
    if (e?.code === 'cancelled') bubble('assistant', streamed).append(Object.assign(document.createElement('span'), { className: 'meta', textContent: 'stopped (not kept in the conversation)' }));
    else showError(e);
    $('prompt').value = text;
  } finally {
    reply.classList.remove('streaming');
    state.abort = null;
    setBusy(false);
  }
}
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(x < 100 ? 1 : 0) : '—');

function onStop() {
  state.abort?.abort();
}

// --- start-up ---------------------------------------------------------------
async function start() {
  $('model-form').addEventListener('submit', onLoad);
  $('chat-form').addEventListener('submit', onSend);
  $('stop').addEventListener('click', onStop);
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
    download('tinylm-capability-receipt.json', toJSON(state.model?.capabilityReceipt ?? {}), 'application/json');
  });
  $('download-reply').addEventListener('click', () => {
    if (state.lastReply) download(`tinylm-reply-${state.lastReply.receiptId}.json`, toJSON(state.lastReply), 'application/json');
  });
  try {
    state.caps = await probe();
    showProbe(state.caps);
  } catch (e) {
    showError(e);
  }
  await fillModelList();
  setBusy(false);
}
window.tinylmPage.ready = start();
