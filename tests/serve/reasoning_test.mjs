// Qwen3's think block apart from the answer in `tinylm serve` (docs/server.md,
// Reasoning), driven by the official openai npm client on the demo model
// (docs/demo-model.md: the real Qwen3 tokenizer and template; with thinking
// on it answers "<think>\n\n</think>\n\n12 + 30 = 42.", and with token 271
// ("\n\n") banned it never closes its block):
//   node tests/serve/reasoning_test.mjs TINYLM WORKDIR
//
// The oracle is the raw text: reasoning_format "none" gives the reply's
// bytes as the model made them (the same receipt id, so the same ids), and
// every split must put them back together: "<think>" + newlines +
// reasoning_content + newlines + "</think>" + newlines + content. The
// completions endpoint on the template's prompt gives the same raw text.
// Streamed, the deltas joined equal the non-streamed fields, every
// reasoning delta comes before the first content delta and no delta holds
// any part of a tag. Thinking on and off through chat_template_kwargs and
// reasoning_effort (the prompts, and so the receipt ids, agree); a block
// cut short by max_tokens is all reasoning; tool calls are still read (after
// the block, never inside it); the refusals name their field. `tinylm run`
// (--json, a pipe, --hide-thinking, a terminal) and `chat` agree with serve.
//
// Planted defects it catches (each run by hand against this suite):
//   the split only for constrained replies (the old behaviour)   7 checks fail
//   reasoning_effort read but not applied                         2 checks fail
//   run's think block printed raw on a terminal                   1 check fails
// (the splitter's own defects: src/core/gen/think_test.c and
// src/native/serve_http_test.c.)
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import OpenAI from 'openai';
import { check, demoModel, post, runSuite, short, startServer, stopServer, suiteArgs } from '../support/serve_harness.mjs';

const { TINYLM, WORK } = suiteArgs('reasoning_test.mjs');

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let server = null; // the suite's one server

const MSG = (text) => [{ role: 'user', content: text }];
// seed 0: greedy, but receipt ids are compared and a seedless request draws a fresh seed
const SUM = { messages: MSG('What is 12 + 30?'), max_tokens: 40, temperature: 0, seed: 0 };
// Token 271 ("\n\n") banned: the block never closes, max_tokens cuts it.
const UNCLOSED = { messages: MSG('What is 12 + 30?'), max_tokens: 12, temperature: 1, seed: 1, logit_bias: { 271: -100 } };
const receipt = (r) => r.tinylm?.choices?.[0]?.receipt_id;

// Whether a message is the raw text apart: "<think>", newlines, the
// reasoning, newlines, "</think>", newlines, the content; a block never
// closed is all reasoning (content ""); without reasoning_content the
// content is the raw text itself.
function isSplitOf(m, raw) {
  const content = m.content ?? '';
  if (typeof m.reasoning_content !== 'string') return content === raw;
  const r = escape(m.reasoning_content);
  return new RegExp(`^<think>\\n*${r}\\n*</think>\\n*${escape(content)}$`).test(raw) ||
    (content === '' && new RegExp(`^<think>\\n*${r}\\n*$`).test(raw));
}

// A stream through the client: the reasoning and content deltas joined, and
// whether every reasoning delta came before the first content one and no
// delta held any part of a tag.
async function streamed(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const out = { content: '', reasoning: '', calls: [], finish: null, ordered: true, tagless: true, deltas: [] };
  let contentSeen = false;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    const d = c.delta ?? {};
    if (d.reasoning_content) {
      out.ordered &&= !contentSeen;
      out.reasoning += d.reasoning_content;
      out.deltas.push(['r', d.reasoning_content]);
    }
    if (d.content) {
      contentSeen = true;
      out.content += d.content;
      out.deltas.push(['c', d.content]);
    }
    for (const t of d.tool_calls ?? []) out.calls.push(t);
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  // The demo model's replies here hold no "<" or ">" of their own.
  if (body.reasoning_format !== 'none') out.tagless = out.deltas.every(([, t]) => !/[<>]/.test(t));
  return out;
}

