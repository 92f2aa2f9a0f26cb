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
// expecting {"text", "ids", "ownership"} on stdout and exit status 0: text
// bytes and ids must equal the oracle's (byte-compared cases). Where the
// oracle raised, tinylm must refuse: exit status 1 and an error object on
// stdout whose "kind" is the golden's error.tinylm_kind (docs/template.md
// section 7), and for raise_exception a "message" equal to the template's.
// Declared deviations (tinylm refuses on purpose, docs/template.md Input)
// must fail with exactly their declared error and are counted on their own.
// A case whose tinylm run exits otherwise (a crash, a leak report)
// fails. Conversations with a template_prefix run against an artifact that
// `TINYLM convert --tokenizer-only` makes here from the pinned tokenizer
// files with that prefix before the template. Prints each mismatch with the
// first differing byte offset and context, a summary per category and last
// `N passed, N failed, N declared deviations`. Exit status 1 on any failure.
//
// --self-test runs the oracle itself in tinylm's place
// (tools/oracle/tmpl_oracle_cli.mjs; needs /usr/bin/python3 with jinja2 and
// the npm tokenizer): it checks the checker (the declared deviations then
// fail: the oracle renders them).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, sha256, tokenizerFileHashes, firstDiff, showBytes, parseArgs } from '../../tools/oracle/tok_lib.mjs';
import { runCommand, pool, writePrefixedTokenizerDir } from '../../tools/oracle/tmpl_lib.mjs';

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
for (const [prefix, want] of Object.entries(header.template_prefixes || {})) {
  let have = null;
  try { have = sha256(readFileSync(join(ROOT, prefix))); } catch { /* missing */ }
  if (have !== want) {
    console.log(`FAIL ${prefix} changed since the goldens were made: run \`make template-goldens\``);
    preFail++;
  }
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
// Jinja raises too, but later (inside the template, another kind).
const MESSAGES_MISSING = {
  error: 'invalid_argument',
  detail: 'no "messages" member',
  why: 'the conversation needs a messages list (docs/template.md, TMPL-INPUT-1)',
};
const DECLARED_DEVIATIONS = {
  raise_user_content_list: ROLE_OR_CONTENT,
  raise_system_content_number_with_tools: ROLE_OR_CONTENT,
  raise_messages_missing: MESSAGES_MISSING,
  lenient_missing_role: ROLE_OR_CONTENT,
  lenient_tool_content_number: ROLE_OR_CONTENT,
  lenient_tool_content_null_bool: ROLE_OR_CONTENT,
  lenient_tool_content_object: ROLE_OR_CONTENT,
  lenient_int_beyond_64_bits: {
    error: 'invalid_argument',
    kind: null, // the JSON reader's refusal carries a line and column instead
    detail: 'integer out of int64 range',
    why: 'the JSON reader refuses integers outside int64 (docs/json.md)',
  },
};

const dir = mkdtempSync(join(tmpdir(), 'tinylm-tmpl-'));
const started = Date.now();
const todo = cases.filter((c) => !skip.has(c.category));
// The artifact of each template prefix (the oracle CLI takes the prefix file
// itself), or the reason it could not be made.
const prefixModels = {};
for (const [k, prefix] of [...new Set(todo.map((c) => c.template_prefix).filter(Boolean))].entries()) {
  if (opts.self_test) { prefixModels[prefix] = { slm: join(ROOT, prefix) }; continue; }
  const tokDir = join(dir, `prefix-${k}`);
  mkdirSync(tokDir);
  writePrefixedTokenizerDir(tokDir, prefix);
  const out = join(tokDir, 'model.slm');
  const res = await runCommand(tinylmCmd[0], [...tinylmCmd.slice(1), 'convert', '--tokenizer-only', tokDir, '-o', out],
    { timeoutMs: 120000 });
  prefixModels[prefix] = res.code === 0 && !res.signal ? { slm: out }
    : { failure: `tinylm convert --tokenizer-only with ${prefix} exited ${res.signal ?? res.code}: ${res.stderr.trim().slice(0, 300)}` };
}
// What each case came to: pass (byte-compared or refused like the oracle),
// deviation (refused as declared) or fail (with the problems).
const results = await pool(todo.map((c, k) => async () => {
  const file = join(dir, `${k}.json`);
  writeFileSync(file, c.conv_json);
  const model = c.template_prefix ? prefixModels[c.template_prefix] : { slm };
  if (model.failure) return { problems: [model.failure] };
  const res = await runCommand(tinylmCmd[0], [...tinylmCmd.slice(1), 'render', model.slm, '--messages', file, '--json'],
    { timeoutMs: 60000 });
  const problems = [];
  const outcome = (kind) => ({ kind, problems });
  if (res.signal || res.timedOut) {
    problems.push(`killed by ${res.signal}${res.timedOut ? ' (timeout)' : ''}`);
    return outcome('fail');
  }
  const deviation = DECLARED_DEVIATIONS[c.name];
  if (deviation) {
    const e = findError(res);
    const kind = deviation.kind === undefined ? 'input' : deviation.kind;
    if (res.code !== 1 || !e || e.error !== deviation.error || (kind !== null && e.kind !== kind) ||
        typeof e.detail !== 'string' || !e.detail.includes(deviation.detail)) {
      problems.push(`declared deviation (${deviation.why}): expected exit 1 and error ` +
        `${deviation.error}${kind ? ` kind ${kind}` : ''} mentioning ${JSON.stringify(deviation.detail)}, got exit ` +
        `${res.code} ${e ? JSON.stringify(e) : showBytes(res.stdout, 160)}`);
    }
    return outcome('deviation');
  }
  if (c.error) {
    const want = `oracle raised ${c.error.type}: ${c.error.message}`;
    if (res.code === 0) {
      problems.push(`${want}; tinylm rendered (exit 0): ${showBytes(res.stdout, 160)}`);
      return outcome('fail');
    }
    const e = findError(res);
    if (c.error.tinylm_kind === null) {
      problems.push(`${want}: no tinylm error kind corresponds (tools/oracle/tmpl_render.py tinylm_kind)`);
    } else if (res.code !== 1 || !e || e.kind !== c.error.tinylm_kind) {
      // The refusal must be the template's, of the same kind, and an
      // orderly exit (not a crash, a leak report or a missing file).
      problems.push(`${want}; expected exit 1 and an error of kind ${c.error.tinylm_kind}, got exit ${res.code} ` +
        `${e ? JSON.stringify(e) : res.stderr.toString().trim().slice(0, 300)}`);
    } else if (c.error.kind === 'raise_exception' && e.message !== c.error.message) {
      problems.push(`raise_exception message: expected ${JSON.stringify(c.error.message)}, got ${JSON.stringify(e.message)}`);
    }
    return outcome('error');
  }
  if (res.code !== 0) {
    const e = findError(res);
    problems.push(`exit ${res.code}: ${e ? JSON.stringify(e) : (res.stderr.trim().slice(0, 300) || '(no message)')}`);
    return outcome('fail');
  }
  let o;
  try { o = JSON.parse(res.stdout.toString('utf8')); } catch {
    problems.push(`stdout is not one JSON object: ${showBytes(res.stdout, 160)}`);
    return outcome('fail');
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
  return outcome('bytes');
}), opts.jobs);
rmSync(dir, { recursive: true, force: true });

let failed = 0;
let shown = 0;
const perCat = {};
const held = { bytes: 0, error: 0, raised: 0, deviation: 0 };
todo.forEach((c, k) => {
  const { kind, problems } = results[k];
  const pc = perCat[c.category] ||= { passed: 0, failed: 0, deviations: 0 };
  if (problems.length === 0) {
    held[kind]++;
    if (kind === 'error' && c.error.kind === 'raise_exception') held.raised++;
    if (kind === 'deviation') pc.deviations++; else pc.passed++;
    return;
  }
  failed++;
  pc.failed++;
  if (shown++ < opts.show) {
    console.log(`  FAIL ${c.category}/${c.name}`);
    for (const line of problems) console.log(`    ${line}`);
  }
});
if (shown > opts.show) console.log(`  (${shown - opts.show} more failures not shown; --show N)`);
for (const [cat, pc] of Object.entries(perCat)) {
  console.log(`  ${cat.padEnd(15)} ${pc.passed} passed, ${pc.failed} failed` +
    (pc.deviations ? `, ${pc.deviations} declared deviations` : ''));
}
if (skip.size) console.log(`note: skipped categories ${[...skip].join(', ')} (${cases.length - todo.length} cases)`);
console.log(`note: ${todo.length} conversations in ${((Date.now() - started) / 1000).toFixed(1)} s` +
  (opts.self_test ? ' (self-test: the oracle in tinylm\'s place)' : ''));
console.log(`note: ${held.bytes} byte-compared (text and ids), ${held.error} refused like the oracle ` +
  `(same kind; ${held.raised} raise_exception with the same message), ${held.deviation} declared deviations held`);
failed += preFail;
console.log(`${held.bytes + held.error} passed, ${failed} failed, ${held.deviation} declared deviations`);
process.exit(failed ? 1 : 0);
