#!/usr/bin/env node
// The chat-template oracle behind tinylm's `render` command line, for
// validating the checkers without tinylm:
//
//   node tools/oracle/tmpl_oracle_cli.mjs render MODEL --messages FILE [--json]
//
// MODEL is ignored (the oracle renders the pinned Qwen3 template) unless it
// names a .jinja file, which then goes before the template (a golden's
// template_prefix). Without --json prints the rendered bytes; with --json
// prints {"text", "ids", "ownership"}. When the template raises: exit status
// 1 and {"error": "template_raised", "detail": <message>, "type": <Python
// type>, "kind": <tinylm's kind for it>, "message": <message>}.
import { readFileSync } from 'node:fs';
import { ROOT } from './tok_lib.mjs';
import { loadOracle } from './tok_oracle.mjs';
import { renderWithOracle } from './tmpl_lib.mjs';

const argv = process.argv.slice(2);
const mi = argv.indexOf('--messages');
if (argv[0] !== 'render' || mi < 0 || mi + 1 >= argv.length) {
  console.error('usage: tmpl_oracle_cli.mjs render MODEL --messages FILE [--json]');
  process.exit(2);
}
const json = argv.includes('--json');
const convText = readFileSync(argv[mi + 1], 'utf8');
process.chdir(ROOT);
// One line for the --jsonl protocol: JSON whitespace outside strings only.
const oneLine = convText.replace(/\r?\n/g, ' ');
const prefix = argv[1] && argv[1].endsWith('.jinja') ? argv[1] : null;
const [r] = await renderWithOracle([oneLine], { prefix });
if (r.error) {
  const e = { error: 'template_raised', detail: r.error.message, type: r.error.type, kind: r.error.tinylm_kind,
    message: r.error.message };
  (json ? process.stdout : process.stderr).write(JSON.stringify(e) + '\n');
  process.exit(1);
}
const bytes = Buffer.from(r.text_hex, 'hex');
if (!json) { process.stdout.write(bytes); process.exit(0); }
const text = bytes.toString('utf8');
const oracle = await loadOracle();
const ids = Array.from((await oracle.tok.encode(text, null, { addSpecialTokens: false })).getIds());
// Qwen3: no BOS (bos_token null, no post-processor template), the template
// writes every role marker and EOS itself.
process.stdout.write(JSON.stringify({ text, ids, ownership: { bos: 'none', eos: 'template', generation_prefix: 'template' } }) + '\n');
