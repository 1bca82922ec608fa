"""Records small ALBERT snapshots saved by Hugging Face Transformers, and their outputs, for
tests/test_hf.py (the ALBERT cases); with --check, also runs the round trip through bert_tf's
bridge against Transformers itself.

Run in a virtualenv that has torch and transformers (CI has neither), from the repository root:

    python3 -m venv --system-site-packages /work/venv-hf
    /work/venv-hf/bin/pip install torch==2.13.0 transformers
    PYTHONPATH=$PWD /work/venv-hf/bin/python tests/data/albert_hub/make_expected.py [--check]

Records, for each case of CASES (a Transformers class and a small config; weights drawn with a
fixed seed, wider than Transformers' initializer so that every path matters):
  <case>/config.json, <case>/model.safetensors   what `save_pretrained` wrote
  <case>/outputs.npz    inputs (input_ids, token_type_ids, attention_mask) and Transformers'
                        float32 outputs: last_hidden_state, pooler_output (where the class has
                        a pooler) and the heads' logits (prediction_logits, sop_logits, logits)
  tokens.json           AlbertTokenizer's ids (Transformers, from tests/data/albert_spm's model
                        as spiece.model, do_lower_case true) for TEXTS
  versions.json         torch and transformers versions

--check (needs TensorFlow too, from the system site packages): imports each recorded snapshot
with `python -m bert_tf.hf import`, compares our forward with the recorded outputs, exports the
import back, loads the export in Transformers (AutoModelFor...) and compares its outputs and
tensors, and loads the exported tokenizer with AutoTokenizer; prints the largest differences.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SPM = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
BASE = dict(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=3,
            num_hidden_groups=2, inner_group_num=2, num_attention_heads=4, intermediate_size=24,
            max_position_embeddings=20, type_vocab_size=2, layer_norm_eps=1e-12,
            hidden_act="gelu_new", pad_token_id=0)
CASES = {
    # L=3 over 2 groups of 2 inner blocks (layers 0, 1 run group 0), E != H, tanh GELU.
    "pretraining": ("AlbertForPreTraining", {}),
    # E == H (Transformers' mapping set to the identity, as the original has none), 3 unshared
    # layers, the exact GELU ("gelu" on the Hub) and epsilon 1e-5, three named labels.
    "classifier": ("AlbertForSequenceClassification",
                   dict(embedding_size=16, num_hidden_groups=3, inner_group_num=1,
                        hidden_act="gelu", layer_norm_eps=1e-5,
                        id2label={0: "pos", 1: "neg", 2: "neu"},
                        label2id={"pos": 0, "neg": 1, "neu": 2})),
}
INPUT_IDS = np.array([[2, 15, 48, 120, 3, 201, 77, 1500, 3, 0],
                      [2, 33, 9, 3, 640, 3, 0, 0, 0, 0]])
TOKEN_TYPE_IDS = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]])
ATTENTION_MASK = (INPUT_IDS > 0).astype(np.int64)
TEXTS = ["Hello world, the cats sat!", "Über naïve models ran unable?", "It cost 10,000 euros.",
         "``Quoted'' text", "  spaces   and\ttabs  ", "the dog's park é", "In 1990, then 2, 33"]


def _draw(model, seed):
    """Every parameter redrawn (normal 0.3; LayerNorm weights 1 + normal 0.1), tied ones once."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator)
            if "LayerNorm" in name or "layer_norm" in name:
                param.copy_(1 + 0.1 * noise if name.endswith("weight") else 0.3 * noise)
            else:
                param.copy_(0.3 * noise)


