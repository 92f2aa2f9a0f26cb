// `tinylm serve`'s structured output end to end (docs/server.md, Structured
// output), driven by the official openai npm client on the demo model
// (docs/demo-model.md: the real Qwen3 tokenizer and template, trained on
// arithmetic only, so its free text is junk for these requests and every
// valid reply is the mask's doing):
//   node tests/serve/structured_test.mjs TINYLM WORKDIR
//
// The oracle of validity is ajv (npm), independent of the engine: every
// reply that finishes is parsed and validated against the request's schema
// (the tool's parameters for each call), over several seeds at
// temperature 1 (the sampler's full distribution under the mask), with
// thinking on and off. Also: client.chat.completions.parse, streaming (the
// deltas joined equal the reply), named and required tool_choice with
// parallel_tool_calls, a tool round sent back through the template
// (checked against `tinylm render`), the GBNF grammar on chat and
// completions, the refusals (an unsupported schema keyword named, a
// malformed grammar's line and column, contradictions), and a grammar no
// text can satisfy within max_tokens: finish_reason length, in bounded
// time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { LengthFinishReasonError } from 'openai/core/error';
import { check, demoModel, runSuite, short, startServer, stopServer, suiteArgs } from '../support/serve_harness.mjs';

const { TINYLM, WORK } = suiteArgs('structured_test.mjs');
const SEEDS = [1, 2, 3];

const ajv = new Ajv({ strict: false });
// ajv's verdict on a JSON text: null when valid, else why.
function invalid(schema, text) {
  let doc;
  try { doc = JSON.parse(text); } catch (e) { return `not JSON: ${e.message}: ${short(text)}`; }
  const validate = ajv.compile(schema);
  return validate(doc) ? null : `${ajv.errorsText(validate.errors)}: ${short(text)}`;
}

let server = null; // the suite's one server

// The request's error, or null when it succeeded.
async function refusal(f) {
  try { await f(); } catch (e) { return e; }
  return null;
}
function refused(e, param, code, pattern) {
  return e instanceof OpenAI.BadRequestError && e.status === 400 && e.error?.type === 'invalid_request_error' &&
    e.param === param && e.code === code && pattern.test(e.message);
}

const MSG = (text) => [{ role: 'user', content: text }];
const THINK = (on) => ({ chat_template_kwargs: { enable_thinking: on } });
const SCHEMA = {
  type: 'object',
  properties: {
    op: { enum: ['+', '-'] },
    result: { type: 'integer', minimum: 0, maximum: 2000 },
    words: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 2 },
  },
  required: ['op', 'result', 'words'],
  additionalProperties: false,
};
const FORMAT = { type: 'json_schema', json_schema: { name: 'sum', strict: true, schema: SCHEMA } };
const TOOLS = [
  { type: 'function', function: { name: 'add', description: 'Adds two integers', strict: true,
    parameters: { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 999 }, b: { type: 'integer', minimum: 0, maximum: 999 } },
      required: ['a', 'b'], additionalProperties: false } } },
  { type: 'function', function: { name: 'capital', description: 'The capital of a country',
    parameters: { type: 'object', properties: { country: { type: 'string', maxLength: 12 } }, required: ['country'], additionalProperties: false } } },
  { type: 'function', function: { name: 'now', description: 'The time' } },
];
const PARAMS = Object.fromEntries(TOOLS.map((t) => [t.function.name, t.function.parameters ?? { type: 'object', additionalProperties: false }]));

// Every call of a message names a tool and carries arguments valid for it.
function badCalls(message, allowed) {
  const calls = message.tool_calls ?? [];
  if (!calls.length) return `no tool_calls: ${short(message)}`;
  for (const c of calls) {
    if (c.type !== 'function' || !/^call_[0-9a-f]+$/.test(c.id)) return `a call's id or type: ${short(c)}`;
    if (!allowed.includes(c.function.name)) return `a call of ${c.function.name}`;
    const why = invalid(PARAMS[c.function.name], c.function.arguments);
    if (why) return `${c.function.name}: ${why}`;
  }
  return null;
}

