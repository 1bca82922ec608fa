"""Benchmark: what ALBERT's in-graph `tokenize_with_offsets` costs over its plain ids.

`bert_tf.albert.fast_tokenization.TokenizerModule` gives ids (`__call__`: preprocess_text,
tensorflow-text's FastSentencepieceTokenizer, the digit-comma rule) and, for the SQuAD export,
ids with each piece's bytes of the text (`tokenize_with_offsets`: the same plus tensorflow-text's
SentencepieceTokenizer on the character model and the index arithmetic). Both are timed on the
same batches in alternating turns (`common.timings_interleaved`): sample-text lines (whole
texts) and their words one string each (what the SQuAD export tokenizes: each context word).
Reports median and fastest ms per batch (wall time, and CPU time of the process) and the ratio
offsets / ids.

  python3 benchmarks/albert_offsets.py [--spm_model_file=...] [--batch_size=256] [--steps=20]
"""

import argparse
import os
from pathlib import Path

from common import print_machine_header, print_table, timings_interleaved

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = REPO / "tests" / "data" / "albert_spm" / "albert.model"
SAMPLE_TEXT = REPO.parent / "shared" / "data" / "sample_text.txt"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spm_model_file", default=str(SPM_MODEL))
    parser.add_argument("--text_file", default=str(SAMPLE_TEXT))
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from bert_tf.albert.fast_tokenization import TokenizerModule

    print_machine_header()
    with open(args.text_file, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    words = [w for line in lines for w in line.split()]
    module = TokenizerModule(args.spm_model_file, do_lower_case=True)
    rows = []
    for name, texts in (("sample-text lines", lines), ("their words, one each", words)):
        batch = tf.constant((texts * (args.batch_size // len(texts) + 1))[:args.batch_size])
        pieces = int(tf.size(module(batch).flat_values))
        times = timings_interleaved(
            {"ids": lambda b=batch: module(b).flat_values.numpy(),
             "offsets": lambda b=batch: module.tokenize_with_offsets(b)[2].flat_values.numpy()},
            args.steps, 3)
        ids, offsets = times["ids"], times["offsets"]
        for path, t in (("__call__ (ids)", ids), ("tokenize_with_offsets", offsets)):
            rows.append([name, path, f"{1000 * t['median']:.1f}", f"{1000 * t['fastest']:.1f}",
                         f"{1000 * t['cpu_median']:.1f}", f"{args.batch_size / t['median']:.0f}",
                         f"{t['median'] / ids['median']:.2f}"])
        print(f"{name}: batch {args.batch_size}, {pieces} pieces", flush=True)
    print()
    print_table(["texts", "path", "median ms", "fastest ms", "CPU median ms", "texts/s",
                 "time vs ids"], rows)


if __name__ == "__main__":
    main()
