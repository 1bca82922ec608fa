"""Benchmark: ALBERT on bert_tf against google-research/albert, measured in the same run.

A table per benchmark (`--rows` picks some of `ROWS`):

  data   create_pretraining_data on a corpus of real text (built by
         benchmarks/pretraining_corpus.py from what Debian installs unless --corpus is given),
         SentencePiece (--spm_model_file, default the tests' 2000-piece albert.model; pass the
         released 30k-clean.model for the real one), the original's default flags but
         --dupe_factor (default 2: the original's 40 takes it hours): the original's script,
         imported unmodified and run after `np.random.seed(--numpy_seed)` (it never seeds numpy
         itself), against `python -m bert_tf.albert.create_pretraining_data --numpy_seed=...`.
         Wall time of each process end to end (imports included), CPU time, records written,
         records/s; goal >= 3x. The outputs are compared record by record (the original's
         records re-serialized deterministically: its protobuf map order varies per process).

  step   ALBERT-Base v2's pretraining training step (`ALBERT_BASE`: E 128, H 768, L 12 sharing
         1 group of 1 block, 12 heads, FFN 3072, V 30000, dropout 0), float32, seq 128
         (--step_seq_length), 20 predictions (--max_predictions_per_seq), per batch size of
         --step_batch_sizes, on one fixed random batch: ours is `AlbertPretrainer`'s real
         step (forward, backward, global-norm clipping, LAMB, global_step: its
         make_train_function, one step per call); the original's is its run_pretraining's
         model_fn in TRAIN mode (its modeling, heads and create_optimizer with LAMB) run in a
         tf.compat.v1 session, both with the same schedule (lr 0.00176, 100 warmup steps of
         10**6). Both live in this process (the original's run_pretraining is the one original
         script it loads) and are timed in alternating turns, one step each, so that the load
         of the shared cores falls on both alike: median and fastest s/step (wall time, and
         CPU time of the process, steadier on a loaded machine) and the ratios original / ours
         (goal >= 1.0 in wall time). Batch 32 needs about 8 GB of memory (both models).

  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert
  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert --rows=step --step_steps=20
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pretraining_corpus  # sibling scripts: this folder is first on sys.path
from common import BERT_BASE, print_machine_header, print_table
from pretraining_data import measure, read_records

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = REPO / "tests" / "data" / "albert_spm" / "albert.model"
# albert_base v2's albert_config.json (its keys no code reads left out).
ALBERT_BASE = dict(BERT_BASE, vocab_size=30000, embedding_size=128, num_hidden_groups=1,
                   inner_group_num=1, hidden_dropout_prob=0, attention_probs_dropout_prob=0)
# The schedule both steps run (the original's --learning_rate default).
STEP_SCHEDULE = dict(learning_rate=0.00176, num_train_steps=10**6, num_warmup_steps=100)

_DATA_RUNNER = """\
import sys
import numpy as np
repo, root, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
del sys.argv[1:4]
sys.path.insert(0, root)
from tools.original import load_albert_module
module = load_albert_module(repo, "create_pretraining_data")
module.FLAGS(sys.argv)
np.random.seed(seed)  # the original never seeds numpy; this is the run --numpy_seed reproduces
module.main(None)
"""


def _deterministic(records):
    from tensorflow.core.example import example_pb2  # pylint: disable=import-outside-toplevel

    return [example_pb2.Example.FromString(r).SerializeToString(deterministic=True)
            for r in records]


def bench_data(args, workdir, env):
    """The `data` row(s): [(name, wall s, CPU s, records, note)]."""
    corpus = args.corpus or str(workdir / "corpus.txt")
    if not os.path.exists(corpus):
        size, docs = pretraining_corpus.build_corpus(corpus, args.corpus_mb)
        print(f"built corpus {corpus}: {size / 1e6:.1f} MB, {docs} documents")
    vocab = str(Path(args.spm_model_file).with_suffix(".vocab"))
    common = [f"--input_file={corpus}", f"--vocab_file={vocab}",
              f"--spm_model_file={args.spm_model_file}", f"--dupe_factor={args.dupe_factor}",
              f"--max_seq_length={args.max_seq_length}"]
    print(f"data: corpus {corpus} ({os.path.getsize(corpus) / 1e6:.1f} MB), "
          f"{' '.join(common[1:])}, numpy seed {args.numpy_seed}", flush=True)
    rows = []
    original_out = None
    if args.original_repo:
        runner = workdir / "run_original.py"
        runner.write_text(_DATA_RUNNER)
        original_out = workdir / "original.tfrecord"
        wall, _, _, cpu = measure(
            [sys.executable, str(runner), args.original_repo, str(REPO), str(args.numpy_seed),
             f"--output_file={original_out}", *common], workdir / "original.log", env)
        count = sum(1 for _ in read_records(original_out))
        rows.append(("data: original", wall, cpu, count, ""))
        print(f"  original done in {wall:.1f} s", flush=True)
    ours_out = workdir / "ours.tfrecord"
    wall, _, _, cpu = measure(
        [sys.executable, "-m", "bert_tf.albert.create_pretraining_data",
         f"--output_file={ours_out}", f"--numpy_seed={args.numpy_seed}", *common],
        workdir / "ours.log", env)
    ours = list(read_records(ours_out))
    note = ""
    if original_out:
        theirs = _deterministic(list(read_records(original_out)))
        same = sum(a == b for a, b in zip(ours, theirs))
        identical = same == len(ours) == len(theirs)
        note = (f"{same:,}/{len(theirs):,} records equal the original's -> "
                f"{'IDENTICAL' if identical else 'DIFFERENT'}")
    rows.append(("data: bert_tf", wall, cpu, len(ours), note))
    return rows


def print_data_table(rows):
    print("| run | wall s | CPU s | records | records/s | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, wall, cpu, count, note in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {count:,} | {count / wall:,.1f} | {note} |")
    by_name = {r[0]: r for r in rows}
    if "data: original" in by_name:
        print(f"\ndata: bert_tf vs original: "
              f"{by_name['data: original'][1] / by_name['data: bert_tf'][1]:.2f}x faster "
              "in records/s, wall time (goal >= 3x)")


def our_albert_step(batch, seq_length, max_predictions):
    """bert_tf's step: `AlbertPretrainer` (LAMB, the default --optimizer) on `batch`."""
    from common import train_function_step  # pylint: disable=import-outside-toplevel

    from bert_tf.albert.config import AlbertConfig  # pylint: disable=import-outside-toplevel
    from bert_tf.albert.pretraining_task import (  # pylint: disable=import-outside-toplevel
        AlbertPretrainer, AlbertPretrainingOptions)

    options = AlbertPretrainingOptions(
        input_files=[], output_dir="/nonexistent", max_seq_length=seq_length,
        max_predictions_per_seq=max_predictions, train_batch_size=len(batch["input_ids"]),
        optimizer="lamb", **STEP_SCHEDULE)
    trainer = AlbertPretrainer(AlbertConfig.from_dict(ALBERT_BASE), options)
    return train_function_step(trainer, batch)