// A stream through the client: the chunks' content, reasoning and tool calls joined.
async function streamed(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const out = { content: '', reasoning: '', calls: [], finish: null, chunks: 0 };
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    out.chunks++;
    out.content += c.delta?.content ?? '';
    out.reasoning += c.delta?.reasoning_content ?? '';
    for (const t of c.delta?.tool_calls ?? []) out.calls.push(t);
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

async function jsonSchema(client) {
  for (const thinking of [false, true]) {
    const what = `json_schema, thinking ${thinking ? 'on' : 'off'}`;
    for (const seed of SEEDS) {
      const body = { model: 'demo', messages: MSG('What is 12 + 30?'), response_format: FORMAT, temperature: 1, seed, max_tokens: 200, ...THINK(thinking) };
      let r;
      try { r = await client.chat.completions.parse(body); } catch (e) {
        check(`${what}, seed ${seed}: parse() returns`, false, e?.message);
        continue;
      }
      const m = r.choices[0].message;
      check(`${what}, seed ${seed}: parse() gives an object ajv accepts, finish_reason stop`,
        r.choices[0].finish_reason === 'stop' && m.parsed !== null && !invalid(SCHEMA, m.content), short(r.choices[0]) + (invalid(SCHEMA, m.content) ?? ''));
      check(`${what}, seed ${seed}: the think block ${thinking ? 'is reasoning_content, apart from the content' : 'is absent'}`,
        thinking ? typeof m.reasoning_content === 'string' && !m.content.includes('think>') : m.reasoning_content === undefined, short(m));
      if (seed === SEEDS[0]) {
        const s = await streamed(client, body);
        check(`${what}: streamed, the content deltas joined = the reply, valid by ajv`,
          s.content === m.content && s.finish === 'stop' && !invalid(SCHEMA, s.content), short(s));
        check(`${what}: streamed, the reasoning deltas joined = reasoning_content`,
          s.reasoning === (m.reasoning_content ?? ''), short(s));
      }
    }
  }
  // json_object: any object.
  for (const seed of SEEDS) {
    const r = await client.chat.completions.create({ messages: MSG('Hi'), response_format: { type: 'json_object' }, temperature: 1, seed, max_tokens: 120, ...THINK(false) });
    const c = r.choices[0];
    check(`json_object, seed ${seed}: a JSON object (or a typed cut: length)`,
      c.finish_reason === 'length' || !invalid({ type: 'object' }, c.message.content), short(c));
  }
}

async function tools(client) {
  let completed = 0;
  for (const thinking of [false, true]) {
    for (const seed of SEEDS) {
      const what = `thinking ${thinking ? 'on' : 'off'}, seed ${seed}`;
      const named = await client.chat.completions.create({ messages: MSG('What is 12 + 30?'), tools: TOOLS, temperature: 1, seed, max_tokens: 120,
        tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false, ...THINK(thinking) });
      const n = named.choices[0];
      check(`tool_choice add, no parallel calls, ${what}: one call of add, arguments valid by ajv, content null, finish_reason tool_calls`,
        n.finish_reason === 'tool_calls' && n.message.content === null && n.message.tool_calls?.length === 1 && !badCalls(n.message, ['add']),
        (badCalls(n.message, ['add']) ?? '') + short(n));
      const req = await client.chat.completions.create({ messages: MSG('Capital of Peru?'), tools: TOOLS, temperature: 1, seed, max_tokens: 200,
        tool_choice: 'required', ...THINK(thinking) });
      const q = req.choices[0];
      check(`tool_choice required, parallel calls, ${what}: every call of a tool, its arguments valid by ajv (or a typed cut: length)`,
        q.finish_reason === 'length' || (q.finish_reason === 'tool_calls' && q.message.content === null && !badCalls(q.message, Object.keys(PARAMS))),
        (badCalls(q.message, Object.keys(PARAMS)) ?? '') + short(q));
      completed += q.finish_reason === 'tool_calls';
    }
  }
  check(`tool_choice required: some replies ended with their calls complete (${completed} of ${2 * SEEDS.length})`, completed > 0);
  // Streamed: one tool_calls delta, the same calls (ids apart).
  const body = { messages: MSG('What is 12 + 30?'), tools: TOOLS, temperature: 1, seed: 4, max_tokens: 120, tool_choice: { type: 'function', function: { name: 'add' } },
    parallel_tool_calls: false, ...THINK(false) };
  const full = await client.chat.completions.create(body);
  const s = await streamed(client, body);
  const strip = (calls) => calls.map((c) => [c.type, c.function.name, c.function.arguments]);
  check('tool_choice add streamed: the delta.tool_calls = the reply\'s calls (ids apart), no content, finish_reason tool_calls',
    s.finish === 'tool_calls' && s.content === '' && JSON.stringify(strip(s.calls)) === JSON.stringify(strip(full.choices[0].message.tool_calls ?? [])) &&
    s.calls.every((c, i) => c.index === i), short(s));
  // parse() needs every tool strict: the add tool alone; parsed_arguments are the arguments parsed.
  const p = await client.chat.completions.parse({ ...body, tools: [TOOLS[0]] });
  const call = p.choices[0].message.tool_calls?.[0];
  check('parse() with a strict tool: parsed_arguments = the arguments parsed, valid by ajv',
    call !== undefined && JSON.stringify(call.function.parsed_arguments) === JSON.stringify(JSON.parse(call.function.arguments)) &&
    !invalid(PARAMS.add, call.function.arguments), short(p.choices[0]));
  // The round goes back through the template: the call and its result render as `tinylm render` renders them.
  const round = [...MSG('What is 12 + 30?'), { role: 'assistant', content: null, tool_calls: full.choices[0].message.tool_calls },
    { role: 'tool', tool_call_id: full.choices[0].message.tool_calls[0].id, content: '42' }];
  const conv = join(WORK, 'round.json');
  writeFileSync(conv, JSON.stringify({ messages: round.map((m) => (m.content === null ? { ...m, content: '' } : m)), tools: TOOLS, add_generation_prompt: true, enable_thinking: false }));
  const want = JSON.parse(execFileSync(TINYLM, ['render', server.model, '--messages', conv, '--json'], { encoding: 'utf8' }));
  const at = await fetch(`${server.base}/apply-template`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: round, tools: TOOLS, ...THINK(false) }) }).then((r) => r.json());
  check('a tool round sent back renders as tinylm render renders it (<tool_call> with the arguments, <tool_response>)',
    at.prompt === want.text && want.text.includes('<tool_response>\n42\n</tool_response>') && want.text.includes('"name": "add"'), short(at));
  const after = await client.chat.completions.create({ messages: round, tools: TOOLS, max_tokens: 16, ...THINK(false) });
  check('a chat after the tool round: 200, prompt_tokens = tinylm render\'s', after.usage.prompt_tokens === want.ids.length, `${after.usage.prompt_tokens} vs ${want.ids.length}`);
}

