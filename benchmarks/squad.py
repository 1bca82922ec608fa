"""Benchmark: SQuAD data and post-processing against the original run_squad.py, same run.

Builds (once, cached in --workdir) a SQuAD-format file of real English text: paragraphs of
consecutive sentences from ../shared/data/sample_text.txt and the text Debian installs
(/usr/share/doc changelogs, READMEs, NEWS, copyright files, /usr/share/common-licenses),
60-400 words each, five questions per paragraph whose answers are real spans (1-4 words of one
of its sentences; the question is that sentence with the span replaced by "what"); with
--version_2 every fifth question is unanswerable (a sentence of another paragraph).

Then, for the original and for bert_tf, each in its own process (its peak RSS measured apart),
the steps of run_squad.py with the default flags (max_seq_length 384, doc_stride 128,
max_query_length 64, n_best_size 20, max_answer_length 30, uncased vocab):

  features:     read_squad_examples (train), Random(12345) shuffle, convert_examples_to_features
                into train.tf_record; read_squad_examples (predict), convert into
                eval.tf_record keeping the features in memory;
  predictions:  write_predictions with seeded random float32 logits (the same for both sides,
                made before the clock starts; see `_random_results`).

It prints seconds per step, the ratios, peak RSS, and whether the outputs are identical (every
TFRecord record's parsed features; the three JSON files byte for byte).

    python3 benchmarks/squad.py --original_repo=/tmp/orig_bert [--version_2]

  model:        BERT-Base's SQuAD training step at seq 384 (--batch_size, default 2; float32,
                dropout 0.1, random weights, one fixed synthetic batch, no checkpoint writes):
                bert_tf's Trainer + SquadTask against the original's model_fn graph
                (create_model + its loss + create_optimizer); median and fastest seconds per
                step of --model_steps after --model_warmup_steps.

    python3 benchmarks/squad.py --original_repo=/tmp/orig_bert --steps=model --model_steps=3

Adding a step: write `step_<name>(ctx)` below, add it to STEPS; `--steps` selects steps.
"""

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH = 384, 128, 64
N_BEST_SIZE, MAX_ANSWER_LENGTH = 20, 30
LOGIT_SEED = 1234


# --- data ------------------------------------------------------------------------------------

