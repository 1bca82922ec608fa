"""Tokenizer throughput: bert_tf FullTokenizer, the fast tensorflow-text path, and the original.

    python3 benchmarks/tokenize.py [--vocab_file=../shared/data/uncased_vocab.txt]
        [--corpus_mb=3] [--original_repo=/tmp/orig_bert] [--do_lower_case=true]

The corpus is real English text that Debian packages ship (license texts, copyright files,
READMEs and changelogs under /usr/share/common-licenses and /usr/share/doc, gzipped ones
decompressed), read in sorted path order until --corpus_mb megabytes, one text per non-empty line
(as create_pretraining_data reads its input). Every tokenizer runs the whole corpus once, from a
fresh instance (so bert_tf's word cache starts cold); the fast path is traced on a few lines
first. All ids are checked to be identical; the table gives tokens/s and ratios against the
original (or against bert_tf's FullTokenizer without --original_repo).
"""

import os
import sys

# This file shares its name with the standard library's `tokenize`; drop its own folder from the
# import path so that libraries importing `tokenize` get the standard one, not this script.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import gzip  # noqa: E402
import importlib.util  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(_HERE))

from absl import app, flags  # noqa: E402

from bert_tf import tokenization  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def load_original_tokenization(repo):
    """Imports the original tokenization.py with `tensorflow` resolved to `tf.compat.v1`."""
    import tensorflow as tf

    spec = importlib.util.spec_from_file_location(
        "original_bert_tokenization", os.path.join(repo, "tokenization.py"))
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = tf.compat.v1
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules["tensorflow"] = saved
    return module


def time_python_tokenizer(make):
    tok = make()
    start = time.perf_counter()
    ids = [tok.convert_tokens_to_ids(tok.tokenize(line)) for line in LINES]
    return time.perf_counter() - start, ids


def main(argv):
    del argv
    global LINES
    if FLAGS.corpus_mb < 2:
        raise app.UsageError("--corpus_mb must be at least 2")
    LINES, nbytes, nfiles = build_corpus(FLAGS.corpus_roots, int(FLAGS.corpus_mb * 1e6))
    if nbytes < 2e6:
        raise SystemExit(f"only {nbytes} bytes of text found under {FLAGS.corpus_roots}; need 2 MB")
    n_ascii = sum(line.isascii() for line in LINES)
    print(f"corpus: {nbytes / 1e6:.2f} MB, {len(LINES)} lines ({n_ascii} pure ASCII) from "
          f"{nfiles} files; "
          f"vocab {FLAGS.vocab_file}; do_lower_case={FLAGS.do_lower_case}; "
          f"{os.cpu_count()} CPUs")

    rows = []
    t, ours_ids = time_python_tokenizer(
        lambda: tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case))
    n_tokens = sum(len(x) for x in ours_ids)
    rows.append(("bert_tf FullTokenizer", t))

    from bert_tf import fast_tokenization

    start = time.perf_counter()
    fast = fast_tokenization.FastTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
                                           batch_size=FLAGS.batch_size)
    fast.tokenize_to_ids(LINES[:16])  # traces the tf.function
    init = time.perf_counter() - start
    start = time.perf_counter()
    fast_ids = fast.tokenize_to_ids(LINES)
    rows.append(("bert_tf FastTokenizer (tensorflow-text)", time.perf_counter() - start))
    if fast_ids != ours_ids:
        bad = sum(a != b for a, b in zip(fast_ids, ours_ids))
        raise SystemExit(f"MISMATCH: FastTokenizer differs from FullTokenizer on {bad} lines")
    checks = ["FastTokenizer ids == FullTokenizer ids"]

    # The general route alone (every text decoded, mapped per character, re-encoded), as for
    # text that is not printable ASCII.
    general = fast_tokenization.FastTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
                                              batch_size=FLAGS.batch_size, ascii_lane=False)
    general.tokenize_to_ids(LINES[:16])
    start = time.perf_counter()
    general_ids = general.tokenize_to_ids(LINES)
    rows.append(("bert_tf FastTokenizer, general route only (ascii_lane=False)",
                 time.perf_counter() - start))
    if general_ids != ours_ids:
        raise SystemExit("MISMATCH: FastTokenizer(ascii_lane=False) differs from FullTokenizer")
    checks.append("FastTokenizer(ascii_lane=False) ids == FullTokenizer ids")

    baseline = "bert_tf FullTokenizer"
    if FLAGS.original_repo:
        orig = load_original_tokenization(FLAGS.original_repo)
        t, orig_ids = time_python_tokenizer(
            lambda: orig.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case))
        rows.insert(0, ("original tokenization.FullTokenizer", t))
        if orig_ids != ours_ids:
            bad = sum(a != b for a, b in zip(orig_ids, ours_ids))
            raise SystemExit(f"MISMATCH: bert_tf differs from the original on {bad} lines")
        checks.append("original ids == bert_tf ids")
        baseline = "original tokenization.FullTokenizer"

    base_t = dict(rows)[baseline]
    print(f"{n_tokens} tokens per run; FastTokenizer set-up (tables, vocab, tracing) "
          f"{init:.1f} s, not counted; fallbacks to FullTokenizer: {fast.num_fallbacks}")
    print()
    print(f"| tokenizer | seconds | tokens/s | vs {baseline} |")
    print("|---|---:|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} | {n_tokens / t:,.0f} | {base_t / t:.2f}x |")
    print()
    print("checks passed: " + "; ".join(checks))


if __name__ == "__main__":
    app.run(main)
