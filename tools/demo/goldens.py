#!/usr/bin/python3
"""Torch-oracle goldens for the demo model: the trainer's own module
(tools/demo/model.py, independent of tinylm's C code) on fixed prompts.

    goldens.py --weights W --idmap I --hf HF_DIR --tinylm BIN -o OUTDIR

HF_DIR is expand.py's output for the same weights (its config.json gives
the effective config, as for every golden). For each prompt in PROMPTS
(rendered by the Jinja2 template oracle, encoded by `tinylm encode` through
HF_DIR's tokenizer), writes OUTDIR/NAME.cbor, a tinylm.golden/1 document
(docs/golden.md) with producer "tinylm-demo-torch" (precision f32): the
final_norm and logits records at the last prompt position (all 151,936
logits: the compact ones from the module, exactly 0 elsewhere) and an
8-step greedy continuation with its top-1 minus top-2 margins. `tinylm
verify` compares a .slm of the expanded weights with them (the demo-goldens
stage of `make test`). Needs torch (make demo-train installs it).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import corpus  # noqa: E402
import golden_cbor  # noqa: E402
import model as demo_model  # noqa: E402

STEPS = 8
PROMPTS = {
    "sum": [{"role": "user", "content": "What is 347 + 58?"}],
    "capital-thinking": [{"role": "user", "content": "What is the capital of France?"}],
    "two-turn": [{"role": "user", "content": "What is 125 + 250?"},
                 {"role": "assistant", "content": "125 + 250 = 375."},
                 {"role": "user", "content": "Add 17 to that."}],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("--weights", "--idmap", "--hf", "--tinylm", "-o"):
        ap.add_argument(name, required=True)
    a = ap.parse_args()
    import numpy as np
    import torch
    torch.set_num_threads(1)
    with open(a.idmap) as f:
        idmap = json.load(f)
    ids, n_full = idmap["ids"], idmap["vocab_size"]
    index = {t: i for i, t in enumerate(ids)}
    tensors, meta = demo_model.read_safetensors(a.weights)
    net = demo_model.torch_model()(demo_model.config_of(meta), len(ids))
    net.load_hf_state({k: demo_model.from_raw(*v) for k, v in tensors.items()})
    _, config_map = golden_cbor.resolve_config(a.hf)
    os.makedirs(a.o, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "tok.slm")
        subprocess.run([a.tinylm, "convert", a.hf, "-o", tok, "--tokenizer-only"], check=True,
                       stdout=subprocess.DEVNULL)
        convs = [{"messages": m, "thinking": name.endswith("thinking")} for name, m in PROMPTS.items()]
        prompt_ids = corpus.encode_all(a.tinylm, tok, corpus.render_prompts(a.hf, convs))
    for name, pids in zip(PROMPTS, prompt_ids):
        captured = {}
        hook = net.norm.register_forward_hook(lambda m, i, o: captured.__setitem__("final_norm", o))
        seq, cont, margins, first = [index[t] for t in pids], [], [], None
        with torch.no_grad():
            for step in range(STEPS):
                compact = net(torch.tensor([seq]))[0, -1]
                full = torch.zeros(n_full)
                full[torch.tensor(ids)] = compact
                if first is None:
                    first = (captured["final_norm"][0, -1].numpy().copy(), full.numpy().copy())
                top = torch.topk(full.double(), 2)
                # argmax, lowest id on ties (docs/golden.md)
                best = int(torch.nonzero(full == full.max())[0])
                cont.append(best)
                margins.append(float(top.values[0] - top.values[1]))
                if best not in index:
                    break
                seq.append(index[best])
        hook.remove()
        records = [golden_cbor.make_record("final_norm", None, first[0][None, :], "f32"),
                   golden_cbor.make_record("logits", None, first[1][None, :], "f32")]
        doc = golden_cbor.golden_document(
            {"name": "tinylm-demo-torch", "version": "torch-" + torch.__version__, "precision": "f32"},
            config_map, "tinylm demo model (tools/demo/weights) bf16", pids, [len(pids) - 1], records,
            (cont, np.array(margins)))
        golden_cbor.write_file(os.path.join(a.o, name + ".cbor"), doc)
        print("%s: %d prompt tokens, continuation %s" % (name, len(pids), cont))
    return 0


if __name__ == "__main__":
    sys.exit(main())
