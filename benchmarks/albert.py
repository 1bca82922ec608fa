"""Benchmark: ALBERT on bert_tf against google-research/albert, measured in the same run.

One table, a row per benchmark (`--rows` picks some; a training-step row can join `ROWS`):

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

  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pretraining_corpus  # sibling scripts: this folder is first on sys.path
from common import print_machine_header
from pretraining_data import measure, read_records

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = REPO / "tests" / "data" / "albert_spm" / "albert.model"

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


ROWS = {"data": bench_data}


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
    parser.add_argument("--workdir", help="where outputs and logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    print_machine_header()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_albert_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    rows = []
    for name in args.rows.split(","):
        rows.extend(ROWS[name](args, workdir, env))
    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (includes these runs; "
          "more than about 1-2 means other processes competed for the 2 cores)")
    print("| run | wall s | CPU s | records | records/s | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, wall, cpu, count, note in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {count:,} | {count / wall:,.1f} | {note} |")
    by_name = {r[0]: r for r in rows}
    if "data: original" in by_name:
        print(f"\ndata: bert_tf vs original: "
              f"{by_name['data: original'][1] / by_name['data: bert_tf'][1]:.2f}x faster "
              "in records/s, wall time (goal >= 3x)")
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
