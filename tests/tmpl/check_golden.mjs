#!/usr/bin/env node
// Compares tinylm's chat-template renderer with the committed goldens
// (tests/tmpl/golden.jsonl, written by tools/oracle/tmpl_golden.mjs). Needs
// no oracle: only the goldens, tinylm and the pinned tokenizer files.
//
//   node tests/tmpl/check_golden.mjs TINYLM MODEL.slm [--golden FILE]
//        [--jobs N] [--show N] [--skip-category a,b] [--self-test]
//
// For every golden conversation it writes the conversation's exact JSON text
// to a temporary file and runs
//   TINYLM render MODEL.slm --messages FILE --json
// expecting {"text", "ids", "ownership"} on stdout and exit status 0, or,
// where the oracle raised, a non-zero exit status with an error object
// {"error": ..., "detail": ...} on stdout or stderr. Text bytes and ids must be
// identical; for a raise_exception error the detail must contain the
// template's message (other oracle errors -- undefined access, Python type
// errors -- accept any tinylm error). Prints each mismatch with the first
// differing byte offset and context, a summary per category and last the
// line `N passed, N failed`. Exit status 1 on any failure.
//
// --self-test runs the oracle itself in tinylm's place
// (tools/oracle/tmpl_oracle_cli.mjs; needs /usr/bin/python3 with jinja2 and
// the npm tokenizer): it checks the checker and that the goldens are current.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, sha256, tokenizerFileHashes, firstDiff, showBytes, parseArgs } from '../../tools/oracle/tok_lib.mjs';
import { runCommand, pool } from '../../tools/oracle/tmpl_lib.mjs';

const opts = parseArgs(process.argv.slice(2), {
  golden: 'tests/tmpl/golden.jsonl', jobs: 8, show: 50, skip_category: '', self_test: false,
});
let tinylmCmd;
let slm;
if (opts.self_test) {
  tinylmCmd = [process.execPath, join(ROOT, 'tools/oracle/tmpl_oracle_cli.mjs')];
  slm = opts._[1] || '(oracle)';
} else {
  if (opts._.length !== 2) {
    console.error('usage: node tests/tmpl/check_golden.mjs TINYLM MODEL.slm [--golden FILE] [--jobs N] ' +
      '[--show N] [--skip-category a,b] | --self-test');
    process.exit(2);
  }
  tinylmCmd = [opts._[0]];
  slm = opts._[1];
}
const skip = new Set(opts.skip_category.split(',').filter(Boolean));

const goldenLines = readFileSync(join(ROOT, opts.golden), 'utf8').split('\n').filter((l) => l !== '');
const header = JSON.parse(goldenLines[0]);
if (header.tinylm_template_goldens !== 1) {
  console.error(`${opts.golden}: not a chat-template golden file`);
  process.exit(2);
}
const cases = goldenLines.slice(1).map((l) => JSON.parse(l));

// Preconditions: the goldens belong to the committed conversations and to
// the tokenizer files (the template and the special tokens come from
// tokenizer_config.json; the ids from tokenizer.json).
let preFail = 0;
const now = tokenizerFileHashes();
for (const [f, rec] of Object.entries(header.tokenizer_files)) {
  const have = now[f] ? now[f].sha256 : null;
  if (have !== rec.sha256) {
    console.log(`FAIL ${rec.path}: sha256 ${have ?? '(missing)'}, goldens made with ${rec.sha256} (run make setup)`);
    preFail++;
  }
}
try {
  const s = sha256(readFileSync(join(ROOT, header.conversations.path)));
  if (s !== header.conversations.sha256) {
    console.log(`FAIL ${header.conversations.path} changed since the goldens were made: run \`make template-goldens\``);
    preFail++;
  }
} catch (e) {
  console.log(`FAIL ${header.conversations.path}: ${e.message}`);
  preFail++;
}

function contextAt(buf, off) {
  const s = Math.max(0, off - 24);
  return showBytes(buf.subarray(s, off + 40), 200);
}

// The error object tinylm printed, from stdout or stderr (last JSON line).
function findError(res) {
  for (const stream of [res.stdout.toString('utf8'), res.stderr]) {
    const lines = stream.split('\n').filter((l) => l.trim() !== '');
    for (let k = lines.length - 1; k >= 0; k--) {
      try {
        const o = JSON.parse(lines[k]);
        if (o && typeof o === 'object' && 'error' in o) return o;
      } catch { /* not JSON */ }
    }
  }
  return null;
}

// Where tinylm refuses on purpose what Jinja renders. Each is documented
// (docs/json.md) and must fail with exactly this error, never render.
const ROLE_OR_CONTENT = {
  error: 'invalid_argument',
  detail: 'messages[',
  why: 'messages need a string role and string-or-null content (docs/template.md, Input)',
};
const DECLARED_DEVIATIONS = {
  lenient_missing_role: ROLE_OR_CONTENT,
  lenient_tool_content_number: ROLE_OR_CONTENT,
  lenient_tool_content_null_bool: ROLE_OR_CONTENT,
  lenient_tool_content_object: ROLE_OR_CONTENT,
  lenient_int_beyond_64_bits: {
    error: 'invalid_argument',
    detail: 'integer out of int64 range',
    why: 'the JSON reader refuses integers outside int64 (docs/json.md)',
  },
};

