#!/usr/bin/env node
// Token ids from the tokenizer oracle (Hugging Face `tokenizers` through
// @anush008/tokenizers) for texts read as JSON lines, as transformers
// tokenizes a rendered chat template or a prompt: encode(text,
// add_special_tokens=False).
//
//   node tools/oracle/tok_ids.mjs [--tokenizer FILE] < LINES
//
// Each input line is {"text": ...}; each output line is {"ids": [...]}.
// FILE: a tokenizer.json (default: the pinned Qwen3 one, whose SHA-256 is
// checked).
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { join, resolve } from 'node:path';
import { ROOT, TOKENIZER_DIR, parseArgs } from './tok_lib.mjs';
import { checkTokenizerFiles } from './tok_oracle.mjs';

const opts = parseArgs(process.argv.slice(2), { tokenizer: '' });
if (!opts.tokenizer) checkTokenizerFiles();
const file = opts.tokenizer ? resolve(opts.tokenizer) : join(ROOT, TOKENIZER_DIR, 'tokenizer.json');
const tk = createRequire(join(ROOT, 'package.json'))('@anush008/tokenizers');
const tok = tk.Tokenizer.fromFile(file);
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line === '') continue;
  const { text } = JSON.parse(line);
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  process.stdout.write(JSON.stringify({ ids: Array.from(enc.getIds()) }) + '\n');
}
