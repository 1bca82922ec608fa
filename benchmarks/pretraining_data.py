"""Benchmark: create_pretraining_data.py against the original, measured in the same run.

On a corpus of real text (>= 30 MB; built by benchmarks/pretraining_corpus.py from what Debian
installs unless --corpus is given), with the default flags and --dupe_factor=5, it runs

  1. the original google-research/bert create_pretraining_data.py (--original_repo), on TF 2.x
     through a runner that puts `tensorflow.compat.v1` in place of `tensorflow` (the original's
     files are not modified);
  2. ours, identical mode (the default);
  3. ours, --num_workers=2 (sharded; different output by design);

each as its own process, and prints wall time, instances, instances/s and peak RSS (of the
largest process, and of the whole process tree sampled every 0.05 s), the ratios, and whether
our identical-mode output equals the original's record for record (parsed features, and our
bytes against the original's records re-serialized deterministically).

  python3 benchmarks/pretraining_data.py --original_repo=/tmp/orig_bert
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pretraining_corpus  # sibling scripts: this folder is first on sys.path
from common import print_machine_header

REPO = Path(__file__).resolve().parents[1]

_RUNNER = """\
import runpy, sys
import tensorflow.compat.v1 as tf
sys.modules["tensorflow"] = tf  # the original is TF1 code: tf.flags, tf.gfile, tf.python_io
repo = sys.argv.pop(1)
sys.path.insert(0, repo)
sys.argv[0] = repo + "/create_pretraining_data.py"
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _tree_rss(root):
    """Sum of VmRSS (bytes) over `root` and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
        stack.extend(children.get(pid, []))
    return total


def measure(cmd, log_path, env=None):
    """Runs cmd; returns (wall seconds, peak RSS of the largest process, peak tree RSS, CPU
    seconds of the process tree) in seconds and bytes."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        peak_tree = 0
        done = threading.Event()

        def sample():
            nonlocal peak_tree
            while not done.is_set():
                peak_tree = max(peak_tree, _tree_rss(proc.pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = Path(log_path).read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}); log {log_path}:\n{tail}")
    # ru_maxrss (KB) covers this process and its waited-for descendants: the largest of them.
    return (wall, usage.ru_maxrss * 1024, max(peak_tree, usage.ru_maxrss * 1024),
            usage.ru_utime + usage.ru_stime)


def read_records(path):
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if not head:
                return
            n = int.from_bytes(head[:8], "little")
            yield f.read(n)
            f.read(4)


def compare(ours, original):
    """(records compared, parsed-feature mismatches, byte mismatches) of two TFRecord files."""
    from tensorflow.core.example import example_pb2  # pylint: disable=g-import-not-at-top

    count = feature_diff = byte_diff = 0
    sentinel = object()
    a_iter, b_iter = read_records(ours), read_records(original)
    while True:
        a, b = next(a_iter, sentinel), next(b_iter, sentinel)
        if a is sentinel or b is sentinel:
            if a is not b:
                feature_diff += 1  # different record counts
            return count, feature_diff, byte_diff
        count += 1
        eb = example_pb2.Example.FromString(b)
        if example_pb2.Example.FromString(a) != eb:
            feature_diff += 1
        if a != eb.SerializeToString(deterministic=True):
            byte_diff += 1


def count_records(paths):
    return sum(1 for p in paths for _ in read_records(p))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", help="a copy of google-research/bert (baseline)")
    parser.add_argument("--corpus", help="input text; built from Debian's docs when absent")
    parser.add_argument("--corpus_mb", type=float, default=32)
    parser.add_argument("--vocab_file",
                        default=str(REPO.parent / "shared" / "data" / "uncased_vocab.txt"))
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--workdir", help="where outputs and logs go (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run our two modes this many times, alternating, and keep each "
                             "one's fastest run (other processes on the machine add noise)")
    args = parser.parse_args(argv)
    print_machine_header()

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_pretraining_data_"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus or str(workdir / "corpus.txt")
    if not os.path.exists(corpus):
        size, docs = pretraining_corpus.build_corpus(corpus, args.corpus_mb)
        print(f"built corpus {corpus}: {size / 1e6:.1f} MB, {docs} documents")
    size_mb = os.path.getsize(corpus) / 1e6
    common = [f"--input_file={corpus}", f"--vocab_file={args.vocab_file}",
              f"--dupe_factor={args.dupe_factor}"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    print(f"corpus: {corpus} ({size_mb:.1f} MB); flags: defaults, --dupe_factor={args.dupe_factor}")

    rows = []
    original_out = None
    if args.original_repo:
        runner = workdir / "run_original.py"
        runner.write_text(_RUNNER)
        original_out = str(workdir / "original.tfrecord")
        wall, rss, tree, cpu = measure(
            [sys.executable, str(runner), args.original_repo, f"--output_file={original_out}",
             *common], workdir / "original.log", env)
        rows.append(("original", wall, count_records([original_out]), rss, tree, cpu))
        print(f"  original done in {wall:.1f} s", flush=True)

    ours_out = str(workdir / "ours.tfrecord")
    n = args.num_workers
    sharded_out = str(workdir / "sharded.tfrecord")
    shards = [f"{sharded_out}-{i:05d}-of-{n:05d}" for i in range(n)]
    best = {}
    for attempt in range(args.repeat):
        for name, cmd, log, outs in (
            ("bert_tf identical", [f"--output_file={ours_out}"], "ours.log", [ours_out]),
            (f"bert_tf --num_workers={n}", [f"--output_file={sharded_out}", f"--num_workers={n}"],
             "sharded.log", shards)):
            wall, rss, tree, cpu = measure(
                [sys.executable, str(REPO / "create_pretraining_data.py"), *cmd, *common],
                workdir / log, env)
            print(f"  {name} run {attempt + 1}: {wall:.1f} s", flush=True)
            if name not in best or wall < best[name][1]:
                best[name] = (name, wall, count_records(outs), rss, tree, cpu)
    rows.extend(best.values())
    sharded = best[f"bert_tf --num_workers={n}"]

    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (includes these runs; "
          "more than about 1-2 means other processes competed for the 2 cores)")
    print("| run | wall s | CPU s | instances | instances/s | peak RSS, largest process | "
          "peak RSS, all processes |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, wall, count, rss, tree, cpu in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {count:,} | {count / wall:,.0f} | "
              f"{rss / 2**30:.2f} GiB | {tree / 2**30:.2f} GiB |")
    by_name = {r[0]: r for r in rows}
    ident = by_name["bert_tf identical"]
    print()
    if original_out:
        orig = by_name["original"]
        print(f"identical vs original: {orig[1] / ident[1]:.2f}x faster (goal >= 3x), peak RSS "
              f"{ident[3] / orig[3]:.2f} of the original's (goal <= 0.5)")
    print(f"--num_workers={n} vs identical: {ident[1] / sharded[1]:.2f}x faster (goal >= 1.7x)")
    if original_out:
        count, feature_diff, byte_diff = compare(ours_out, original_out)
        print(f"identical output vs original: {count:,} records compared, {feature_diff} with "
              f"different features, {byte_diff} with different bytes (after deterministic "
              f"re-serialization of the original's) -> "
              f"{'IDENTICAL' if feature_diff == byte_diff == 0 else 'DIFFERENT'}")
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