const dir = mkdtempSync(join(tmpdir(), 'tinylm-tmpl-'));
const started = Date.now();
const todo = cases.filter((c) => !skip.has(c.category));
const results = await pool(todo.map((c, k) => async () => {
  const file = join(dir, `${k}.json`);
  writeFileSync(file, c.conv_json);
  const res = await runCommand(tinylmCmd[0], [...tinylmCmd.slice(1), 'render', slm, '--messages', file, '--json'],
    { timeoutMs: 60000 });
  const problems = [];
  if (res.signal || res.timedOut) {
    problems.push(`killed by ${res.signal}${res.timedOut ? ' (timeout)' : ''}`);
    return problems;
  }
  const deviation = DECLARED_DEVIATIONS[c.name];
  if (deviation) {
    const e = findError(res);
    if (res.code === 0 || !e || e.error !== deviation.error ||
        typeof e.detail !== 'string' || !e.detail.includes(deviation.detail)) {
      problems.push(`declared deviation (${deviation.why}): expected error ` +
        `${deviation.error} mentioning ${JSON.stringify(deviation.detail)}, got exit ${res.code} ` +
        `${e ? JSON.stringify(e) : showBytes(res.stdout, 160)}`);
    }
    return problems;
  }
  if (c.error) {
    if (res.code === 0) {
      problems.push(`oracle raised ${c.error.type}: ${c.error.message}; tinylm rendered (exit 0): ` +
        showBytes(res.stdout, 160));
      return problems;
    }
    const e = findError(res);
    // The refusal must come from the template (an error with a template
    // error kind), not from, say, a missing file.
    if (!e || typeof e.kind !== 'string') {
      problems.push(`oracle raised ${c.error.type}: ${c.error.message}; tinylm failed without a ` +
        `template error: ${e ? JSON.stringify(e) : res.stderr.toString().trim().slice(0, 300)}`);
      return problems;
    }
    if (c.error.kind === 'raise_exception') {
      const detail = e && typeof e.detail === 'string' ? e.detail : null;
      if (detail !== null && !detail.includes(c.error.message)) {
        problems.push(`raise_exception message: expected ${JSON.stringify(c.error.message)}, got ${JSON.stringify(detail)}`);
      }
    }
    return problems;
  }
  if (res.code !== 0) {
    const e = findError(res);
    problems.push(`exit ${res.code}: ${e ? JSON.stringify(e) : (res.stderr.trim().slice(0, 300) || '(no message)')}`);
    return problems;
  }
  let o;
  try { o = JSON.parse(res.stdout.toString('utf8')); } catch {
    problems.push(`stdout is not one JSON object: ${showBytes(res.stdout, 160)}`);
    return problems;
  }
  const want = Buffer.from(c.text_hex, 'hex');
  if (typeof o.text !== 'string') {
    problems.push('no "text" string in the output');
  } else {
    const got = Buffer.from(o.text, 'utf8');
    const d = firstDiff(want, got);
    if (d >= 0) {
      problems.push(`text differs at byte ${d} (expected ${want.length} bytes, got ${got.length})\n` +
        `      expected …${contextAt(want, d)}\n      got      …${contextAt(got, d)}`);
    }
  }
  if (!Array.isArray(o.ids)) {
    problems.push('no "ids" array in the output');
  } else {
    const d = firstDiff(c.ids, o.ids);
    if (d >= 0) {
      problems.push(`ids differ at index ${d} (expected ${c.ids.length}, got ${o.ids.length}): expected ` +
        `[${c.ids.slice(Math.max(0, d - 2), d + 4).join(',')}] got [${o.ids.slice(Math.max(0, d - 2), d + 4).join(',')}]`);
    }
  }
  if (o.ownership === undefined || o.ownership === null || typeof o.ownership !== 'object') {
    problems.push('no "ownership" object in the output');
  }
  return problems;
}), opts.jobs);
rmSync(dir, { recursive: true, force: true });

let passed = 0;
let failed = 0;
let shown = 0;
const perCat = {};
todo.forEach((c, k) => {
  const p = results[k];
  const pc = perCat[c.category] ||= { passed: 0, failed: 0 };
  if (p.length === 0) { passed++; pc.passed++; return; }
  failed++;
  pc.failed++;
  if (shown++ < opts.show) {
    console.log(`  FAIL ${c.category}/${c.name}`);
    for (const line of p) console.log(`    ${line}`);
  }
});
if (shown > opts.show) console.log(`  (${shown - opts.show} more failures not shown; --show N)`);
for (const [cat, pc] of Object.entries(perCat)) {
  console.log(`  ${cat.padEnd(14)} ${pc.passed} passed, ${pc.failed} failed`);
}
if (skip.size) console.log(`note: skipped categories ${[...skip].join(', ')} (${cases.length - todo.length} cases)`);
console.log(`note: ${todo.length} conversations in ${((Date.now() - started) / 1000).toFixed(1)} s` +
  (opts.self_test ? ' (self-test: the oracle in tinylm\'s place)' : ''));
failed += preFail;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