def _sentence_documents(max_sentences):
    import pretraining_corpus  # a sibling script: this folder is first on sys.path

    docs, doc = [], []
    with open(SHARED / "data" / "sample_text.txt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                doc.append(line.strip())
            elif doc:
                docs.append(doc)
                doc = []
    if doc:
        docs.append(doc)
    total = sum(map(len, docs))
    for text in pretraining_corpus._debian_docs():
        for doc in pretraining_corpus._documents(text):
            docs.append(doc)
            total += len(doc)
            if total >= max_sentences:
                return docs
    return docs


def build_squad_file(path, num_questions, version_2, seed=0):
    """Writes a SQuAD JSON file of >= num_questions questions; returns (paragraphs, questions)."""
    rng = random.Random(seed)
    docs = _sentence_documents(num_questions * 4)
    paragraphs = []
    for doc in docs:
        i = 0
        while i < len(doc):
            target = rng.randint(60, 400)
            sentences, words = [], 0
            while i < len(doc) and words < target:
                sentences.append(doc[i])
                words += len(doc[i].split())
                i += 1
            if words >= 40:
                paragraphs.append(sentences)
    rng.shuffle(paragraphs)
    data, count = [], 0
    for p_index, sentences in enumerate(paragraphs):
        if count >= num_questions:
            break
        context = " ".join(sentences)
        starts = [0]
        for s in sentences[:-1]:
            starts.append(starts[-1] + len(s) + 1)
        qas = []
        for q in range(5):
            qid = f"p{p_index}q{q}"
            if version_2 and q == 4:
                other = paragraphs[(p_index + 1) % len(paragraphs)]
                qas.append({"id": qid, "question": rng.choice(other)[:200] + "?",
                            "answers": [], "is_impossible": True})
                continue
            s_index = rng.randrange(len(sentences))
            sentence = sentences[s_index]
            words = [m for m in re.finditer(r"\S+", sentence)]
            if len(words) < 3:
                continue
            first = rng.randrange(len(words))
            last = min(len(words) - 1, first + rng.randint(0, 3))
            a_start, a_end = words[first].start(), words[last].end()
            question = " ".join(w.group() for w in words[:first]) + " what " + " ".join(
                w.group() for w in words[last + 1:])
            qa = {"id": qid, "question": " ".join(question.split()[:40]) + "?",
                  "answers": [{"text": sentence[a_start:a_end],
                               "answer_start": starts[s_index] + a_start}]}
            if version_2:
                qa["is_impossible"] = False
            qas.append(qa)
        count += len(qas)
        data.append({"title": f"p{p_index}", "paragraphs": [{"context": context, "qas": qas}]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "v2.0" if version_2 else "1.1", "data": data}, f)
    return len(data), count


# --- worker (one side, one process) ------------------------------------------------------------

class Side:
    """The functions of one implementation, behind the same names."""

    def __init__(self, name, original_repo, vocab_file, version_2):
        self.name = name
        if name == "original":
            from tools.original import load_original_module

            m = load_original_module(original_repo, "run_squad")
            m.FLAGS(["prog", "--vocab_file=x", "--bert_config_file=x", "--output_dir=x",
                     f"--version_2_with_negative={version_2}"])
            self.module = m
            self.tokenizer = m.tokenization.FullTokenizer(vocab_file, do_lower_case=True)
            self.read = m.read_squad_examples
            self.convert = m.convert_examples_to_features
            self.writer = m.FeatureWriter
            self.raw_result = m.RawResult
            self.write_predictions = m.write_predictions
        else:
            from bert_tf.evaluation import squad_predictions
            from bert_tf.data import squad
            from bert_tf.bert.tokenization import FullTokenizer

            self.module = None
            self.tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
            self.read = lambda path, is_training: squad.read_squad_examples(
                path, is_training, version_2_with_negative=version_2)
            self.convert = squad.convert_examples_to_features
            self.writer = squad.FeatureWriter
            self.raw_result = squad_predictions.RawResult
            self.write_predictions = lambda *a: squad_predictions.write_predictions(
                *a, version_2_with_negative=version_2)


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def step_features(ctx):
    side, out = ctx["side"], ctx["out"]
    examples = side.read(ctx["data"], True)
    random.Random(12345).shuffle(examples)
    writer = side.writer(os.path.join(out, "train.tf_record"), True)
    side.convert(examples, side.tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, True,
                 writer.process_feature)
    writer.close()
    ctx["num_train_examples"], ctx["num_train_features"] = len(examples), writer.num_features
    del examples
    ctx["eval_examples"] = side.read(ctx["data"], False)
    writer = side.writer(os.path.join(out, "eval.tf_record"), False)
    features = ctx["eval_features"] = []

    def append_feature(feature):
        features.append(feature)
        writer.process_feature(feature)

    side.convert(ctx["eval_examples"], side.tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE,
                 MAX_QUERY_LENGTH, False, append_feature)
    writer.close()


def _random_results(side, features):
    """float32 logits ~ N(0, 2), +3 on the window's document positions (where a trained model
    puts its mass; without it some 2.0 examples keep no non-null span among the top 20 of 384
    positions, on which the original crashes), as Python floats like the original's main."""
    import numpy as np

    rng = np.random.RandomState(LOGIT_SEED)
    logits = rng.normal(0.0, 2.0, size=(len(features), 2, MAX_SEQ_LENGTH))
    for row, feature in zip(logits, features):
        row[:, list(feature.token_to_orig_map)] += 3.0
    logits = logits.astype(np.float32)
    return [side.raw_result(f.unique_id, row[0].tolist(), row[1].tolist())
            for f, row in zip(features, logits)]


def prepare_predictions(ctx):
    ctx["results"] = _random_results(ctx["side"], ctx["eval_features"])


def step_predictions(ctx):
    out = ctx["out"]
    ctx["side"].write_predictions(
        ctx["eval_examples"], ctx["eval_features"], ctx["results"], N_BEST_SIZE,
        MAX_ANSWER_LENGTH, True, os.path.join(out, "predictions.json"),
        os.path.join(out, "nbest_predictions.json"), os.path.join(out, "null_odds.json"))


def synthetic_training_batch(batch_size, seq_length=MAX_SEQ_LENGTH, vocab_size=30522, seed=0):
    """One random SQuAD training batch in the records' layout (int32): a max_query_length
    question (segment 0) then the window (segment 1), no padding, random answer spans."""
    import numpy as np

    rng = np.random.RandomState(seed)
    starts = rng.randint(MAX_QUERY_LENGTH + 2, seq_length - 10, batch_size)
    return {
        "unique_ids": np.arange(1000000000, 1000000000 + batch_size, dtype=np.int32),
        "input_ids": rng.randint(0, vocab_size, (batch_size, seq_length)).astype(np.int32),
        "input_mask": np.ones((batch_size, seq_length), np.int32),
        "segment_ids": np.repeat((np.arange(seq_length) >= MAX_QUERY_LENGTH + 2)[None].astype(
            np.int32), batch_size, 0),
        "start_positions": starts.astype(np.int32),
        "end_positions": (starts + rng.randint(0, 10, batch_size)).astype(np.int32),
    }


def step_model(ctx):
    """BERT-Base's SQuAD training step (random weights, dropout 0.1, float32, fixed batch):
    bert_tf's Trainer + SquadTask, or the original's model_fn (create_model in training mode,
    its loss and create_optimizer) in a tf.compat.v1 session. Records the median and fastest
    seconds per step of --model_steps steps after --model_warmup_steps."""
    from common import BERT_BASE, original_step, time_interleaved, trainer_step

    args, side = ctx["args"], ctx["side"]
    batch = synthetic_training_batch(args.batch_size)
    if side.module is None:
        from bert_tf.bert.config import BertConfig
        from bert_tf.tasks.squad import SquadTask

        step = trainer_step(BertConfig.from_dict(BERT_BASE), SquadTask(MAX_SEQ_LENGTH), batch)
    else:
        import types

        m = side.module
        # TensorFlow 2 has neither the Estimator nor tf.contrib.tpu: model_fn needs only the
        # mode names and a holder of its spec.
        m.tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(
            TRAIN="train", EVAL="eval", PREDICT="infer"))
        m.tf.contrib.tpu = types.SimpleNamespace(TPUEstimatorSpec=lambda **kwargs: kwargs)

        def build_train_op(features):
            model_fn = m.model_fn_builder(
                m.modeling.BertConfig.from_dict(BERT_BASE), None, 5e-5, 10**6, 100,
                use_tpu=False, use_one_hot_embeddings=False)
            spec = model_fn(features, None, m.tf.estimator.ModeKeys.TRAIN, {})
            return spec["loss"], spec["train_op"]

        step = original_step(build_train_op, batch)
    ctx["model_step_median"], ctx["model_step_best"] = time_interleaved(
        {side.name: step}, args.model_steps, args.model_warmup_steps)[side.name]


