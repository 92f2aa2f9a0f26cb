// Shared helpers for the chat-template oracle scripts (tmpl_golden,
// tmpl_oracle_cli) and the golden checker (tests/tmpl/check_golden.mjs).
// Nothing here loads an oracle: the checker must run without one.
import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ROOT, TOKENIZER_DIR } from './tok_lib.mjs';

export const PYTHON = '/usr/bin/python3';
export const RENDER_PY = 'tools/oracle/tmpl_render.py';
export const CONVERSATIONS = 'tests/tmpl/conversations.jsonl';
export const GOLDEN = 'tests/tmpl/golden.jsonl';

// The exact JSON text of the value of top-level key `key` in the JSON object
// `line` (a JSONL line), or null. Conversations carry numbers such as 1.0,
// 1e-07 and 9007199254740993 whose spelling JSON.parse would lose, so the
// text handed to tinylm and to the oracle is this slice, never a
// re-serialisation.
export function rawMember(line, key) {
  let i = 0;
  const n = line.length;
  const ws = () => { while (i < n && ' \t\r\n'.includes(line[i])) i++; };
  const skipString = () => { // at '"'
    i++;
    while (i < n && line[i] !== '"') i += line[i] === '\\' ? 2 : 1;
    if (i >= n) throw new Error('unterminated string');
    i++;
  };
  const skipValue = () => {
    ws();
    if (line[i] === '"') { skipString(); return; }
    if (line[i] === '{' || line[i] === '[') {
      let depth = 0;
      while (i < n) {
        const c = line[i];
        if (c === '"') { skipString(); continue; }
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') { depth--; if (depth === 0) { i++; return; } }
        i++;
      }
      throw new Error('unterminated value');
    }
    while (i < n && !',}] \t\r\n'.includes(line[i])) i++;
  };
  ws();
  if (line[i] !== '{') throw new Error('not an object');
  i++;
  for (;;) {
    ws();
    if (line[i] === '}') return null;
    const ks = i;
    skipString();
    const k = JSON.parse(line.slice(ks, i));
    ws();
    if (line[i] !== ':') throw new Error('expected :');
    i++;
    ws();
    const vs = i;
    skipValue();
    if (k === key) {
      const raw = line.slice(vs, i);
      JSON.parse(raw); // must be a complete value
      return raw;
    }
    ws();
    if (line[i] === ',') { i++; continue; }
    if (line[i] === '}') return null;
    throw new Error(`unexpected ${line[i]} at ${i}`);
  }
}

// Runs a command with stdin text; resolves {code, signal, stdout (Buffer), stderr}.
export function runCommand(cmd, args, { input = null, timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => { if (err.length < 65536) err += d; });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.stdin.on('error', () => {});
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout: Buffer.concat(out), stderr: err });
    });
    if (input !== null) child.stdin.end(input); else child.stdin.end();
  });
}

// The oracle over many conversations: one tmpl_render.py --jsonl process.
// Returns one {text_hex} | {error: {type, message, kind, tinylm_kind}} per
// conversation. prefix: a file whose text goes before the pinned template.
export async function renderWithOracle(rawConvs, { python = PYTHON, prefix = null } = {}) {
  for (const r of rawConvs) if (r.includes('\n')) throw new Error('conversation JSON must be one line');
  const args = [RENDER_PY, '--jsonl', ...(prefix ? ['--template-prefix', prefix] : [])];
  const r = await runCommand(python, args, { input: rawConvs.join('\n') + '\n', timeoutMs: 300000 });
  if (r.code !== 0) throw new Error(`tmpl_render.py failed (${r.code}): ${r.stderr}`);
  const lines = r.stdout.toString('utf8').split('\n').filter((l) => l !== '');
  if (lines.length !== rawConvs.length) throw new Error(`tmpl_render.py answered ${lines.length} of ${rawConvs.length}`);
  return lines.map((l) => JSON.parse(l));
}

// Writes into dir (which exists) a tokenizer directory for `tinylm convert
// --tokenizer-only`: the pinned tokenizer.json and a tokenizer_config.json
// whose chat_template is the prefix file's text followed by the pinned
// template (what renderWithOracle's prefix option renders).
export function writePrefixedTokenizerDir(dir, prefix) {
  const config = JSON.parse(readFileSync(join(ROOT, TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'));
  config.chat_template = readFileSync(resolve(ROOT, prefix), 'utf8') + config.chat_template;
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  symlinkSync(join(ROOT, TOKENIZER_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
}

export async function oracleRenderVersions({ python = PYTHON } = {}) {
  const r = await runCommand(python, [RENDER_PY, '--versions']);
  if (r.code !== 0) throw new Error(`tmpl_render.py --versions failed: ${r.stderr}`);
  return JSON.parse(r.stdout.toString('utf8'));
}

// Runs tasks (async functions) with at most `jobs` in flight; results in order.
export async function pool(tasks, jobs) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) { const k = next++; results[k] = await tasks[k](); }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, tasks.length)) }, worker));
  return results;
}
