// The load generator of bench/serve.sh: C concurrent streaming clients
// against an OpenAI-compatible server (tinylm serve or llama-server), one
// /v1/completions request each, with EOS banned so every reply is exactly
// max_tokens long. Prints one JSON line:
//   {"clients", "tokens", "ttft_ms": {p50, p95, all}, "decode_tps",
//    "per_stream_tps", "wall_s", "errors" (failed requests, replies of
//    another length), "chunks" (content chunks per reply)}
// decode_tps (aggregate): the tokens after each client's first, over the
// time from the earliest first token to the last reply's end.
//   node bench/serve_client.mjs URL CLIENTS MAX_TOKENS PROMPT_WORDS ROUND EOS_IDS
import { request } from 'node:http';

const [url, clientsArg, maxArg, wordsArg, round, eosArg] = process.argv.slice(2);
if (!url || !clientsArg || !maxArg || !wordsArg || round === undefined || !eosArg) {
  console.error('usage: serve_client.mjs URL CLIENTS MAX_TOKENS PROMPT_WORDS ROUND EOS_IDS');
  process.exit(2);
}
const clients = Number(clientsArg);
const maxTokens = Number(maxArg);
const words = Number(wordsArg);
const logitBias = Object.fromEntries(eosArg.split(',').map((id) => [id, -100]));
const WORDS = 'the quick brown fox jumps over a lazy dog while seven small birds sing about rivers and stones'.split(' ');
// A fixed prompt per (round, client): distinct from the first token on, so
// no client reuses another's (or an earlier round's) prefix.
const prompt = (k) => `Round ${round}, client ${k}: ` +
  Array.from({ length: words }, (_, i) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ');
const u = new URL(url);

function one(k) {
  return new Promise((resolve) => {
    const body = Buffer.from(JSON.stringify({ model: 'bench', prompt: prompt(k), max_tokens: maxTokens, temperature: 0,
      stream: true, logit_bias: logitBias }));
    const t0 = performance.now();
    let first = null;
    let last = null;
    let chunks = 0;
    let usage = null;
    let pending = '';
    const req = request({ host: u.hostname, port: u.port, path: '/v1/completions', method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve({ error: `HTTP ${res.statusCode}` });
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => {
        pending += d;
        let at;
        while ((at = pending.indexOf('\n\n')) >= 0) {
          const ev = pending.slice(0, at);
          pending = pending.slice(at + 2);
          if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
          const j = JSON.parse(ev.slice(6));
          if (j.usage) usage = j.usage;
          if (j.choices?.[0]?.text) {
            const now = performance.now();
            first ??= now;
            last = now;
            chunks++;
          }
        }
      });
      res.on('end', () => resolve({ t0, first, last, end: performance.now(), chunks,
        tokens: usage?.completion_tokens ?? maxTokens }));
    });
    req.on('error', (e) => resolve({ error: String(e) }));
    req.end(body);
  });
}

const start = performance.now();
const rs = await Promise.all(Array.from({ length: clients }, (_, k) => one(k)));
const ok = rs.filter((r) => !r.error && r.first !== null);
const ttft = ok.map((r) => r.first - r.t0).sort((a, b) => a - b);
const pct = (p) => (ttft.length ? ttft[Math.min(ttft.length - 1, Math.ceil((p / 100) * ttft.length) - 1)] : null);
const span = ok.length ? (Math.max(...ok.map((r) => r.end)) - Math.min(...ok.map((r) => r.first))) / 1000 : 0;
const decoded = ok.reduce((s, r) => s + r.tokens - 1, 0);
console.log(JSON.stringify({
  clients,
  tokens: ok.reduce((s, r) => s + r.tokens, 0),
  ttft_ms: { p50: pct(50), p95: pct(95), all: ttft.map((x) => Math.round(x)) },
  decode_tps: span > 0 ? decoded / span : null,
  per_stream_tps: ok.map((r) => (r.tokens - 1) / ((r.end - r.first) / 1000)),
  wall_s: (performance.now() - start) / 1000,
  errors: [...rs.filter((r) => r.error).map((r) => r.error),
    ...ok.filter((r) => r.tokens !== maxTokens).map((r) => `${r.tokens} tokens, not ${maxTokens}`)],
  chunks: ok.map((r) => r.chunks),
}));