# name -> (untimed preparation or None, timed step).
STEPS = {
    "features": (None, step_features),
    "model": (None, step_model),
    "predictions": (prepare_predictions, step_predictions),
}


def worker(args):
    import logging

    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    logging.getLogger("absl").setLevel(logging.WARNING)
    start, cpu_start = time.perf_counter(), time.process_time()
    side = Side(args.side, args.original_repo, args.vocab_file, args.version_2)
    report = {"import_s": time.perf_counter() - start,
              "import_cpu": time.process_time() - cpu_start, "rss_after_import": _peak_rss()}
    ctx = {"side": side, "data": args.data, "out": args.out, "args": args}
    for name in args.steps.split(","):
        prepare, step = STEPS[name]
        if prepare:
            prepare(ctx)
        start, cpu_start = time.perf_counter(), time.process_time()
        step(ctx)
        report[f"{name}_s"] = time.perf_counter() - start
        report[f"{name}_cpu"] = time.process_time() - cpu_start
        report[f"{name}_peak_rss"] = _peak_rss()
    report.update((k, ctx[k]) for k in ("num_train_examples", "num_train_features",
                                        "model_step_median", "model_step_best") if k in ctx)
    if "eval_features" in ctx:
        report["num_eval_examples"] = len(ctx["eval_examples"])
        report["num_eval_features"] = len(ctx["eval_features"])
    print("REPORT " + json.dumps(report), flush=True)