def original_albert_step(run_pretraining, batch):
    """The original's float32 step on `batch`: its run_pretraining's model_fn in TRAIN mode
    (`run_pretraining`: the module as tools.original.load_albert_module loads it)."""
    from common import original_step  # pylint: disable=import-outside-toplevel

    rp = run_pretraining
    # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
    rp.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs

    def build_train_op(features):
        model_fn = rp.model_fn_builder(
            rp.modeling.AlbertConfig.from_dict(ALBERT_BASE), None,
            STEP_SCHEDULE["learning_rate"], STEP_SCHEDULE["num_train_steps"],
            STEP_SCHEDULE["num_warmup_steps"], use_tpu=False, use_one_hot_embeddings=False,
            optimizer="lamb", poly_power=1.0, start_warmup_step=0)
        spec = model_fn(features, None, rp.tf_estimator.ModeKeys.TRAIN, {})
        return spec["loss"], spec["train_op"]

    return original_step(build_train_op, batch)


def bench_step(args, workdir, env):
    """The `step` rows: [(batch size, {"bert_tf"/"original": timings_interleaved's})]."""
    del workdir, env  # both steps run in this process
    import logging  # pylint: disable=import-outside-toplevel

    from common import (  # pylint: disable=import-outside-toplevel
        pretraining_batch, timings_interleaved)

    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    logging.getLogger("absl").setLevel(logging.ERROR)
    run_pretraining = None
    if args.original_repo:
        from tools.original import load_albert_module  # pylint: disable=import-outside-toplevel

        run_pretraining = load_albert_module(args.original_repo, "run_pretraining")
    print(f"step: ALBERT-Base v2 (E {ALBERT_BASE['embedding_size']}, H "
          f"{ALBERT_BASE['hidden_size']}, L {ALBERT_BASE['num_hidden_layers']}, 1 group of 1 "
          f"block, V {ALBERT_BASE['vocab_size']}, dropout 0), float32, LAMB, seq "
          f"{args.step_seq_length}, {args.max_predictions_per_seq} predictions, "
          f"{args.step_warmup_steps} warm-up + {args.step_steps} timed steps each, alternating",
          flush=True)
    rows = []
    for batch_size in (int(b) for b in args.step_batch_sizes.split(",")):
        batch = pretraining_batch(batch_size, args.step_seq_length, args.max_predictions_per_seq,
                                  ALBERT_BASE["vocab_size"])
        steps = {"bert_tf": our_albert_step(batch, args.step_seq_length,
                                            args.max_predictions_per_seq)}
        if run_pretraining is not None:
            steps["original"] = original_albert_step(run_pretraining, batch)
        times = timings_interleaved(steps, args.step_steps, args.step_warmup_steps)
        rows.append((batch_size, times))
        print(f"  batch {batch_size}: " + ", ".join(
            f"{name} {t['median']:.3f} / {t['fastest']:.3f} s/step, CPU {t['cpu_median']:.3f} / "
            f"{t['cpu_fastest']:.3f} s" for name, t in times.items()), flush=True)
    return rows


