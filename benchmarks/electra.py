"""Benchmark: ELECTRA on bert_tf against google-research/electra, measured in the same run.

One table, a row per benchmark (`--rows` picks some):

  builder   build_pretraining_dataset on a corpus of real text (built by
            benchmarks/pretraining_corpus.py from what Debian installs unless --corpus_dir is
            given), split into --num_files files, default flags, one process, the same --seed
            for both: the original's script (run unmodified, Python's `random` seeded with the
            seed before its main, as our --seed promises to reproduce) against
            `python -m bert_tf.electra.build_pretraining_dataset`. Wall time of each process
            end to end (imports included), CPU time, examples written; goal >= 3x. The outputs
            are compared file by file, record by record (map entries; the original's protobuf
            orders them differently from process to process).
  builder2  the same with --num-processes 2 for both (reported, no goal). The records are not
            compared: Python reseeds `random` from the OS in each of the original's forked jobs,
            so its several-process output is never reproducible (ours gives job j the state of
            random.seed(seed + j), see tests/).

  python3 benchmarks/electra.py --original_repo=/tmp/electra
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

_BUILDER_RUNNER = """\
import random, sys
repo, seed = sys.argv[1], int(sys.argv[2])
del sys.argv[1:3]
sys.path.insert(0, repo)
import build_pretraining_dataset
random.seed(seed)  # the original never seeds; this is the run our --seed reproduces
build_pretraining_dataset.main()
"""


def split_corpus(corpus_file, corpus_dir, num_files):
    """Deals the documents (blank-line separated) of one file into `num_files` files."""
    corpus_dir.mkdir(parents=True, exist_ok=True)
    with open(corpus_file, encoding="utf-8") as f:
        docs = f.read().split("\n\n")
    for i in range(num_files):
        part = "\n\n".join(docs[i::num_files])
        (corpus_dir / f"part-{i:03d}.txt").write_text(part, encoding="utf-8")


def _entries(record):
    """{key: map entry bytes} of an Example with int64 features (see tests/)."""
    def varint(data, i):
        value = shift = 0
        while True:
            value |= (data[i] & 0x7F) << shift
            i += 1
            if data[i - 1] < 0x80:
                return value, i
            shift += 7
    _, i = varint(record, 1)
    out = {}
    while i < len(record):
        n, j = varint(record, i + 1)
        entry = record[j:j + n]
        key_len, k = varint(entry, 1)
        out[entry[k:k + key_len]] = entry
        i = j + n
    return out


def compare_dirs(ours, original):
    """(records, mismatches) over the 1000 files of two output directories."""
    count = mismatches = 0
    for i in range(1000):
        name = f"pretrain_data.tfrecord-{i}-of-1000"
        a, b = list(read_records(ours / name)), list(read_records(original / name))
        mismatches += abs(len(a) - len(b))
        for x, y in zip(a, b):
            count += 1
            mismatches += _entries(x) != _entries(y)
    return count, mismatches


def builder_row(args, workdir, env, processes):
    corpus_dir = workdir / "corpus"
    if args.corpus_dir:
        corpus_dir = Path(args.corpus_dir)
    elif not corpus_dir.exists():
        corpus_file = workdir / "corpus.txt"
        size, docs = pretraining_corpus.build_corpus(str(corpus_file), args.corpus_mb)
        split_corpus(corpus_file, corpus_dir, args.num_files)
        print(f"built corpus {corpus_dir}: {size / 1e6:.1f} MB, {docs} documents, {args.num_files} files")
    size_mb = sum(p.stat().st_size for p in corpus_dir.iterdir()) / 1e6
    flags = ["--corpus-dir", str(corpus_dir), "--vocab-file", args.vocab_file,
             "--num-processes", str(processes)]
    runner = workdir / "run_original_builder.py"
    runner.write_text(_BUILDER_RUNNER)
    out_orig, out_ours = workdir / f"original_{processes}", workdir / f"ours_{processes}"
    orig = measure([sys.executable, str(runner), args.original_repo, str(args.seed), *flags,
                    "--output-dir", str(out_orig)], workdir / f"original_{processes}.log", env)
    print(f"  original builder ({processes} process(es)): {orig[0]:.1f} s", flush=True)
    ours = measure([sys.executable, "-m", "bert_tf.electra.build_pretraining_dataset", *flags,
                    "--output-dir", str(out_ours), "--seed", str(args.seed)],
                   workdir / f"ours_{processes}.log", env)
    print(f"  our builder ({processes} process(es)): {ours[0]:.1f} s", flush=True)
    count, mismatches = compare_dirs(out_ours, out_orig)
    if processes == 1:
        same = "identical records" if mismatches == 0 else f"{mismatches} DIFFERENT records"
    else:
        same = "records not comparable (the original's jobs are reseeded from the OS)"
    return (f"build_pretraining_dataset, {size_mb:.0f} MB in {args.num_files} files, "
            f"{processes} process(es)", f"{ours[0]:.1f} s wall, {ours[3]:.1f} s CPU",
            f"{orig[0]:.1f} s wall, {orig[3]:.1f} s CPU", f"{orig[0] / ours[0]:.2f}x",
            ">= 3x" if processes == 1 else "-",
            f"CPU-time ratio {orig[3] / ours[3]:.2f}x; {count:,} examples, {same}")


ROWS = {
    "builder": lambda args, workdir, env: builder_row(args, workdir, env, 1),
    "builder2": lambda args, workdir, env: builder_row(args, workdir, env, 2),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", required=True, help="a copy of google-research/electra")
    parser.add_argument("--rows", default="builder,builder2", help=f"comma list of {', '.join(ROWS)}")
    parser.add_argument("--corpus_dir", help="a directory of text files (built when absent)")
    parser.add_argument("--corpus_mb", type=float, default=16)
    parser.add_argument("--num_files", type=int, default=8)
    parser.add_argument("--vocab_file", default=str(REPO.parent / "shared" / "data" / "uncased_vocab.txt"))
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--workdir", help="where outputs and logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    names = [n for n in args.rows.split(",") if n]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        parser.error(f"--rows: unknown row(s) {', '.join(unknown)}; expected some of {', '.join(ROWS)}")
    print_machine_header()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_electra_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    rows = [ROWS[name](args, workdir, env) for name in names]
    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (includes these runs; "
          "more than about 1-2 means other processes competed for the 2 cores)")
    print("| benchmark | bert_tf | original | speed-up | goal | notes |")
    print("|---|---|---|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
