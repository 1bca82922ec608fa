"""Benchmark: classifier feature conversion against the original, measured in the same run.

On a generated MRPC-layout train.tsv of `--pairs` sentence pairs (real English sentences from
what Debian installs, built by benchmarks/pretraining_corpus.py, paired at random, random 0/1
labels), with the uncased BERT vocab and --max_seq_length (128), it runs, each in its own
process:

  1. the original's MrpcProcessor + FullTokenizer + file_based_convert_examples_to_features
     (google-research/bert at --original_repo, through tools.original);
  2. ours: bert_tf.data.classifier_tasks' MrpcProcessor + FullTokenizer + write_classifier_records;

and prints the seconds of the conversion call alone (examples -> TFRecord file), of the whole
process, the peak RSS, the ratios, and whether the two files hold the same records (parsed
features, and our bytes against the original's records re-serialized deterministically).

  python3 benchmarks/classifier_features.py --original_repo=/tmp/orig_bert --pairs=100000
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import pretraining_corpus  # siblings: this folder is first on sys.path
from pretraining_data import compare, measure

REPO = Path(__file__).resolve().parents[1]


def cpu_description():
    """'model name; flags: ...' of the first CPU in /proc/cpuinfo."""
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    return f"{fields.get('model name', '?')}; flags: {fields.get('flags', '?')}"


def make_tsv(path, corpus, pairs, seed=12345):
    """MRPC layout: `Quality  #1 ID  #2 ID  #1 String  #2 String`, a header, `pairs` rows."""
    with open(corpus, encoding="utf-8") as f:
        sentences = [s for s in (line.strip() for line in f) if 4 <= len(s.split()) <= 50]
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for i in range(pairs):
            a, b = rng.choice(sentences), rng.choice(sentences)
            f.write(f"{rng.randrange(2)}\t{2 * i}\t{2 * i + 1}\t{a}\t{b}\n")
    return len(sentences)


def worker(args):
    """One side's conversion in this process; prints a JSON line with its figures."""
    data_dir = os.path.dirname(args.tsv)
    if args.worker == "original":
        from tools.original import load_original_module  # pylint: disable=g-import-not-at-top

        rc = load_original_module(args.original_repo, "run_classifier")
        processor = rc.MrpcProcessor()
        tokenizer = rc.tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
        examples = processor.get_train_examples(data_dir)
        start, start_cpu = time.perf_counter(), time.process_time()
        rc.file_based_convert_examples_to_features(examples, processor.get_labels(),
                                                   args.max_seq_length, tokenizer, args.output)
    else:
        from bert_tf.bert import tokenization  # pylint: disable=g-import-not-at-top
        from bert_tf.data import classifier  # pylint: disable=g-import-not-at-top
        from bert_tf.data.classifier_tasks import get_processor  # pylint: disable=g-import-not-at-top

        processor = get_processor("mrpc")
        tokenizer = tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
        examples = processor.get_train_examples(data_dir)
        start, start_cpu = time.perf_counter(), time.process_time()
        classifier.write_classifier_records(examples, processor.get_labels(),
                                            args.max_seq_length, tokenizer, args.output)
    seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    with open(args.output + ".timing.json", "w") as f:
        json.dump({"convert_seconds": seconds, "convert_cpu": cpu, "examples": len(examples)}, f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--vocab_file",
                        default=str(REPO.parent / "shared" / "data" / "uncased_vocab.txt"))
    parser.add_argument("--corpus", help="sentences, one a line (built from Debian's docs when "
                                         "absent)")
    parser.add_argument("--workdir", help="where data, outputs and logs go (default: temp dir)")
    parser.add_argument("--worker", choices=("original", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--tsv", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_classifier_features_"))
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    corpus = args.corpus or str(workdir / "corpus.txt")
    if not os.path.exists(corpus):
        pretraining_corpus.build_corpus(corpus, 20)
    tsv = workdir / "data" / "train.tsv"
    pool = make_tsv(tsv, corpus, args.pairs)
    print(f"CPU: {cpu_description()}")
    print(f"data: {tsv} ({os.path.getsize(tsv) / 1e6:.1f} MB, {args.pairs:,} pairs drawn from "
          f"{pool:,} sentences); max_seq_length={args.max_seq_length}")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    rows, outputs = {}, {}
    for name in ("original", "ours"):
        outputs[name] = str(workdir / f"{name}.tf_record")
        log = workdir / f"{name}.log"
        wall, rss, _, cpu = measure(
            [sys.executable, __file__, f"--worker={name}", f"--tsv={tsv}",
             f"--output={outputs[name]}", f"--original_repo={args.original_repo}",
             f"--vocab_file={args.vocab_file}", f"--max_seq_length={args.max_seq_length}"],
            log, env)
        with open(outputs[name] + ".timing.json") as f:
            result = json.load(f)
        rows[name] = (result["convert_seconds"], result["convert_cpu"], wall, cpu, rss,
                      result["examples"])
        print(f"  {name}: conversion {result['convert_seconds']:.1f} s", flush=True)

    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (2 cores, shared: "
          "above about 1 means other processes competed)")
    print("| run | conversion s | conversion CPU s | examples/s | process wall s | "
          "process CPU s | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (convert, convert_cpu, wall, cpu, rss, count) in rows.items():
        print(f"| {name} | {convert:.1f} | {convert_cpu:.1f} | {count / convert:,.0f} | "
              f"{wall:.1f} | {cpu:.1f} | {rss / 2**20:,.0f} MiB |")
    original, ours = rows["original"], rows["ours"]
    print()
    print(f"conversion: ours {original[0] / ours[0]:.1f}x faster in wall time (goal >= 5x), "
          f"{original[1] / ours[1]:.1f}x in CPU time; whole process {original[2] / ours[2]:.1f}x;"
          f" peak RSS {ours[4] / original[4]:.2f} of the original's")
    count, feature_diff, byte_diff = compare(outputs["ours"], outputs["original"])
    print(f"records: {count:,} compared, {feature_diff} with different features, {byte_diff} "
          f"with different bytes (after deterministic re-serialization of the original's) -> "
          f"{'IDENTICAL' if feature_diff == byte_diff == 0 else 'DIFFERENT'}")
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