# --- parent --------------------------------------------------------------------------------------

def run_side(args, side, out):
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, __file__, "--_worker", "--side", side, "--data", args.data,
           "--out", out, "--steps", args.steps, "--vocab_file", args.vocab_file,
           "--batch_size", str(args.batch_size), "--model_steps", str(args.model_steps),
           "--model_warmup_steps", str(args.model_warmup_steps)]
    if args.original_repo:
        cmd += ["--original_repo", args.original_repo]
    if args.version_2:
        cmd.append("--version_2")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            text=True)
    output = proc.communicate()[0]
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{side} failed:\n{output[-3000:]}")
    report = json.loads(next(line[7:] for line in output.splitlines()
                             if line.startswith("REPORT ")))
    report["wall_s"] = wall
    return report


def compare_outputs(ours, original):
    """{file: "identical" or what differs}."""
    from tensorflow.core.example import example_pb2  # pylint: disable=g-import-not-at-top

    from pretraining_data import read_records  # a sibling script

    verdict = {}
    for name in ("train.tf_record", "eval.tf_record"):
        a_path, b_path = os.path.join(ours, name), os.path.join(original, name)
        if not (os.path.exists(a_path) and os.path.exists(b_path)):
            continue
        a, b = list(read_records(a_path)), list(read_records(b_path))
        diff = sum(example_pb2.Example.FromString(x) != example_pb2.Example.FromString(y)
                   for x, y in zip(a, b)) + abs(len(a) - len(b))
        verdict[name] = f"{len(a):,} records " + ("identical" if not diff else
                                                   f"{diff} DIFFERENT")
    for name in ("predictions.json", "nbest_predictions.json", "null_odds.json"):
        a_path, b_path = os.path.join(ours, name), os.path.join(original, name)
        if os.path.exists(a_path) or os.path.exists(b_path):
            same = (os.path.exists(a_path) and os.path.exists(b_path) and
                    open(a_path, "rb").read() == open(b_path, "rb").read())
            verdict[name] = "identical bytes" if same else "DIFFERENT"
    return verdict