def print_step_table(rows, seq_length):
    def pair(t, kind=""):
        return f"{t[kind + 'median']:.3f} / {t[kind + 'fastest']:.3f}"

    def ratio(theirs, ours, kind=""):
        return (f"{theirs[kind + 'median'] / ours[kind + 'median']:.2f}x / "
                f"{theirs[kind + 'fastest'] / ours[kind + 'fastest']:.2f}x")

    table = []
    for batch_size, times in rows:
        ours, theirs = times["bert_tf"], times.get("original")
        table.append([seq_length, batch_size, pair(ours), pair(theirs) if theirs else "-",
                      ratio(theirs, ours) if theirs else "-", pair(ours, "cpu_"),
                      pair(theirs, "cpu_") if theirs else "-",
                      ratio(theirs, ours, "cpu_") if theirs else "-"])
    print_table(["seq", "batch", "bert_tf s/step", "original s/step",
                 "original / bert_tf (goal >= 1.0)", "bert_tf CPU s/step",
                 "original CPU s/step", "original / bert_tf CPU"], table)
    print("(each cell: median / fastest of the timed steps; a ratio above 1: bert_tf faster)")


ROWS = {"data": bench_data, "step": bench_step}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", help="a copy of google-research/albert (baseline)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"some of {', '.join(ROWS)}")
    parser.add_argument("--corpus", help="input text; built from Debian's docs when absent")
    parser.add_argument("--corpus_mb", type=float, default=4)
    parser.add_argument("--spm_model_file", default=str(SPM_MODEL),
                        help="SentencePiece model (its .vocab beside it is the --vocab_file)")
    parser.add_argument("--dupe_factor", type=int, default=2)
    parser.add_argument("--max_seq_length", type=int, default=512)
    parser.add_argument("--numpy_seed", type=int, default=12345)
    parser.add_argument("--step_batch_sizes", default="8,32")
    parser.add_argument("--step_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--step_steps", type=int, default=10,
                        help="timed steps of each side per batch size")
    parser.add_argument("--step_warmup_steps", type=int, default=2)
    parser.add_argument("--workdir", help="where outputs and logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    names = args.rows.split(",")
    for name in names:
        if name not in ROWS:
            parser.error(f"--rows: {name!r} is not one of {', '.join(ROWS)}")
    print_machine_header()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_albert_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    results = {name: ROWS[name](args, workdir, env) for name in names}
    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (includes these runs; "
          "more than about 1-2 means other processes competed for the 2 cores)")
    if "data" in results:
        print_data_table(results["data"])
    if "step" in results:
        print()
        print_step_table(results["step"], args.step_seq_length)
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
