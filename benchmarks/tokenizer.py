"""Tokenizer throughput: bert_tf FullTokenizer, the fast tensorflow-text path, and the original.

    python3 benchmarks/tokenizer.py [--vocab_file=../shared/data/uncased_vocab.txt]
        [--corpus_mb=3] [--original_repo=/tmp/orig_bert] [--do_lower_case=true]
        [--text_file=FILE] [--in_graph]

With --in_graph, times instead the in-graph `TokenizerModule.tokenize_with_check` on batches of
--batch_size texts (UTF-8 tf.string constants made before timing; the time includes fetching
the ids to numpy): the core-op mode that exports use (`core_ops=True`) against the
tensorflow-text mode (`core_ops=False`, what `FastTokenizer` runs), and that mode with its
printable-ASCII lane off. Ids and flags must be identical across modules, and equal to
FullTokenizer's on every text not flagged.

The corpus is real English text that Debian packages ship (license texts, copyright files,
READMEs and changelogs under /usr/share/common-licenses and /usr/share/doc, gzipped ones
decompressed), read in sorted path order until --corpus_mb megabytes, one text per non-empty line
(as create_pretraining_data reads its input). Every run tokenizes the whole corpus, from a
fresh instance (so bert_tf's word cache starts cold); the fast path is traced on a few lines
first. Runs are interleaved --repeats times and the best time is kept (the machine is shared).
All ids are checked to be identical; the table gives tokens/s and ratios against the original
(or against bert_tf's FullTokenizer without --original_repo).
"""

import gzip
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from absl import app, flags  # noqa: E402

from bert_tf.bert import tokenization  # noqa: E402
from tools.original import load_original_module  # noqa: E402
from common import print_machine_header  # noqa: E402  (this folder is first on sys.path)

DEFAULT_VOCAB = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab_file", DEFAULT_VOCAB, "WordPiece vocab (the real 30,522-entry one).")
flags.DEFINE_bool("do_lower_case", True, "Uncased (True) or cased (False) tokenization.")
flags.DEFINE_float("corpus_mb", 3.0, "Corpus size in megabytes (at least 2).")
flags.DEFINE_string("original_repo", None,
                    "A copy of google-research/bert: also time its tokenization.FullTokenizer.")
flags.DEFINE_list("corpus_roots", ["/usr/share/common-licenses", "/usr/share/doc"],
                  "Folders whose text files make the corpus.")
flags.DEFINE_integer("batch_size", 2048, "Texts per call of the fast path.")
flags.DEFINE_integer("repeats", 3, "Runs per tokenizer (interleaved); the best is reported.")
flags.DEFINE_string("text_file", None,
                    "Take the texts from this file (its non-empty lines, stripped) instead of "
                    "--corpus_roots (no minimum size).")
flags.DEFINE_bool("in_graph", False,
                  "Time TokenizerModule in the graph: core ops (exports) vs tensorflow-text.")


def build_corpus(roots, max_bytes):
    """Non-empty lines (str) of the text files under `roots`, up to `max_bytes` UTF-8 bytes."""
    paths = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            paths.extend(os.path.join(dirpath, f) for f in sorted(filenames))
    lines, total, files = [], 0, 0
    for path in paths:
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        name = os.path.basename(path).lower()
        try:
            if name.endswith(".gz"):
                if not any(k in name for k in ("changelog", "readme", "news", "copyright", ".txt")):
                    continue
                with gzip.open(path, "rb") as f:
                    data = f.read(4 << 20)
            elif (name in ("copyright",) or name.startswith(("readme", "changelog", "news"))
                  or name.endswith((".txt", ".md", ".rst")) or "common-licenses" in path):
                with open(path, "rb") as f:
                    data = f.read(4 << 20)
            else:
                continue
        except OSError:
            continue
        if b"\x00" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files += 1
        for line in text.split("\n"):
            line = line.strip()
            if line:
                lines.append(line)
                total += len(line.encode("utf-8")) + 1
                if total >= max_bytes:
                    return lines, total, files
    return lines, total, files


