"""Latency and throughput of an exported BERT-Base classifier (strings in, labels out).

  python3 benchmarks/export.py [--seq_length 128] [--seconds 10]

Builds a BERT-Base-shaped classifier with random weights, saves it as a checkpoint, exports it
with `bert_tf.serving.export` (tokenization in the graph, real 30,522-entry uncased vocab from
../shared/data), loads the SavedModel and times its `serving_default` signature on English
sentences: batch 1 latency (median and 90th percentile) and batch 32 throughput. The baseline,
measured in the same run, is the same model called on features already tokenized in Python
(FullTokenizer), i.e. the model alone: the ratio is what in-graph tokenization and the
SavedModel cost on top.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    BERT_BASE, REPO, call_timings, print_machine_header, print_table,
)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.tokenization import FullTokenizer  # noqa: E402
from bert_tf.checkpoints import save_original_checkpoint  # noqa: E402
from bert_tf.data.pairs import pad_to, pair_tokens  # noqa: E402
from bert_tf.layers.heads import ClassifierHead  # noqa: E402
from bert_tf.models import BertTaskModel  # noqa: E402
from bert_tf.serving import export  # noqa: E402

VOCAB_FILE = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")
SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the riverbank this morning.",
    "Unbelievably, the committee postponed its decision until next Thursday afternoon.",
    "She bought three gallons of milk and a loaf of sourdough bread at the market.",
    "Researchers reported that the new vaccine was effective in most of the trials.",
]


def _features(tokenizer, texts, seq_length):
    rows = {"input_ids": [], "input_mask": [], "segment_ids": []}
    for text in texts:
        tokens, segments = pair_tokens(tokenizer.tokenize(text), None, seq_length)
        ids = tokenizer.convert_tokens_to_ids(tokens)
        rows["input_ids"].append(pad_to(ids, seq_length))
        rows["input_mask"].append(pad_to([1] * len(ids), seq_length))
        rows["segment_ids"].append(pad_to(segments, seq_length))
    return {k: tf.constant(v, tf.int32) for k, v in rows.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per row")
    args = parser.parse_args()
    if not os.path.exists(VOCAB_FILE):
        raise SystemExit(f"{VOCAB_FILE} is absent (../shared/data comes with the project)")
    print_machine_header()

    config = BertConfig.from_dict(BERT_BASE)
    model = BertTaskModel(config, ClassifierHead(2, config.hidden_size))
    tokenizer = FullTokenizer(VOCAB_FILE, do_lower_case=True)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = save_original_checkpoint(model, os.path.join(tmp, "ckpt", "model.ckpt"))
        t0 = time.perf_counter()
        module, info = export.build_export("classifier", config, prefix, VOCAB_FILE, True,
                                           args.seq_length, ["neg", "pos"])
        export.save_export(module, info, os.path.join(tmp, "export"))
        export_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        serve = tf.saved_model.load(os.path.join(tmp, "export")).signatures["serving_default"]
        load_seconds = time.perf_counter() - t0
        forward = tf.function(lambda x: model(x, training=False)["probabilities"])
        print(f"BERT-Base classifier, max_seq_length {args.seq_length}; export took "
              f"{export_seconds:.1f} s, loading {load_seconds:.1f} s")
        print()

        rows = []
        for batch in (1, 32):
            texts = [SENTENCES[i % len(SENTENCES)] for i in range(batch)]
            strings = tf.constant(texts)
            empty = tf.constant([""] * batch)

            def exported(strings=strings, empty=empty):
                serve(text_a=strings, text_b=empty)["probabilities"].numpy()

            def python_path(texts=texts):
                forward(_features(tokenizer, texts, args.seq_length)).numpy()

            for name, call in (("export (strings in)", exported),
                               ("Python path: FullTokenizer + model", python_path)):
                times = call_timings(call, args.seconds)
                rows.append([batch, name, f"{np.median(times) * 1e3:.1f}",
                             f"{np.percentile(times, 90) * 1e3:.1f}",
                             f"{batch / np.median(times):.1f}"])
            ratio = float(rows[-2][2]) / float(rows[-1][2])
            rows[-2].append(f"{ratio:.2f}")
            rows[-1].append("1.00")
    print_table(["batch", "path", "median ms/call", "p90 ms/call", "sequences/s",
                 "time vs Python path"], rows)


if __name__ == "__main__":
    main()