async function split(client) {
  const raw = await client.chat.completions.create({ ...SUM, reasoning_format: 'none' });
  const rawText = raw.choices[0].message.content;
  check('reasoning_format none: the raw text, think block and all, in content (no reasoning_content)',
    /^<think>/.test(rawText) && /<\/think>/.test(rawText) && raw.choices[0].message.reasoning_content === undefined, short(raw.choices[0].message));
  for (const format of [undefined, 'deepseek', 'auto']) {
    const what = format ? `reasoning_format ${format}` : 'no reasoning_format';
    const r = await client.chat.completions.create({ ...SUM, ...(format ? { reasoning_format: format } : {}) });
    const m = r.choices[0].message;
    check(`${what}: the think block is reasoning_content (a string), content the answer without any tag`,
      typeof m.reasoning_content === 'string' && !/<\/?think>/.test(m.content) && m.content.length > 0, short(m));
    check(`${what}: reasoning and content put back together are the raw text`, isSplitOf(m, rawText), `${short(m)} vs ${short(rawText)}`);
    check(`${what}: the same receipt id as reasoning_format none (the receipt records the raw reply)`,
      receipt(r) && receipt(r) === receipt(raw), `${receipt(r)} vs ${receipt(raw)}`);
  }
  // The completions endpoint: raw text, no split (the template's prompt as given).
  const at = (await post(server, '/apply-template', { messages: SUM.messages })).json;
  const comp = await client.completions.create({ model: 'demo', prompt: at.prompt, max_tokens: 40, temperature: 0 });
  check('completions on the same prompt: the raw text, <think> included, = chat with reasoning_format none',
    comp.choices[0].text === rawText, `${short(comp.choices[0].text)} vs ${short(rawText)}`);
}

async function streaming(client) {
  for (const [what, body] of [['thinking on', SUM], ['a block cut short', UNCLOSED], ['thinking off', { ...SUM, reasoning_effort: 'none' }]]) {
    for (const format of ['auto', 'none']) {
      const req = { ...body, reasoning_format: format };
      const full = (await client.chat.completions.create(req)).choices[0];
      const s = await streamed(client, req);
      check(`${what}, reasoning_format ${format}, streamed: the reasoning deltas joined = reasoning_content, the content deltas = content`,
        s.reasoning === (full.message.reasoning_content ?? '') && s.content === (full.message.content ?? '') && s.finish === full.finish_reason,
        `${short(s)} vs ${short(full)}`);
      if (format === 'auto') {
        check(`${what}, streamed: every reasoning delta before the first content delta, no delta with a part of a tag`,
          s.ordered && s.tagless, short(s.deltas));
      }
    }
  }
  const cut = await client.chat.completions.create(UNCLOSED);
  const cutRaw = await client.chat.completions.create({ ...UNCLOSED, reasoning_format: 'none' });
  const m = cut.choices[0].message;
  check('a block never closed (max_tokens): all of it reasoning_content, content "", finish_reason length',
    cut.choices[0].finish_reason === 'length' && m.content === '' && m.reasoning_content.length > 0 &&
    isSplitOf(m, cutRaw.choices[0].message.content), `${short(m)} vs ${short(cutRaw.choices[0].message)}`);
}

async function thinkingSwitch(client) {
  const get = (extra) => client.chat.completions.create({ ...SUM, ...extra });
  const off = await get({ chat_template_kwargs: { enable_thinking: false } });
  const on = await get({ chat_template_kwargs: { enable_thinking: true } });
  const dflt = await get({});
  check('thinking off (chat_template_kwargs): no reasoning_content, content the answer without tags',
    off.choices[0].message.reasoning_content === undefined && !/think>/.test(off.choices[0].message.content), short(off.choices[0].message));
  check('thinking on and the default: a reasoning_content string (the template thinks by default)',
    typeof on.choices[0].message.reasoning_content === 'string' && receipt(on) === receipt(dflt), short(on.choices[0].message));
  for (const effort of ['none', 'minimal', 'low', 'medium', 'high']) {
    const r = await get({ reasoning_effort: effort });
    const want = effort === 'none' || effort === 'minimal' ? off : on;
    check(`reasoning_effort ${effort}: thinking ${want === off ? 'off' : 'on'}, the same reply and receipt id as enable_thinking ${want === on}`,
      receipt(r) === receipt(want) && r.choices[0].message.content === want.choices[0].message.content &&
      r.choices[0].message.reasoning_content === want.choices[0].message.reasoning_content, `${receipt(r)} vs ${receipt(want)}`);
  }
}

async function tools(client) {
  // A tool without parameters: its arguments are {} (the demo model's free
  // text would pad a richer object with whitespace past any small max_tokens).
  const TOOLS = [{ type: 'function', function: { name: 'now', description: 'The time' } }];
  const body = { messages: MSG('What time is it?'), tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 120, temperature: 1, seed: 1 };
  for (const format of ['auto', 'none']) {
    const r = await client.chat.completions.create({ ...body, reasoning_format: format });
    const m = r.choices[0].message;
    const call = m.tool_calls?.[0];
    let args = null;
    try { args = JSON.parse(call?.function?.arguments); } catch { /* checked below */ }
    check(`tools, reasoning_format ${format}: the call is still read (finish_reason tool_calls, arguments JSON)`,
      r.choices[0].finish_reason === 'tool_calls' && call?.function?.name === 'now' && JSON.stringify(args) === '{}', short(m));
    check(`tools, reasoning_format ${format}: ${format === 'none' ? 'the think block is the content before the call' : 'the think block apart, content null'}`,
      format === 'none' ? /^<think>[^]*<\/think>\n*$/.test(m.content) : typeof m.reasoning_content === 'string' && m.content === null, short(m));
    const s = await streamed(client, { ...body, reasoning_format: format });
    check(`tools, reasoning_format ${format}, streamed: the same call and text`,
      s.calls[0]?.function?.arguments === call?.function?.arguments && s.content === (m.content ?? '') && s.reasoning === (m.reasoning_content ?? ''), short(s));
  }
}