async function grammars(client) {
  const yesNo = 'root ::= answer "."\nanswer ::= "yes" | "no" | "maybe"\n';
  for (const seed of SEEDS) {
    const r = await client.chat.completions.create({ messages: MSG('Is 3 > 2?'), grammar: yesNo, temperature: 1, seed, max_tokens: 40, ...THINK(false) });
    check(`grammar on chat, seed ${seed}: the reply is a sentence of it`, /^(yes|no|maybe)\.$/.test(r.choices[0].message.content) && r.choices[0].finish_reason === 'stop', short(r.choices[0]));
    const c = await client.completions.create({ model: 'demo', prompt: 'The answer is', grammar: 'root ::= " " [0-9]{1,3}', temperature: 1, seed });
    check(`grammar on completions, seed ${seed}: the text is a sentence of it`, /^ [0-9]{1,3}$/.test(c.choices[0].text) && c.choices[0].finish_reason === 'stop', short(c.choices[0]));
  }
  const bools = { type: 'array', items: { type: 'boolean' }, minItems: 1, maxItems: 3 };
  for (const seed of SEEDS) {
    const js = await client.completions.create({ model: 'demo', prompt: 'x =', json_schema: bools, temperature: 1, seed, max_tokens: 40 });
    check(`json_schema on completions, seed ${seed}: an array ajv accepts`, !invalid(bools, js.choices[0].text), short(js.choices[0]));
  }
}