def record():
    torch.manual_seed(0)
    for case, (arch, overrides) in CASES.items():
        config = transformers.AlbertConfig(**{**BASE, **overrides}, architectures=[arch])
        model = getattr(transformers, arch)(config).eval()
        _draw(model, seed=len(case))
        if config.embedding_size == config.hidden_size:
            mapping = model.albert.encoder.embedding_hidden_mapping_in
            with torch.no_grad():
                mapping.weight.copy_(torch.eye(config.hidden_size))
                mapping.bias.zero_()
        folder = os.path.join(HERE, case)
        shutil.rmtree(folder, ignore_errors=True)
        model.save_pretrained(folder)
        with torch.no_grad():
            out = model(input_ids=torch.tensor(INPUT_IDS),
                        token_type_ids=torch.tensor(TOKEN_TYPE_IDS),
                        attention_mask=torch.tensor(ATTENTION_MASK), output_hidden_states=True)
            base = model.albert(input_ids=torch.tensor(INPUT_IDS),
                                token_type_ids=torch.tensor(TOKEN_TYPE_IDS),
                                attention_mask=torch.tensor(ATTENTION_MASK))
        arrays = dict(input_ids=INPUT_IDS, token_type_ids=TOKEN_TYPE_IDS,
                      attention_mask=ATTENTION_MASK,
                      last_hidden_state=base.last_hidden_state.numpy())
        if base.pooler_output is not None:
            arrays["pooler_output"] = base.pooler_output.numpy()
        for key in ("prediction_logits", "sop_logits", "logits"):
            if getattr(out, key, None) is not None:
                arrays[key] = getattr(out, key).numpy()
        np.savez(os.path.join(folder, "outputs.npz"), **arrays)
        print(case, arch, sorted(arrays))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(SPM, os.path.join(tmp, "spiece.model"))
        with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "AlbertTokenizer", "do_lower_case": True}, f)
        tokenizer = transformers.AutoTokenizer.from_pretrained(tmp)
        tokens = {text: tokenizer(text)["input_ids"] for text in TEXTS}
    with open(os.path.join(HERE, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump(tokens, f, indent=1, ensure_ascii=False)
    with open(os.path.join(HERE, "versions.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__}, f)


def _bridge(*args):
    proc = subprocess.run([sys.executable, "-m", "bert_tf.hf", *args], cwd=REPO,
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return proc.stdout


def check():
    from safetensors.numpy import load_file

    import bert_tf
    from bert_tf.albert.pretraining import AlbertPretrainingModel
    from bert_tf.checkpoints import load_original_checkpoint
    from bert_tf.families import read_config

    worst = {}
    for case, (arch, _) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            snap = os.path.join(tmp, "snap")
            shutil.copytree(os.path.join(HERE, case), snap)
            shutil.copy(SPM, os.path.join(snap, "spiece.model"))
            print(_bridge("import", f"--hf_dir={snap}", f"--output_dir={tmp}/google"))
            want = dict(np.load(os.path.join(snap, "outputs.npz")))
            feats = {"input_ids": want["input_ids"], "input_mask": want["attention_mask"],
                     "segment_ids": want["token_type_ids"]}
            real = want["attention_mask"].astype(bool)
            if arch == "AlbertForPreTraining":
                model = AlbertPretrainingModel(read_config(f"{tmp}/google/albert_config.json"))
                load_original_checkpoint(model, f"{tmp}/google")
                positions = np.tile(np.arange(10), (2, 1))
                ours = model(dict(feats, masked_lm_positions=positions))
                logits = want["prediction_logits"]
                log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(
                    -1, keepdims=True)) - logits.max(-1, keepdims=True)
                worst[f"{case} mlm_log_probs"] = np.abs(
                    ours["mlm_log_probs"].numpy().reshape(2, 10, -1)[real] - log_probs[real]).max()
                sop = want["sop_logits"]
                sop = sop - np.log(np.exp(sop).sum(-1, keepdims=True))
                worst[f"{case} sop_log_probs"] = np.abs(ours["nsp_log_probs"].numpy() - sop).max()
            else:
                model = bert_tf.BertTaskModel.from_pretrained(f"{tmp}/google")
                ours = model(feats)
                worst[f"{case} logits"] = np.abs(ours["logits"].numpy() - want["logits"]).max()
            worst[f"{case} sequence_output"] = np.abs(
                ours["sequence_output"].numpy()[real] - want["last_hidden_state"][real]).max()
            worst[f"{case} pooled_output"] = np.abs(
                ours["pooled_output"].numpy() - want["pooler_output"]).max()

            print(_bridge("export", f"--checkpoint={tmp}/google", f"--output_dir={tmp}/back"))
            saved = load_file(os.path.join(snap, "model.safetensors"))
            back = load_file(os.path.join(tmp, "back", "model.safetensors"))
            differs = sorted(n for n in saved if n not in back
                             or not np.array_equal(saved[n], back[n]))
            print(f"{case}: export gives back {len(back)} tensors; differing or missing from "
                  f"the snapshot's {len(saved)}: {differs}; added: {sorted(set(back) - set(saved))}")
            auto = getattr(transformers, arch).from_pretrained(os.path.join(tmp, "back")).eval()
            with torch.no_grad():
                out = auto(input_ids=torch.tensor(want["input_ids"]),
                           token_type_ids=torch.tensor(want["token_type_ids"]),
                           attention_mask=torch.tensor(want["attention_mask"]))
            for key in ("prediction_logits", "sop_logits", "logits"):
                if key in want:
                    worst[f"{case} transformers(export) {key}"] = np.abs(
                        getattr(out, key).numpy() - want[key]).max()
            tok = transformers.AutoTokenizer.from_pretrained(os.path.join(tmp, "back"))
            print(f"{case}: AutoTokenizer -> {type(tok).__name__}, "
                  f"do_lower_case={getattr(tok, 'do_lower_case', None)}; ids of TEXTS[0]: "
                  f"{tok(TEXTS[0])['input_ids']}")
            print(f"{case}: id2label {auto.config.id2label}, hidden_act {auto.config.hidden_act}")
    for key, value in worst.items():
        print(f"max |difference| {key}: {value:.3g}")


if __name__ == "__main__":
    if "--check" in sys.argv:
        check()
    else:
        record()