def python_runner(make):
    """A fresh tokenizer per run (so bert_tf's word cache starts cold), created untimed."""
    def prepare():
        tok = make()
        return lambda: [tok.convert_tokens_to_ids(tok.tokenize(line)) for line in LINES]
    return prepare


def read_text_file(path):
    """Non-empty stripped lines of a UTF-8 file -> (lines, bytes)."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines, sum(len(line.encode("utf-8")) + 1 for line in lines)


def best_interleaved(runners):
    """runners: list of (name, run). Runs each --repeats times, interleaved -> name -> best s,
    name -> the last result."""
    times, results = {name: [] for name, _ in runners}, {}
    for _ in range(FLAGS.repeats):
        for name, run in runners:
            start = time.perf_counter()
            results[name] = run()
            times[name].append(time.perf_counter() - start)
    return {name: min(t) for name, t in times.items()}, results


def print_ratio_table(best, n_tokens, baseline):
    print(f"| tokenizer | seconds (best) | tokens/s | vs {baseline} |")
    print("|---|---:|---:|---:|")
    for name, t in best.items():
        print(f"| {name} | {t:.3f} | {n_tokens / t:,.0f} | {best[baseline] / t:.2f}x |")
    print()


def in_graph_main():
    """TokenizerModule in the graph: core ops against tensorflow-text (see module docstring)."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.bert import fast_tokenization

    lower, size = FLAGS.do_lower_case, FLAGS.batch_size
    full = tokenization.FullTokenizer(FLAGS.vocab_file, lower)
    batches = [tf.constant([line.encode("utf-8") for line in LINES[i:i + size]])
               for i in range(0, len(LINES), size)]
    variants = [
        ("TokenizerModule, tensorflow-text (core_ops=False)", dict(core_ops=False)),
        ("TokenizerModule, tensorflow-text, ascii_lane=False",
         dict(core_ops=False, ascii_lane=False)),
        ("TokenizerModule, core ops (core_ops=True: exports)", dict(core_ops=True)),
    ]
    runners, setup = [], {}
    for name, kwargs in variants:
        start = time.perf_counter()
        module = fast_tokenization.TokenizerModule(full.vocab, lower, **kwargs)
        module.tokenize_with_check(batches[0])  # traces
        setup[name] = time.perf_counter() - start

        def run(module=module):
            out = [module.tokenize_with_check(b) for b in batches]
            return [(ids.flat_values.numpy(), ids.row_splits.numpy(), inexact.numpy())
                    for ids, inexact in out]
        runners.append((name, run))
    best, results = best_interleaved(runners)
    reference = results[variants[0][0]]
    for name, result in results.items():
        for (ids, splits, flags_), (ref_ids, ref_splits, ref_flags) in zip(result, reference):
            if not (np.array_equal(ids, ref_ids) and np.array_equal(splits, ref_splits)
                    and np.array_equal(flags_, ref_flags)):
                raise SystemExit(f"MISMATCH: {name} differs from {variants[0][0]}")
    n_flagged, n_tokens = 0, 0
    for (ids, splits, flagged), begin in zip(reference, range(0, len(LINES), size)):
        n_tokens += len(ids)
        for j, line in enumerate(LINES[begin:begin + size]):
            n_flagged += int(flagged[j])
            if not flagged[j] and ids[splits[j]:splits[j + 1]].tolist() != \
                    full.tokenize_to_ids(line):
                raise SystemExit(f"MISMATCH with FullTokenizer on line {begin + j}: {line!r}")
    print(f"{n_tokens} tokens per run, batches of {size} texts; set-up (tables, tracing, "
          "first call) not counted: " + ", ".join(f"{n} {t:.1f} s" for n, t in setup.items()))
    print()
    print_ratio_table(best, n_tokens, variants[0][0])
    print(f"checks passed: identical ids and flags from all {len(variants)} modules, equal to "
          f"FullTokenizer on every text not flagged ({n_flagged} flagged)")


