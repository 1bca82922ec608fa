"""Records small RoBERTa snapshots saved by Hugging Face Transformers, and their outputs, for
tests/test_roberta_hub_names.py; and the ids Transformers' AutoTokenizer gives with the tokenizer
files our export writes. With --check, also runs the round trip through bert_tf's bridge against
Transformers itself.

Run in a virtualenv that has torch and transformers (CI has neither), from the repository root:

    python3 -m venv --system-site-packages /tmp/venv-r30
    /tmp/venv-r30/bin/pip install torch==2.13.0 transformers==5.24.0
    PYTHONPATH=$PWD /tmp/venv-r30/bin/python tests/data/roberta_hub/make_expected.py [--check]

Records, for each case of CASES (a Transformers class and a small config; weights drawn with a
fixed seed, wider than Transformers' initializer so that every path matters, the token-type and
padding rows included):
  <case>/config.json, <case>/model.safetensors   what `save_pretrained` wrote
  <case>/outputs.npz    inputs (input_ids, token_type_ids, attention_mask) and Transformers'
                        float32 outputs: last_hidden_state, pooler_output (RobertaModel) and the
                        heads' logits (logits, start_logits, end_logits)
  tokens.json           {"texts": {text: ids}, "pairs": [[a, b, ids]]}: AutoTokenizer's ids,
                        special tokens included, on the tokenizer folder bert_tf's export writes
                        (bert_tf.hf.tokenizer_files.write_hub_bpe_files) from the committed
                        tests/data/roberta_tokenizer/vocab.json and merges.txt, and the class
                        AutoTokenizer chose
  versions.json         torch and transformers versions

--check (needs TensorFlow too, from the system site packages): imports each recorded snapshot
with `python -m bert_tf.hf import`, compares our forward with the recorded outputs, exports the
import back, compares the tensors, loads the export in Transformers (its class) and compares
its outputs with the recorded ones, and reads the export's tokenizer files with AutoTokenizer;
then exports random checkpoints of ours (pretraining, classifier, SQuAD, tagging, encoder) and
compares Transformers' outputs on the exports with ours; prints the largest differences.
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
TOKENIZER_DIR = os.path.join(REPO, "tests", "data", "roberta_tokenizer")
BASE = dict(vocab_size=1036, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=24, max_position_embeddings=14, type_vocab_size=1,
            layer_norm_eps=1e-5, hidden_act="gelu", pad_token_id=1, bos_token_id=0,
            eos_token_id=2)
CASES = {
    # roberta-base's layout: one token type, epsilon 1e-5, the exact GELU; lm_head tied.
    "masked_lm": ("RobertaForMaskedLM", {}),
    # Two token types (the second row used); the pooler is classifier.dense; three labels.
    "classifier": ("RobertaForSequenceClassification",
                   dict(type_vocab_size=2, id2label={0: "pos", 1: "neg", 2: "neu"},
                        label2id={"pos": 0, "neg": 1, "neu": 2})),
    "tagging": ("RobertaForTokenClassification", dict(hidden_act="gelu_new", num_labels=4)),
    "qa": ("RobertaForQuestionAnswering", dict(hidden_act="relu", layer_norm_eps=1e-7)),
    # Padding id 0 (positions from 1), with its pooler.
    "model_pad0": ("RobertaModel", dict(pad_token_id=0, bos_token_id=1)),
}
REAL = [[100, 200, 1035, 300, 2, 2, 400, 500, 2], [600, 700, 2]]


def inputs(pad_token_id, type_vocab_size):
    """input_ids (<s> first, padded to 12 with pad_token_id), token_type_ids, attention_mask."""
    start = 1 if pad_token_id == 0 else 0
    ids = np.full((2, 12), pad_token_id, np.int64)
    types = np.zeros((2, 12), np.int64)
    for i, row in enumerate(REAL):
        ids[i, :len(row) + 1] = [start] + row
    if type_vocab_size > 1:
        types[0, 5:10], types[1, 2:4] = 1, 1
    return ids, types, (ids != pad_token_id).astype(np.int64)


TEXTS = ["Hello world, the cats sat!", " A leading space and  two", "Über naïve <mask> models",
         "emoji 🙂 and 10,000 euros.", "tabs\tand\nnewlines", "<s>special</s> in text",
         "It's a dog's life; isn't it?"]
PAIRS = [("The first text.", "And the second one"), ("<mask> here", " there")]


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


def _outputs(model, ids, types, mask):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types),
                    attention_mask=torch.tensor(mask))
        base = model if isinstance(model, transformers.RobertaModel) else model.roberta
        encoded = base(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types),
                       attention_mask=torch.tensor(mask))
    arrays = {"last_hidden_state": encoded.last_hidden_state.numpy()}
    if encoded.pooler_output is not None:
        arrays["pooler_output"] = encoded.pooler_output.numpy()
    for key in ("logits", "start_logits", "end_logits"):
        if getattr(out, key, None) is not None:
            arrays[key] = getattr(out, key).numpy()
    return arrays


def _tokenizer_folder(folder):
    """The tokenizer files bert_tf's export writes, from the committed vocabulary."""
    from bert_tf.hf.tokenizer_files import write_hub_bpe_files
    from bert_tf.roberta.tokenization import SPECIAL_TOKENS

    files = {}
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(TOKENIZER_DIR, name), "rb") as f:
            files[name] = f.read()
    write_hub_bpe_files(folder, files["vocab.json"], files["merges.txt"], 12,
                        "RobertaTokenizer", SPECIAL_TOKENS)


