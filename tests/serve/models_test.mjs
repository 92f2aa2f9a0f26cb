// `tinylm serve` with several models (docs/server.md, Several models),
// driven by the official openai npm client:
//   node tests/serve/models_test.mjs TINYLM WORKDIR
//
// Two models in one --models directory: the demo model (docs/demo-model.md,
// the real Qwen3 tokenizer) and a small synthetic one on the 346-token
// tiny tokenizer fixture, so the two are told apart by their tokenizers as
// well as their artifact ids. What the contract says, checked:
//   * the request's "model" picks (names are file names without .slm), an
//     absent one means the first in name order, an unknown one is 404
//     model_not_found; /tokenize takes "model" too;
//   * /v1/models lists both, loaded or not; /health and /metrics report
//     per model (label model="...");
//   * under a --mem-budget that holds one model only (its size read from
//     the first server's plan_bytes), each use of the other unloads the
//     idle one (seen in /v1/models and tinylm_model_unloads_total), and
//     every reply is byte for byte the reply of the server that held both
//     (a model's reply does not depend on what else is loaded);
//   * a model in use is never unloaded: while a demo generation streams,
//     the tiny model is 503 model_busy with Retry-After, and loads once the
//     stream has ended;
//   * --models is repeatable, in command-line order, the first model the
//     default; two files with one name, and a --models directory without
//     a model, are refused at startup (exit 2).
// Planted defects these checks catch (tried by hand): evicting a held
// model (the busy check gets 200), never evicting (the swap checks see
// both loaded, or 503), the first positional model not the default (the
// absent-model check), 400 instead of 404 for an unknown name, a second
// --models replacing the first (the order check).
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { check, get, modelsDir, runTinylm, post, ROOT, runSuite, short, sleep, startServer as startProcess, stopServer, suiteArgs } from '../support/serve_harness.mjs';

const { TINYLM, WORK } = suiteArgs('models_test.mjs');
const MIB = 1 << 20;
// Qwen3's end tokens (<|endoftext|>, <|im_end|>) banned: a generation as
// long as max_tokens, to keep the demo model busy.
const NO_EOS = { 151643: -100, 151645: -100 };

