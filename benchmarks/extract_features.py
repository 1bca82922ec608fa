"""extract_features.py: ours against the original's main loop, on the same lines and model.

  python3 benchmarks/extract_features.py --model=golden --num_lines=10000
  python3 benchmarks/extract_features.py --model=base --num_lines=100

The BERT-Base run uses 100 lines: with 4 layers of 768 values per token its output is already
about 2 MB per line (208 MB), and each side takes minutes on a shared 2-core machine.

Lines are random spans of 5-60 words of ../shared/data/sample_text.txt (seeded), a third of
them pairs "a ||| b". Models: `golden` = ../shared/golden/model (H=48, L=3, max_seq_length 64);
`base` = a BERT-Base-shaped checkpoint with random weights (H=768, L=12, the real uncased vocab),
written once to --work_dir. Each side runs in its own process and is timed from reading the
input to the closed output file (model construction and checkpoint loading included, the
TensorFlow import not). The original runs its unmodified `main` with the CPU stand-in for
TPUEstimator of tests/data/extract_features/make_expected.py (TF 2.21 has no Estimator).
Both outputs are then compared: same lines, tokens and layer indexes, values within 1e-5.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from common import BERT_BASE, cpu_description, print_table  # noqa: E402


def make_lines(path, num_lines, seed=0):
    with open(os.path.join(SHARED, "data", "sample_text.txt"), encoding="utf-8") as f:
        words = f.read().split()
    rng = random.Random(seed)

    def span():
        n = rng.randint(5, 60)
        start = rng.randrange(len(words) - n)
        return " ".join(words[start:start + n])

    with open(path, "w", encoding="utf-8") as f:
        for i in range(num_lines):
            f.write(f"{span()} ||| {span()}\n" if i % 3 == 0 else span() + "\n")


def make_base_model(work_dir):
    """A BERT-Base-shaped checkpoint with random weights (written once)."""
    prefix = os.path.join(work_dir, "base", "bert_model.ckpt")
    config_file = os.path.join(work_dir, "base", "bert_config.json")
    if not os.path.exists(prefix + ".index"):
        from bert_tf.checkpoints import save_original_checkpoint
        from bert_tf.bert.config import BertConfig
        from bert_tf.bert.model import BertModel

        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        config = BertConfig.from_dict(BERT_BASE)
        save_original_checkpoint(BertModel(config), prefix)
        config.to_json_file(config_file)
    return config_file, prefix, os.path.join(SHARED, "data", "uncased_vocab.txt")


def run_ours(flags):
    from bert_tf.feature_extraction import ExtractFeaturesOptions, run_extract_features

    start = time.perf_counter()
    run_extract_features(ExtractFeaturesOptions(**flags))
    return time.perf_counter() - start


def run_original(flags, original_repo):
    sys.path.insert(0, os.path.join(ROOT, "tests", "data", "extract_features"))
    import make_expected  # the Estimator stand-in
    import tensorflow

    from tools.original import load_original_module

    orig = load_original_module(original_repo, "extract_features")
    tensorflow.compat.v1.disable_v2_behavior()
    tensorflow.compat.v1.logging.set_verbosity(tensorflow.compat.v1.logging.WARN)
    orig.tf.contrib.tpu = make_expected._estimator_stand_in(orig.tf)
    if not hasattr(orig.tf, "estimator"):
        import types
        orig.tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(PREDICT="infer"))
    orig.tf.logging.set_verbosity = lambda level: None  # keep its per-example logging quiet
    orig.FLAGS(["extract_features"] + [f"--{k}={v}" for k, v in flags.items()
                                       if k not in ("mixed_precision", "progress_seconds")])
    start = time.perf_counter()
    orig.main(None)
    return time.perf_counter() - start


def compare(ours_path, theirs_path, tolerance=1e-5):
    """(lines, identical lines, max |difference|); raises AssertionError on any mismatch."""
    lines = identical = 0
    worst = 0.0
    with open(ours_path) as a, open(theirs_path) as b:
        for x, y in zip(a, b, strict=True):
            lines += 1
            identical += x == y
            if x == y:
                continue
            ox, oy = json.loads(x), json.loads(y)
            assert ox["linex_index"] == oy["linex_index"]
            for fx, fy in zip(ox["features"], oy["features"], strict=True):
                assert fx["token"] == fy["token"], (fx["token"], fy["token"])
                for lx, ly in zip(fx["layers"], fy["layers"], strict=True):
                    assert lx["index"] == ly["index"]
                    worst = max(worst, max(abs(u - v) for u, v in zip(lx["values"], ly["values"],
                                                                      strict=True)))
    assert worst <= tolerance, worst
    return lines, identical, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["golden", "base"], default="golden")
    parser.add_argument("--num_lines", type=int, default=10000)
    parser.add_argument("--layers", default=None, help="default: -1,-2,-3 (golden), -1,-2,-3,-4")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="default: 64 (golden, its position table), 128")
    parser.add_argument("--original_repo", default="/tmp/orig_bert")
    parser.add_argument("--work_dir", default="/tmp/bench_extract_features")
    parser.add_argument("--side", choices=["ours", "original"], help=argparse.SUPPRESS)
    parser.add_argument("--flags", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.side:  # a child process: run one side, print its seconds
        flags = json.loads(args.flags)
        seconds = run_ours(flags) if args.side == "ours" else run_original(flags,
                                                                           args.original_repo)
        print(json.dumps({"seconds": seconds}))
        return

    os.makedirs(args.work_dir, exist_ok=True)
    input_file = os.path.join(args.work_dir, f"lines_{args.num_lines}.txt")
    make_lines(input_file, args.num_lines)
    if args.model == "golden":
        model_dir = os.path.join(SHARED, "golden", "model")
        config_file, checkpoint, vocab = (os.path.join(model_dir, "bert_config.json"),
                                          os.path.join(model_dir, "bert_model.ckpt"),
                                          os.path.join(model_dir, "vocab.txt"))
        layers, max_seq_length = args.layers or "-1,-2,-3", args.max_seq_length or 64
    else:
        config_file, checkpoint, vocab = make_base_model(args.work_dir)
        layers, max_seq_length = args.layers or "-1,-2,-3,-4", args.max_seq_length or 128
    outputs, seconds, cpu = {}, {}, {}
    for side in ("original", "ours"):
        outputs[side] = os.path.join(args.work_dir, f"{side}.jsonl")
        flags = dict(input_file=input_file, output_file=outputs[side], vocab_file=vocab,
                     bert_config_file=config_file, init_checkpoint=checkpoint, layers=layers,
                     max_seq_length=max_seq_length, batch_size=args.batch_size,
                     do_lower_case=True)
        env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        result = subprocess.run(
            [sys.executable, os.path.abspath(__file__), f"--side={side}",
             f"--flags={json.dumps(flags)}", f"--original_repo={args.original_repo}"],
            capture_output=True, text=True, env=env)
        if result.returncode:
            sys.exit(f"{side} failed:\n{result.stderr[-3000:]}")
        seconds[side] = json.loads(result.stdout.strip().splitlines()[-1])["seconds"]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[side] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lines, identical, worst = compare(outputs["ours"], outputs["original"])
    size = os.path.getsize(outputs["ours"]) / 1e6
    print(f"CPU: {cpu_description()}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (machine shared with other "
          "sessions)")
    print(f"model: {args.model} ({config_file}); {args.num_lines} lines; --layers={layers} "
          f"--max_seq_length={max_seq_length} --batch_size={args.batch_size}; output "
          f"{size:.1f} MB")
    print(f"outputs agree: {lines} lines, same tokens and indexes, {identical} lines "
          f"byte-identical, max |value difference| {worst:.1e}\n")
    rows = [[side, f"{seconds[side]:.1f}", f"{args.num_lines / seconds[side]:.1f}",
             f"{seconds['original'] / seconds[side]:.2f}x", f"{cpu[side]:.1f}"]
            for side in ("original", "ours")]
    print_table(["implementation", "seconds", "lines/s", "speed vs original",
                 "CPU seconds (whole process)"], rows)


if __name__ == "__main__":
    main()