def main(argv):
    del argv
    global LINES
    print_machine_header()
    if FLAGS.text_file:
        LINES, nbytes = read_text_file(FLAGS.text_file)
        source = FLAGS.text_file
    else:
        if FLAGS.corpus_mb < 2:
            raise app.UsageError("--corpus_mb must be at least 2")
        LINES, nbytes, nfiles = build_corpus(FLAGS.corpus_roots, int(FLAGS.corpus_mb * 1e6))
        if nbytes < 2e6:
            raise SystemExit(
                f"only {nbytes} bytes of text found under {FLAGS.corpus_roots}; need 2 MB")
        source = f"{nfiles} files"
    n_ascii = sum(line.isascii() for line in LINES)
    print(f"corpus: {nbytes / 1e6:.2f} MB, {len(LINES)} lines ({n_ascii} pure ASCII) from "
          f"{source}; vocab {FLAGS.vocab_file}; do_lower_case={FLAGS.do_lower_case}; "
          f"{os.cpu_count()} CPUs; best of {FLAGS.repeats} interleaved runs")
    if FLAGS.in_graph:
        in_graph_main()
        return

    lower = FLAGS.do_lower_case
    runners = []  # (name, prepare() -> run() -> ids)
    if FLAGS.original_repo:
        orig = load_original_module(FLAGS.original_repo, "tokenization")
        runners.append(("original tokenization.FullTokenizer",
                        python_runner(lambda: orig.FullTokenizer(FLAGS.vocab_file, lower))))
    runners.append(("bert_tf FullTokenizer",
                    python_runner(lambda: tokenization.FullTokenizer(FLAGS.vocab_file, lower))))

    from bert_tf.bert import fast_tokenization

    start = time.perf_counter()
    fast = fast_tokenization.FastTokenizer(FLAGS.vocab_file, do_lower_case=lower,
                                           batch_size=FLAGS.batch_size)
    fast.tokenize_to_ids(LINES[:16])  # traces the tf.function
    init = time.perf_counter() - start
    runners.append(("bert_tf FastTokenizer (tensorflow-text)",
                    lambda: lambda: fast.tokenize_to_ids(LINES)))
    # The general route alone (every text decoded, mapped per character, re-encoded), which
    # text that is not printable ASCII takes.
    general = fast_tokenization.FastTokenizer(FLAGS.vocab_file, do_lower_case=lower,
                                              batch_size=FLAGS.batch_size, ascii_lane=False)
    general.tokenize_to_ids(LINES[:16])
    runners.append(("bert_tf FastTokenizer, general route only (ascii_lane=False)",
                    lambda: lambda: general.tokenize_to_ids(LINES)))

    times = {name: [] for name, _ in runners}
    reference = None
    for _ in range(FLAGS.repeats):
        for name, prepare in runners:
            run = prepare()
            start = time.perf_counter()
            ids = run()
            times[name].append(time.perf_counter() - start)
            if reference is None:
                reference = (name, ids)
            elif ids != reference[1]:
                bad = sum(a != b for a, b in zip(ids, reference[1]))
                raise SystemExit(f"MISMATCH: {name} differs from {reference[0]} on {bad} lines")
            del ids
    n_tokens = sum(len(x) for x in reference[1])
    baseline = runners[0][0]
    print(f"{n_tokens} tokens per run; FastTokenizer set-up (tables, vocab, tracing) "
          f"{init:.1f} s, not counted; texts FastTokenizer handed to FullTokenizer: "
          f"{fast.num_fallbacks}")
    print()
    print_ratio_table({name: min(times[name]) for name, _ in runners}, n_tokens, baseline)
    print(f"checks passed: identical ids from all {len(runners)} tokenizers on every line, "
          "every run")


if __name__ == "__main__":
    app.run(main)