async function refusals(client) {
  const refused = async (extra, param, code) => {
    try { await client.chat.completions.create({ ...SUM, ...extra }); } catch (e) {
      return e instanceof OpenAI.BadRequestError && e.param === param && e.code === code && e.message.includes(param);
    }
    return false;
  };
  check('reasoning_format "hidden": 400 invalid_value naming reasoning_format', await refused({ reasoning_format: 'hidden' }, 'reasoning_format', 'invalid_value'));
  check('reasoning_effort "max": 400 invalid_value naming reasoning_effort', await refused({ reasoning_effort: 'max' }, 'reasoning_effort', 'invalid_value'));
  check('reasoning_effort "high" with enable_thinking false: 400 invalid_value naming reasoning_effort',
    await refused({ reasoning_effort: 'high', chat_template_kwargs: { enable_thinking: false } }, 'reasoning_effort', 'invalid_value'));
  let e = null;
  try { await client.completions.create({ model: 'demo', prompt: 'x', reasoning_format: 'none' }); } catch (x) { e = x; }
  check('completions: reasoning_format is not a field there (400 unknown_parameter)', e?.code === 'unknown_parameter' && e?.param === 'reasoning_format', short(e?.error));
}

// `tinylm run` and `chat` on the same requests: run --json's reasoning and
// answer are serve's reasoning_content and content; printed through a pipe
// the text is as the model wrote it, with --hide-thinking the answer alone;
// on a terminal (script(1)'s pseudo-terminal) the reasoning dimmed (SGR 2 ...
// 22) without the tags.
async function cli(client, model) {
  const tl = (args, input) => execFileSync(TINYLM, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'ignore'] });
  const cases = [['thinking on', SUM, ['--prompt', 'What is 12 + 30?', '-n', '40', '--temperature', '0']],
    ['a block cut short', { messages: MSG('Tell me a story about a lighthouse.'), max_tokens: 12, temperature: 1.5, seed: 4 },
      ['--prompt', 'Tell me a story about a lighthouse.', '-n', '12', '--temperature', '1.5', '--seed', '4']]];
  for (const [what, body, args] of cases) {
    const m = (await client.chat.completions.create(body)).choices[0].message;
    const run = JSON.parse(tl(['run', model, ...args, '--json']));
    check(`run --json, ${what}: reasoning and answer = serve's reasoning_content and content, text the raw text`,
      run.reasoning === m.reasoning_content && run.answer === m.content && isSplitOf(m, run.text), `${short(run)} vs ${short(m)}`);
    check(`run, ${what}, through a pipe: the text as the model wrote it`, tl(['run', model, ...args]) === `${run.text}\n`);
    check(`run --hide-thinking, ${what}: the answer alone`, tl(['run', model, ...args, '--hide-thinking']) === `${run.answer}\n`);
    if (what === 'a block cut short') {
      const cmd = [TINYLM, 'run', model, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
      const tty = execFileSync('script', ['-qec', `${cmd} 2>/dev/null`, '/dev/null'], { encoding: 'utf8' });
      const plain = tty.replace(/\x1b\[2m|\x1b\[22m/g, '');
      check('run on a terminal: the reasoning dimmed (SGR 2 ... 22), no tag, nothing else changed',
        /\x1b\[2m/.test(tty) && !/think>/.test(tty) && plain.replace(/\r\n$/, '') === run.reasoning, JSON.stringify(tty));
    }
  }
  const chat = (extra) => tl(['chat', model, ...extra], 'What is 12 + 30?\n');
  const answer = (await client.chat.completions.create(SUM)).choices[0].message.content;
  check('chat through a pipe: the reply as the model wrote it, <think> included', chat([]).includes(`<think>`) && chat([]).includes(answer));
  check('chat --hide-thinking: the answer alone', chat(['--hide-thinking']) === `${answer}\n`, JSON.stringify(chat(['--hide-thinking'])));
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const model = demoModel();
  const s = server = await startServer('the demo model\'s server', [model, '--parallel', '2', '--ctx', '1024']);
  const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  for (const [name, f] of [['split', split], ['streaming', streaming], ['thinking switch', thinkingSwitch], ['tools', tools], ['refusals', refusals], ['cli', cli]]) {
    try { await f(client, model); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
  }
  await stopServer(s);
}

await runSuite(main, { seconds: 120 });