def _one_entry_a_line(tokens):
    """tokens.json's text: each text's (each pair's) ids on one line."""
    def dump(value):
        return json.dumps(value, ensure_ascii=False)

    texts = ",\n".join(f"  {dump(t)}: {dump(ids)}" for t, ids in tokens["texts"].items())
    pairs = ",\n".join(f"  {dump(p)}" for p in tokens["pairs"])
    return (f'{{"class": {dump(tokens["class"])},\n "texts": {{\n{texts}\n }},\n'
            f' "pairs": [\n{pairs}\n ]}}\n')


def record():
    torch.manual_seed(0)
    for case, (arch, overrides) in CASES.items():
        config = transformers.RobertaConfig(**{**BASE, **overrides}, architectures=[arch])
        model = getattr(transformers, arch)(config).eval()
        _draw(model, seed=len(case))
        folder = os.path.join(HERE, case)
        shutil.rmtree(folder, ignore_errors=True)
        model.save_pretrained(folder)
        ids, types, mask = inputs(config.pad_token_id, config.type_vocab_size)
        arrays = dict(input_ids=ids, token_type_ids=types, attention_mask=mask,
                      **_outputs(model, ids, types, mask))
        np.savez(os.path.join(folder, "outputs.npz"), **arrays)
        print(case, arch, sorted(os.listdir(folder)), sorted(arrays))
    with tempfile.TemporaryDirectory() as tmp:
        _tokenizer_folder(tmp)
        tokenizer = transformers.AutoTokenizer.from_pretrained(tmp)
        tokens = {"class": type(tokenizer).__name__,
                  "texts": {text: tokenizer(text)["input_ids"] for text in TEXTS},
                  "pairs": [[a, b, tokenizer(a, b)["input_ids"]] for a, b in PAIRS]}
    with open(os.path.join(HERE, "tokens.json"), "w", encoding="utf-8") as f:
        f.write(_one_entry_a_line(tokens))
    with open(os.path.join(HERE, "versions.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__}, f)


def _log_softmax(logits):
    logits = logits.astype(np.float64)
    logits -= logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


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
    from bert_tf.bert.pretraining import BertPretrainingModel
    from bert_tf.checkpoints import load_original_checkpoint
    from bert_tf.families import read_config

    worst = {}
    for case, (arch, _) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            snap = os.path.join(tmp, "snap")
            shutil.copytree(os.path.join(HERE, case), snap,
                            ignore=shutil.ignore_patterns("outputs.npz"))
            want = dict(np.load(os.path.join(HERE, case, "outputs.npz")))
            pad = int(json.load(open(os.path.join(snap, "config.json")))["pad_token_id"])
            vocab = json.load(open(os.path.join(TOKENIZER_DIR, "vocab.json"), encoding="utf-8"))
            if pad == 0:
                vocab["<s>"], vocab["<pad>"] = vocab["<pad>"], vocab["<s>"]
            with open(os.path.join(snap, "vocab.json"), "w", encoding="utf-8") as f:
                json.dump(vocab, f, ensure_ascii=False)
            shutil.copy(os.path.join(TOKENIZER_DIR, "merges.txt"), snap)
            print(_bridge("import", f"--hf_dir={snap}", f"--output_dir={tmp}/google"))
            feats = {"input_ids": want["input_ids"], "input_mask": want["attention_mask"],
                     "segment_ids": want["token_type_ids"]}
            if arch == "RobertaForMaskedLM":
                model = BertPretrainingModel(read_config(f"{tmp}/google/bert_config.json"))
                load_original_checkpoint(model, f"{tmp}/google")
                positions = np.tile(np.arange(want["input_ids"].shape[1]), (2, 1))
                ours = model(dict(feats, masked_lm_positions=positions))
                log_probs = _log_softmax(want["logits"])
                worst[f"{case} mlm_log_probs"] = np.abs(
                    ours["mlm_log_probs"].numpy().reshape(log_probs.shape) - log_probs).max()
            elif arch == "RobertaModel":
                ours = bert_tf.families.get("roberta").encoder.from_pretrained(f"{tmp}/google")(
                    feats)
            else:
                ours = bert_tf.BertTaskModel.from_pretrained(f"{tmp}/google")(feats)
            for key in ("logits", "start_logits", "end_logits"):
                if key in want and arch != "RobertaForMaskedLM":
                    worst[f"{case} {key}"] = np.abs(ours[key].numpy() - want[key]).max()
            worst[f"{case} sequence_output"] = np.abs(
                ours["sequence_output"].numpy() - want["last_hidden_state"]).max()
            if "pooler_output" in want:
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
            again = _outputs(auto, want["input_ids"], want["token_type_ids"],
                             want["attention_mask"])
            for key, value in again.items():
                worst[f"{case} transformers(export) {key}"] = np.abs(value - want[key]).max()
            tok = transformers.AutoTokenizer.from_pretrained(os.path.join(tmp, "back"))
            print(f"{case}: AutoTokenizer -> {type(tok).__name__}; ids of TEXTS[2]: "
                  f"{tok(TEXTS[2])['input_ids']}")
            print(f"{case}: id2label {auto.config.id2label}, hidden_act {auto.config.hidden_act}, "
                  f"layer_norm_eps {auto.config.layer_norm_eps}, pad_token_id "
                  f"{auto.config.pad_token_id}")
    worst.update(_check_our_checkpoints())
    for key, value in worst.items():
        print(f"max |difference| {key}: {value:.3g}")


def _check_our_checkpoints():
    """Random checkpoints of ours (each kind), exported: Transformers' outputs on the export
    against our TensorFlow outputs."""
    import bert_tf
    from bert_tf.bert.pretraining import BertPretrainingModel
    from bert_tf.checkpoints import save_original_checkpoint
    from bert_tf.heads import FINE_TUNING_HEADS
    from bert_tf.roberta.config import RobertaConfig
    from bert_tf.roberta.model import RobertaModel

    worst = {}
    kinds = {"pretraining": "RobertaForMaskedLM", "classifier": "RobertaForSequenceClassification",
             "squad": "RobertaForQuestionAnswering", "tagging": "RobertaForTokenClassification",
             "encoder": "RobertaModel"}
    for kind, arch in kinds.items():
        config = RobertaConfig(vocab_size=1036, hidden_size=16, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=24,
                               max_position_embeddings=14, type_vocab_size=2,
                               hidden_act={"squad": "relu", "tagging": "gelu"}.get(
                                   kind, "gelu_exact"))
        if kind == "pretraining":
            model = BertPretrainingModel(config)
        elif kind == "encoder":
            model = RobertaModel(config)
        else:
            head = FINE_TUNING_HEADS[kind]
            model = bert_tf.BertTaskModel(config, head.build(config, 3))
        rng = np.random.default_rng(len(kind))
        for variable in model.weights:
            variable.assign(rng.normal(0, 0.3, variable.shape).astype(np.float32))
        ids, types, mask = inputs(1, 2)
        feats = {"input_ids": ids, "input_mask": mask, "segment_ids": types}
        with tempfile.TemporaryDirectory() as tmp:
            save_original_checkpoint(model, os.path.join(tmp, "run", "model.ckpt-1"))
            for name in ("vocab.json", "merges.txt"):
                shutil.copy(os.path.join(TOKENIZER_DIR, name), os.path.join(tmp, "run"))
            print(_bridge("export", f"--checkpoint={tmp}/run", f"--output_dir={tmp}/hub"))
            auto = getattr(transformers, arch).from_pretrained(os.path.join(tmp, "hub")).eval()
            theirs = _outputs(auto, ids, types, mask)
        if kind == "pretraining":
            positions = np.tile(np.arange(ids.shape[1]), (2, 1))
            ours = model(dict(feats, masked_lm_positions=positions))
            log_probs = _log_softmax(theirs["logits"])
            worst[f"ours {kind} mlm_log_probs"] = np.abs(
                ours["mlm_log_probs"].numpy().reshape(log_probs.shape) - log_probs).max()
        else:
            ours = model(feats)
            for key in ("logits", "start_logits", "end_logits"):
                if key in theirs:
                    worst[f"ours {kind} {key}"] = np.abs(ours[key].numpy() - theirs[key]).max()
        worst[f"ours {kind} sequence_output"] = np.abs(
            ours["sequence_output"].numpy() - theirs["last_hidden_state"]).max()
        if "pooler_output" in theirs:
            worst[f"ours {kind} pooled_output"] = np.abs(
                ours["pooled_output"].numpy() - theirs["pooler_output"]).max()
    return worst


if __name__ == "__main__":
    if "--check" in sys.argv:
        check()
    else:
        record()
