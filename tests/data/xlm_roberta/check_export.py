"""One-off check against Transformers (not a test: CI has no torch): bert_tf's export of random
XLM-R checkpoints (every class) loads in Transformers' XLMRoberta* classes with our outputs, and
AutoTokenizer on the exported folder gives the ids of expected.json.

    /work/hfvenv/bin/python tests/data/xlm_roberta/check_export.py   (from the repository root;
    the export runs in `python3`, the Python that has TensorFlow)

Prints the largest difference of each class's outputs and the tokenizer's mismatches.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODEL = os.path.join(HERE, "sentencepiece.bpe.model")

# Run in the TensorFlow Python: a random checkpoint of `kind`, its outputs on IDS, the export.
OURS = r'''
import json, sys
import numpy as np
sys.path.insert(0, "tests")
from bert_tf import checkpoints
from bert_tf.hf.convert import export_checkpoint
from bert_tf.xlm_roberta.config import XLMRobertaConfig
from test_hf import random_model
kind, out, model_file = sys.argv[1:4]
config = XLMRobertaConfig.from_dict(dict(
    vocab_size=602, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=24, hidden_act="gelu_exact", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=14, type_vocab_size=1,
    initializer_range=0.02, model_type="xlm-roberta"))
model = random_model(kind, config)
ids = np.array([[0, 100, 200, 300, 2, 2, 400, 601, 500, 2, 1, 1],
                [0, 7, 601, 2, 1, 1, 1, 1, 1, 1, 1, 1]])
feats = {"input_ids": ids, "input_mask": (ids != 1).astype(int), "segment_ids": 0 * ids,
         "masked_lm_positions": np.tile(np.arange(12), (2, 1))}
result = model(feats)
outputs = {k: np.asarray(v).tolist() for k, v in result.items()
           if k in ("sequence_output", "mlm_log_probs", "logits", "start_logits", "end_logits")}
prefix = checkpoints.save_original_checkpoint(model, out + "/run/model.ckpt-1")
export_checkpoint(prefix, None, model_file, out + "/hub")
json.dump({"ids": ids.tolist(), "mask": feats["input_mask"].tolist(), "outputs": outputs},
          open(out + "/ours.json", "w"))
'''


def main():
    expected = json.load(open(os.path.join(HERE, "expected.json"), encoding="utf-8"))
    worst = {}
    for kind in ("pretraining", "classifier", "squad", "tagging", "encoder"):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["python3", "-c", OURS, kind, tmp, MODEL], check=True, cwd=REPO,
                           env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
            ours = json.load(open(os.path.join(tmp, "ours.json")))
            config = json.load(open(os.path.join(tmp, "hub", "config.json")))
            cls = getattr(transformers, config["architectures"][0])
            model = cls.from_pretrained(os.path.join(tmp, "hub")).eval()
            with torch.no_grad():
                out = model(input_ids=torch.tensor(ours["ids"]),
                            attention_mask=torch.tensor(ours["mask"]), output_hidden_states=True)
            mask = np.array(ours["mask"], bool)
            diffs = {}
            o = ours["outputs"]
            diffs["sequence_output"] = np.abs(out.hidden_states[-1].numpy()[mask]
                                              - np.array(o["sequence_output"])[mask]).max()
            if "mlm_log_probs" in o:
                theirs = torch.log_softmax(out.logits, -1).numpy().reshape(-1, 602)
                diffs["mlm_log_probs"] = np.abs(theirs[mask.reshape(-1)] - np.array(
                    o["mlm_log_probs"])[mask.reshape(-1)]).max()
            elif "start_logits" in o:
                for key in ("start_logits", "end_logits"):
                    diffs[key] = np.abs(getattr(out, key).numpy()[mask]
                                        - np.array(o[key])[mask]).max()
            elif "logits" in o:
                theirs, mine = out.logits.numpy(), np.array(o["logits"])
                diffs["logits"] = np.abs((theirs[mask] - mine[mask]) if theirs.ndim == 3
                                         else theirs - mine).max()
            worst[config["architectures"][0]] = {k: float(v) for k, v in diffs.items()}
            tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.join(tmp, "hub"))
            bad = [t["name"] for t in expected["texts"]
                   if tokenizer(t["text"], add_special_tokens=False)["input_ids"] != t["fast"]]
            bad += [p["a"] for p in expected["pairs"] if tokenizer(
                p["a"], p["b"], **({} if p["max_length"] is None else dict(
                    truncation=True, max_length=p["max_length"])))["input_ids"]
                != p["fast"]["input_ids"]]
            worst[config["architectures"][0]]["tokenizer_mismatches"] = len(bad)
    print(json.dumps(worst, indent=1))
    print("torch", torch.__version__, "transformers", transformers.__version__)


if __name__ == "__main__":
    sys.exit(main())
