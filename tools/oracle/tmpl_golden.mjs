#!/usr/bin/env node
// Writes tests/tmpl/golden.jsonl from tests/tmpl/conversations.jsonl
// (issue 4, item 4): renders every conversation with the chat-template
// oracle (tools/oracle/tmpl_render.py: Python Jinja2 configured as
// transformers configures it, on the real Qwen3 template) and tokenizes the
// rendered text with the tokenizer oracle (tools/oracle/tok_oracle.mjs).
// Deterministic: the same inputs and oracle versions give the same bytes.
//
//   node tools/oracle/tmpl_golden.mjs [--check]   (make template-goldens)
//
// --check regenerates in memory and fails if the committed file differs
// (the tmpl-goldens-current stage of make test).
//
// Line 1 is a header (oracle versions, input hashes, how to regenerate);
// then one line per conversation:
//   {"name", "category", "conv_json": <the conversation's exact JSON text>,
//    ["template_prefix": FILE,] "text_hex": <rendered UTF-8 bytes>,
//    "ids": [...]}                                                   or
//   {"name", "category", "conv_json", ["template_prefix",]
//    "error": {"type", "message", "kind", "tinylm_kind"}}
// template_prefix: the conversation was rendered with FILE's text before
// the pinned template (tools/oracle/tmpl_conversations.py).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, sha256, tokenizerFileHashes, parseArgs } from './tok_lib.mjs';
import { loadOracle, oracleVersions } from './tok_oracle.mjs';
import { CONVERSATIONS, GOLDEN, rawMember, renderWithOracle, oracleRenderVersions } from './tmpl_lib.mjs';

const opts = parseArgs(process.argv.slice(2), { check: false });
process.chdir(ROOT);
const convBytes = readFileSync(CONVERSATIONS);
const lines = convBytes.toString('utf8').split('\n').filter((l) => l !== '');
const cases = lines.map((line, k) => {
  const o = JSON.parse(line);
  if (typeof o.name !== 'string' || typeof o.category !== 'string') throw new Error(`line ${k + 1}: name/category`);
  if (o.template_prefix !== undefined && typeof o.template_prefix !== 'string') throw new Error(`line ${k + 1}: template_prefix`);
  return { name: o.name, category: o.category, conv_json: rawMember(line, 'conv'), prefix: o.template_prefix ?? null };
});
const seen = new Set();
for (const c of cases) { if (seen.has(c.name)) throw new Error(`duplicate name ${c.name}`); seen.add(c.name); }

// One oracle run per template (the pinned one, and each prefixed one).
const rendered = new Array(cases.length);
const prefixes = {};
for (const prefix of new Set(cases.map((c) => c.prefix))) {
  const idx = cases.flatMap((c, k) => (c.prefix === prefix ? [k] : []));
  const res = await renderWithOracle(idx.map((k) => cases[k].conv_json), { prefix });
  idx.forEach((k, j) => { rendered[k] = res[j]; });
  if (prefix !== null) prefixes[prefix] = sha256(readFileSync(join(ROOT, prefix)));
}
const oracle = await loadOracle();
const perCategory = {};
const raising = [];
const out = [];
for (let k = 0; k < cases.length; k++) {
  const c = cases[k];
  const r = rendered[k];
  perCategory[c.category] = (perCategory[c.category] || 0) + 1;
  const rec = { name: c.name, category: c.category, conv_json: c.conv_json };
  if (c.prefix !== null) rec.template_prefix = c.prefix;
  if (r.error) {
    rec.error = r.error;
    raising.push(c.name);
  } else {
    const text = Buffer.from(r.text_hex, 'hex').toString('utf8');
    if (Buffer.from(text, 'utf8').toString('hex') !== r.text_hex) throw new Error(`${c.name}: rendered text is not UTF-8`);
    // apply_chat_template(tokenize=True) tokenizes with add_special_tokens=False.
    const ids = Array.from((await oracle.tok.encode(text, null, { addSpecialTokens: false })).getIds());
    const idsSpecial = Array.from((await oracle.tok.encode(text, null, { addSpecialTokens: true })).getIds());
    if (ids.join(',') !== idsSpecial.join(',')) throw new Error(`${c.name}: ids differ with add_special_tokens`);
    rec.text_hex = r.text_hex;
    rec.ids = ids;
  }
  out.push(JSON.stringify(rec));
}

const rv = await oracleRenderVersions();
const header = {
  tinylm_template_goldens: 1,
  generator: 'tools/oracle/tmpl_golden.mjs',
  regenerate: 'make template-goldens',
  check: 'node tests/tmpl/check_golden.mjs build/gcc/tinylm MODEL.slm',
  oracle: {
    renderer: 'tools/oracle/tmpl_render.py: jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, ' +
      'lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]), transformers tojson / ' +
      'raise_exception / strftime_now, variables messages, tools, documents, add_generation_prompt, ' +
      '**{**special_tokens_map, **kwargs} (transformers chat_template_utils.py _compile_jinja_template, ' +
      'render_jinja_template; tokenization_utils_base.py apply_chat_template)',
    python: rv.python,
    python_executable: rv.python_executable,
    jinja2: rv.jinja2,
    tokenizer: oracleVersions(),
  },
  template: {
    source: `${rv.tokenizer_config} key chat_template`,
    sha256: rv.template_sha256,
  },
  template_prefixes: prefixes,
  tokenizer_files: tokenizerFileHashes(),
  conversations: {
    path: CONVERSATIONS,
    sha256: sha256(convBytes),
    cases: cases.length,
    per_category: perCategory,
    raising: raising.length,
  },
  ids: 'encode(rendered text, add_special_tokens=false), as apply_chat_template(tokenize=True); ' +
    'identical with add_special_tokens=true for this tokenizer',
  error_kinds: {
    raise_exception: 'the template called raise_exception(message): tinylm must refuse with kind raised and the same message',
    template: 'another Jinja error (undefined attribute/item access): tinylm must refuse with error.tinylm_kind',
    python: 'a Python error inside rendering (TypeError ...): tinylm must refuse with error.tinylm_kind',
    input: 'apply_chat_template refused the arguments: tinylm must refuse with error.tinylm_kind',
    tinylm_kind: 'the tinylm error kind of the same refusal (docs/template.md section 7; ' +
      'tools/oracle/tmpl_render.py tinylm_kind)',
  },
};
const text = [JSON.stringify(header), ...out].join('\n') + '\n';
if (opts.check) {
  let old = '';
  try { old = readFileSync(join(ROOT, GOLDEN), 'utf8'); } catch { /* missing */ }
  if (old !== text) {
    console.log(`FAIL ${GOLDEN} is not what the oracle gives now: run make template-goldens`);
    process.exit(1);
  }
  console.log(`tmpl_golden: ${GOLDEN} is up to date (${cases.length} conversations, ${raising.length} raise)`);
} else {
  writeFileSync(join(ROOT, GOLDEN), text);
  console.log(`${GOLDEN}: ${cases.length} conversations (${raising.length} raise), jinja2 ${rv.jinja2}, python ${rv.python}`);
}