// No text satisfies the grammar within the limit: a typed end, in bounded time.
async function cutShort(client) {
  const t0 = Date.now();
  const long = await client.chat.completions.create({ messages: MSG('Hi'), grammar: 'root ::= "a" [a-z]{300}', max_tokens: 8, ...THINK(false) });
  check('a grammar longer than max_tokens: finish_reason length, tinylm stop max_tokens, 8 tokens of a prefix, no hang',
    long.choices[0].finish_reason === 'length' && long.tinylm.choices[0].stop === 'max_tokens' && long.usage.completion_tokens === 8 &&
    /^a[a-z]*$/.test(long.choices[0].message.content) && Date.now() - t0 < 60000, short(long));
  const ls = await streamed(client, { messages: MSG('Hi'), grammar: 'root ::= "a" [a-z]{300}', max_tokens: 8, ...THINK(false) });
  check('the same streamed: finish_reason length, the deltas = a prefix', ls.finish === 'length' && ls.content === long.choices[0].message.content, short(ls));
  const e = await refusal(() => client.chat.completions.parse({ messages: MSG('Hi'), response_format: { type: 'json_schema', json_schema: { name: 'n', strict: true,
    schema: { type: 'object', properties: { s: { type: 'string', minLength: 400 } }, required: ['s'] } } }, max_tokens: 8, ...THINK(false) }));
  check('parse() of a strict schema cut by max_tokens raises the client\'s LengthFinishReasonError', e instanceof LengthFinishReasonError, short(e?.message));
}

async function refusals(client) {
  const schemaWith = (extra) => ({ type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', ...extra } } });
  let e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), response_format: schemaWith({ patternProperties: { '^a': { type: 'string' } } }) }));
  check('a schema keyword the engine does not enforce: 400 unsupported_value, param response_format.json_schema.schema, the message names it',
    refused(e, 'response_format.json_schema.schema', 'unsupported_value', /patternProperties/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', patternProperties: { '^a': {} } } } }],
    tool_choice: 'required' }));
  check('the same in a tool\'s parameters: param tools[0].function.parameters', refused(e, 'tools[0].function.parameters', 'unsupported_value', /patternProperties/), short(e?.error ?? e?.message));
  e = await refusal(() => client.completions.create({ model: 'demo', prompt: 'x', json_schema: { type: 'object', patternProperties: { '^a': {} } } }));
  check('the same on completions: param json_schema', refused(e, 'json_schema', 'unsupported_value', /patternProperties/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), grammar: 'root ::= "a"\nnext ::= ( "b" \n' }));
  check('a malformed grammar: 400 invalid_value, param grammar, the message gives line and column',
    refused(e, 'grammar', 'invalid_value', /line \d+, column \d+/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), grammar: 'root ::= value\n' }));
  check('a grammar with an undefined rule: 400 invalid_value, param grammar, naming the rule', refused(e, 'grammar', 'invalid_value', /value/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), tool_choice: 'required' }));
  check('tool_choice required without tools: 400, param tool_choice', refused(e, 'tool_choice', 'invalid_value', /tool/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), tools: TOOLS, tool_choice: { type: 'function', function: { name: 'mul' } } }));
  check('a named tool not in tools: 400, param tool_choice.function.name', refused(e, 'tool_choice.function.name', 'invalid_value', /mul/), short(e?.error ?? e?.message));
  e = await refusal(() => client.chat.completions.create({ messages: MSG('Hi'), grammar: 'root ::= "a"', response_format: { type: 'json_object' } }));
  check('grammar beside response_format: 400, param grammar', refused(e, 'grammar', 'invalid_value', /response_format/), short(e?.error ?? e?.message));
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const model = demoModel();
  const s = server = await startServer('the demo model\'s server', [model, '--parallel', '2', '--ctx', '1024']);
  s.model = model;
  const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  for (const [name, f] of [['json_schema', jsonSchema], ['tools', tools], ['grammars', grammars], ['cut short', cutShort], ['refusals', refusals]]) {
    try { await f(client); } catch (e) { check(`${name}: ran to the end`, false, e?.stack ?? String(e)); }
  }
  const health = await fetch(`${s.base}/health`).then((r) => r.json()).catch(() => null);
  check('the server is alive at the end, every slot idle', health?.status === 'ok' && health.slots_processing === 0 && s.exit === null, short(health));
  await stopServer(s);
}

await runSuite(main, { seconds: 300 });
