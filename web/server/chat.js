// The chat page `tinylm serve` serves at / (docs/server.md, The chat
// page): the conversation goes to this server's own /v1/chat/completions,
// streamed as server-sent events. The in-browser page (web/index.html)
// runs the model in WebAssembly instead; this one only talks HTTP.
const $ = (id) => document.getElementById(id);
const messages = [];
let controller = null;

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if ($('api-key').value) h.Authorization = `Bearer ${$('api-key').value}`;
  return h;
}

function bubble(role, text) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  const think = document.createElement('div');
  think.className = 'think';
  think.hidden = true;
  const body = document.createElement('span');
  body.className = 'body';
  body.textContent = text;
  div.append(think, body);
  $('transcript').append(div);
  div.scrollIntoView({ block: 'end' });
  return { div, think, body };
}

function showError(text) {
  $('error').textContent = text;
  $('error').hidden = !text;
}

async function describe() {
  try {
    const r = await fetch('v1/models', { headers: headers() });
    const j = await r.json();
    $('model-status').textContent = r.ok ? `model ${j.data[0].id} (${j.data[0].tinylm.profile}, ${j.data[0].tinylm.context} tokens)` : j.error.message;
  } catch (e) {
    $('model-status').textContent = `the server does not answer: ${e.message}`;
  }
}

// The request body from the settings; empty fields are left to the server.
function request() {
  const body = { messages, stream: true, max_tokens: Number($('max-tokens').value) || undefined };
  if ($('temperature').value !== '') body.temperature = Number($('temperature').value);
  if ($('seed').value !== '') body.seed = Number($('seed').value);
  if (!$('thinking').checked) body.chat_template_kwargs = { enable_thinking: false };
  return body;
}

// Reads the event stream; each data line is a chunk, [DONE] the end.
async function stream(response, out) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '', content = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    const events = buffered.split('\n\n');
    buffered = events.pop();
    for (const event of events) {
      if (!event.startsWith('data: ')) continue; // ': ping' while queued
      const data = event.slice(6);
      if (data === '[DONE]') return content;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      const delta = chunk.choices[0]?.delta ?? {};
      if (delta.reasoning_content) {
        out.think.hidden = false;
        out.think.textContent += delta.reasoning_content;
      }
      if (delta.content) {
        content += delta.content;
        out.body.textContent = content;
      }
    }
  }
  throw new Error('the stream ended before [DONE]');
}

async function send(text) {
  showError('');
  messages.push({ role: 'user', content: text });
  bubble('user', text);
  const out = bubble('assistant', '');
  out.div.classList.add('streaming');
  $('send').disabled = true;
  $('stop').disabled = false;
  controller = new AbortController();
  try {
    const r = await fetch('v1/chat/completions', { method: 'POST', headers: headers(), body: JSON.stringify(request()), signal: controller.signal });
    if (!r.ok) throw new Error((await r.json()).error.message);
    messages.push({ role: 'assistant', content: await stream(r, out) });
  } catch (e) {
    messages.pop();
    if (e.name !== 'AbortError') showError(e.message);
  } finally {
    out.div.classList.remove('streaming');
    $('send').disabled = false;
    $('stop').disabled = true;
    controller = null;
  }
}

$('chat-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || controller) return;
  $('prompt').value = '';
  send(text);
});
$('prompt').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('chat-form').requestSubmit();
  }
});
$('stop').addEventListener('click', () => controller?.abort());
$('clear').addEventListener('click', () => {
  messages.length = 0;
  $('transcript').replaceChildren();
  showError('');
});
describe();