// ---- servers ----
async function startServer(args) {
  const s = await startProcess(`a server of ${short(args)}`, [...args, '--parallel', '1', '--ctx', '1024'], { ms: 60000 });
  s.client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  return s;
}
const loaded = (list) => Object.fromEntries(list.data.map((m) => [m.id, m.tinylm.loaded]));
function metric(text, name, model) {
  const m = new RegExp(`^tinylm_${name}\\{model="${model}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

// The same request to each model: greedy, so the reply is a function of
// the model and the request alone.
const ask = (s, model) => s.client.completions.create({ model, prompt: '12 + 30 =', max_tokens: 8, temperature: 0 });

function makeModels() {
  const dir = modelsDir();
  const cfg = join(WORK, 'tiny.json');
  writeFileSync(cfg, JSON.stringify({ vocab_size: 346, hidden_size: 256, intermediate_size: 512, num_hidden_layers: 4,
    num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, max_position_embeddings: 4096 }));
  runTinylm('synth', '--config', cfg, '--seed', '7', '--dtype', 'bf16', '--tokenizer-dir', join(ROOT, 'tests/fixtures/tiny-tokenizer'), '-o', join(WORK, 'tiny-hf'));
  rmSync(join(WORK, 'tiny-hf', 'generation_config.json'), { force: true }); // see tests/golden/slm/README.md
  runTinylm('convert', join(WORK, 'tiny-hf'), '-o', join(dir, 'tiny.slm'), '--quant', 'q8', '--profile', 'qwen3-0.6b-publisher');
  return dir;
}

function startupRefusals(dir) {
  mkdirSync(join(WORK, 'twin'));
  symlinkSync(join(dir, 'tiny.slm'), join(WORK, 'twin', 'tiny.slm'));
  let r = spawnSync(TINYLM, ['serve', join(dir, 'tiny.slm'), join(WORK, 'twin', 'tiny.slm'), '--port', '0'], { encoding: 'utf8', timeout: 10000 });
  check('two files called tiny: exit 2 naming both', r.status === 2 && r.stderr.includes(join(WORK, 'twin', 'tiny.slm')) && r.stderr.includes(join(dir, 'tiny.slm')), short(r.stderr));
  mkdirSync(join(WORK, 'empty'));
  r = spawnSync(TINYLM, ['serve', '--models', join(WORK, 'empty'), '--port', '0'], { encoding: 'utf8', timeout: 10000 });
  check('--models with no *.slm: exit 2', r.status === 2 && /no model given/.test(r.stderr), short(r.stderr));
}

// One server holding both: the references.
async function unbudgeted(dir) {
  const s = await startServer(['--models', dir]);
  let list = await get(s, '/v1/models');
  check('/v1/models lists both; the default (first by name) loaded at start, the other not',
    short(list.data?.map((m) => m.id)) === '["demo","tiny"]' && short(loaded(list)) === '{"demo":true,"tiny":false}', short(list));
  const refs = { demo: await ask(s, 'demo'), tiny: await ask(s, 'tiny') };
  check('each model answers under its own name', refs.demo.model === 'demo' && refs.tiny.model === 'tiny', short(refs));
  check('the two models are different artifacts', refs.demo.tinylm.artifact_id !== refs.tiny.tinylm.artifact_id, short(refs));
  const absent = await post(s, '/v1/completions', { prompt: '12 + 30 =', max_tokens: 8, temperature: 0 });
  check('no model named: the default, byte for byte', absent.status === 200 && absent.json.choices[0].text === refs.demo.choices[0].text &&
    absent.json.tinylm.artifact_id === refs.demo.tinylm.artifact_id, short(absent.json));
  let e = null;
  try { await ask(s, 'gpt-4o'); } catch (x) { e = x; }
  check('an unknown model: 404 model_not_found, param model', e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.param === 'model' && /gpt-4o/.test(e.message), short(e?.error ?? e?.message));
  const tokDemo = await post(s, '/tokenize', { model: 'demo', content: 'hello world' });
  const tokTiny = await post(s, '/tokenize', { model: 'tiny', content: 'hello world' });
  check('/tokenize uses the named model\'s tokenizer', tokDemo.status === 200 && tokTiny.status === 200 &&
    short(tokDemo.json.tokens) !== short(tokTiny.json.tokens) && tokTiny.json.tokens.every((id) => id < 346), short([tokDemo.json, tokTiny.json]));
  list = await get(s, '/v1/models');
  check('both loaded now (no budget)', short(loaded(list)) === '{"demo":true,"tiny":true}', short(list));
  const one = await get(s, '/v1/models/tiny');
  check('/v1/models/{id}: the second model, as /v1/models lists it', short(one) === short(list.data.find((x) => x.id === 'tiny')), short(one));
  const none = await fetch(`${s.base}/v1/models/gpt-4o`);
  check('/v1/models/{id} for an id no model has: 404 model_not_found', none.status === 404 && (await none.json()).error?.code === 'model_not_found');
  const props = await get(s, '/props');
  check('/props describes the default model', props.model_alias === 'demo' && props.tinylm?.artifact_id === refs.demo.tinylm.artifact_id, short(props));
  const health = await get(s, '/health');
  check('/health lists the models', health.status === 'ok' && health.models?.length === 2 && health.slots_idle === 2, short(health));
  const m = await get(s, '/metrics');
  check('/metrics: per-model lines labelled model="..."', metric(m, 'model_loaded', 'demo') === 1 && metric(m, 'model_loaded', 'tiny') === 1 &&
    metric(m, 'model_tokens_predicted_total', 'tiny') === refs.tiny.usage.completion_tokens &&
    metric(m, 'model_tokens_predicted_total', 'demo') === refs.demo.usage.completion_tokens + absent.json.usage.completion_tokens, short(m.split('\n').filter((l) => /model=/.test(l))));
  const plans = Object.fromEntries(list.data.map((x) => [x.id, x.tinylm.plan_bytes]));
  await stopServer(s);
  return { refs, plans };
}

async function budgeted(dir, refs, plans) {
  // the larger model's plan rounded up to a MiB: fits either, never both
  const budget = Math.ceil(Math.max(plans.demo, plans.tiny) / MIB);
  if (!check(`a budget of ${budget} MiB holds one model only (plans ${plans.demo} and ${plans.tiny} bytes)`,
    budget * MIB >= Math.max(plans.demo, plans.tiny) && budget * MIB < plans.demo + plans.tiny, short(plans))) return;
  const s = await startServer(['--models', dir, '--mem-budget', String(budget)]);
  const rounds = [['tiny', { demo: false, tiny: true }], ['demo', { demo: true, tiny: false }], ['tiny', { demo: false, tiny: true }]];
  for (const [i, [model, want]] of rounds.entries()) {
    const r = await ask(s, model);
    check(`swap ${i + 1} (${model}): the reply of the server that held both`, r.choices[0].text === refs[model].choices[0].text &&
      r.tinylm.artifact_id === refs[model].tinylm.artifact_id, short([r, refs[model]]));
    const list = await get(s, '/v1/models');
    check(`swap ${i + 1}: ${model} loaded, the other unloaded`, short(loaded(list)) === short(want), short(list));
  }
  const m = await get(s, '/metrics');
  check('/metrics counts the swaps (demo: 2 loads, 2 unloads; tiny: 2 loads, 1 unload) and keeps an unloaded model\'s tokens',
    metric(m, 'model_loads_total', 'demo') === 2 && metric(m, 'model_unloads_total', 'demo') === 2 &&
    metric(m, 'model_loads_total', 'tiny') === 2 && metric(m, 'model_unloads_total', 'tiny') === 1 &&
    metric(m, 'model_tokens_predicted_total', 'demo') === refs.demo.usage.completion_tokens, short(m.split('\n').filter((l) => /model=/.test(l))));

  // demo held by a running generation: tiny cannot unload it
  await ask(s, 'demo');
  const controller = new AbortController();
  const stream = await s.client.completions.create({ model: 'demo', prompt: '12 + 30 =', max_tokens: 900, temperature: 0, logit_bias: NO_EOS, stream: true },
    { signal: controller.signal });
  const it = stream[Symbol.asyncIterator]();
  await it.next(); // the generation runs
  const busy = await post(s, '/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1 });
  check('while demo generates, tiny is 503 model_busy with Retry-After (demo is not unloaded)',
    busy.status === 503 && busy.json?.error?.code === 'model_busy' && busy.headers['retry-after'] === '1', short([busy.status, busy.json]));
  const during = await get(s, '/v1/models');
  check('demo stays loaded while in use', short(loaded(during)) === '{"demo":true,"tiny":false}', short(during));
  controller.abort();
  let after = null;
  for (let i = 0; i < 100 && after?.status !== 200; i++) { // the cancel lands within a decode step
    await sleep(50);
    after = await post(s, '/v1/completions', { model: 'tiny', prompt: '12 + 30 =', max_tokens: 8, temperature: 0 });
  }
  check('once the stream is gone, tiny loads and answers as before', after?.status === 200 && after.json.choices[0].text === refs.tiny.choices[0].text, short(after?.json));
  await stopServer(s);
}

// --models is repeatable and stands for its files where it stands: the
// first model on the command line is the default.
async function order(dir) {
  mkdirSync(join(WORK, 'more'));
  symlinkSync(join(dir, 'tiny.slm'), join(WORK, 'more', 'tiny2.slm'));
  const s = await startServer(['--models', join(WORK, 'more'), '--models', dir]);
  const list = await get(s, '/v1/models');
  check('two --models: their files in command-line order, the first loaded', short(list.data?.map((m) => m.id)) === '["tiny2","demo","tiny"]' &&
    short(loaded(list)) === '{"tiny2":true,"demo":false,"tiny":false}', short(list));
  const r = await post(s, '/v1/completions', { prompt: 'x', max_tokens: 1 });
  check('no model named: the first on the command line', r.status === 200 && r.json.model === 'tiny2', short(r.json));
  check('the startup line names the models', /tinylm serve: models tiny2 \(default\), demo, tiny \(/.test(s.stdout), short(s.stdout));
  await stopServer(s);
}

async function main() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const dir = makeModels();
  startupRefusals(dir);
  const { refs, plans } = await unbudgeted(dir);
  await budgeted(dir, refs, plans);
  await order(dir);
}

await runSuite(main, { seconds: 180, log: 'servers.log' });