def cpu_header():
    model = flags = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "?":
                    model = value.strip()
                elif key.strip() == "flags" and flags == "?":
                    flags = value.strip()
    except OSError:
        pass
    wanted = [f for f in flags.split() if f.startswith(("avx", "sse4", "amx", "fma"))]
    return f"CPU: {model}, {os.cpu_count()} logical CPUs; flags: {' '.join(wanted)}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", help="a copy of google-research/bert (baseline)")
    parser.add_argument("--vocab_file", default=str(SHARED / "data" / "uncased_vocab.txt"))
    parser.add_argument("--num_questions", type=int, default=10000)
    parser.add_argument("--version_2", action="store_true", help="SQuAD 2.0 data and flags")
    parser.add_argument("--data", help="a SQuAD file to use instead of building one")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma list of {', '.join(STEPS)}")
    parser.add_argument("--batch_size", type=int, default=2, help="model step: batch size")
    parser.add_argument("--model_steps", type=int, default=10,
                        help="model step: timed training steps (the median is reported)")
    parser.add_argument("--model_warmup_steps", type=int, default=2,
                        help="model step: untimed training steps first")
    parser.add_argument("--workdir", help="where data, outputs go (default: a temp dir)")
    parser.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._worker:
        return worker(args)

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_squad_"))
    workdir.mkdir(parents=True, exist_ok=True)
    if not args.data:
        args.data = str(workdir / f"squad_{'v2' if args.version_2 else 'v1'}_"
                                  f"{args.num_questions}.json")
        if not os.path.exists(args.data):
            paragraphs, questions = build_squad_file(args.data, args.num_questions,
                                                     args.version_2)
            print(f"built {args.data}: {paragraphs:,} paragraphs, {questions:,} questions")
    print(cpu_header())
    print(f"data: {args.data} ({os.path.getsize(args.data) / 1e6:.1f} MB); SQuAD "
          f"{'2.0' if args.version_2 else '1.1'}; max_seq_length {MAX_SEQ_LENGTH}, doc_stride "
          f"{DOC_STRIDE}, max_query_length {MAX_QUERY_LENGTH}, n_best_size {N_BEST_SIZE}")
    reports = {}
    sides = (["original"] if args.original_repo else []) + ["bert_tf"]
    for side in sides:
        reports[side] = run_side(args, side, str(workdir / side))
        model = (f"; model step median {reports[side]['model_step_median']:.3f} s"
                 if "model_step_median" in reports[side] else "")
        print(f"  {side} done in {reports[side]['wall_s']:.1f} s{model}", flush=True)

    steps = args.steps.split(",")
    ours = reports["bert_tf"]
    if "features" in steps:
        print(f"\nquestions: {ours['num_eval_examples']:,} (predict), train examples "
              f"{ours['num_train_examples']:,} -> {ours['num_train_features']:,} features, "
              f"eval features {ours['num_eval_features']:,}")
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (2 cores shared with "
          "other sessions: above ~1 means competition)")
    print("Wall seconds, and CPU seconds of the process (less sensitive to the other sessions); "
          "peak RSS = the process's peak so far, at the end of the step.")
    print("| step | original s (CPU) | bert_tf s (CPU) | speed-up wall (CPU) | original peak RSS "
          "| bert_tf peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    gib = 2 ** 30
    o = reports.get("original", {})
    nan = float("nan")
    for name in ["import"] + steps:
        wall, cpu = f"{name}_s", f"{name}_cpu"
        rss_key = "rss_after_import" if name == "import" else f"{name}_peak_rss"
        ratio = (f"{o[wall] / ours[wall]:.2f}x ({o[cpu] / ours[cpu]:.2f}x)" if wall in o else "-")
        print(f"| {name} | {o.get(wall, nan):.2f} ({o.get(cpu, nan):.2f}) | {ours[wall]:.2f} "
              f"({ours[cpu]:.2f}) | {ratio} | {o.get(rss_key, nan) / gib:.2f} GiB | "
              f"{ours[rss_key] / gib:.2f} GiB |")
    if "model" in steps:
        o_median, o_best = o.get("model_step_median", nan), o.get("model_step_best", nan)
        median, best = ours["model_step_median"], ours["model_step_best"]
        print(f"\nmodel step: BERT-Base SQuAD training step, seq {MAX_SEQ_LENGTH}, batch "
              f"{args.batch_size}, float32, dropout 0.1, random weights, fixed batch; "
              f"{args.model_steps} timed steps after {args.model_warmup_steps} (the 'model' "
              "row above includes building and warm-up)")
        print("| | original s/step | bert_tf s/step | speed-up | bert_tf sequences/s |")
        print("|---|---:|---:|---:|---:|")
        for label, a, b in (("median", o_median, median), ("fastest", o_best, best)):
            print(f"| {label} | {a:.3f} | {b:.3f} | {a / b:.2f}x | {args.batch_size / b:.2f} |")
    if "original" in reports and {"features", "predictions"} & set(steps):
        print("\noutputs, bert_tf vs original:")
        for name, verdict in compare_outputs(str(workdir / "bert_tf"),
                                             str(workdir / "original")).items():
            print(f"  {name}: {verdict}")
    print(f"outputs: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
