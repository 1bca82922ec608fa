"""RoBERTa tokenizer throughput: bert_tf's host RobertaTokenizer, its in-graph TokenizerModule
(core ops, what exports run), and keras_hub's RobertaTokenizer (its BytePairTokenizer) when
keras_hub is installed (not a bert_tf dependency: install it beside, e.g. in a virtualenv made
with --system-site-packages).

    python3 benchmarks/roberta_tokenizer.py --vocab_file=DIR/vocab.json [--merges_file=...]
        [--corpus_mb=3] [--text_file=FILE] [--batch_size=1024] [--repeats=3]
    python3 benchmarks/roberta_tokenizer.py --golden_differences

The corpus is benchmarks/tokenizer.py's (English text Debian packages ship, one text per line).
Timed: bert_tf's host tokenizer from a fresh instance per run (its word cache cold); the
in-graph module on batches of --batch_size texts (tf.string constants made before timing, ids
fetched to numpy), traced before timing; keras_hub's tokenizer on the same batches, both of its
paths: inside a tf.function (its TensorFlow path: tensorflow-text's regex_split, BPE in a
tf.while_loop with a cache of seen words, a fresh instance per run) and called eagerly on
lists of str (its Python path, the `tokenizers` package with Llama 3's split pattern). Runs are
interleaved --repeats times, the best kept. bert_tf's two paths must give identical ids on
every line; keras_hub's lines that differ from them are counted.

--golden_differences runs keras_hub's two paths on the texts of
tests/data/roberta_tokenizer/expected.jsonl.gz (the committed vocabulary) and lists the texts
where they differ from Transformers' RobertaTokenizerFast (what bert_tf follows).
"""

import gzip
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from absl import app, flags  # noqa: E402

from common import print_machine_header  # noqa: E402  (this folder is first on sys.path)
from tokenizer import build_corpus, read_text_file  # noqa: E402

GOLDEN = os.path.join(REPO, "tests", "data", "roberta_tokenizer")

FLAGS = flags.FLAGS
# --vocab_file, --corpus_mb, --corpus_roots, --text_file, --batch_size and --repeats are
# benchmarks/tokenizer.py's flags (imported with its corpus); here vocab_file is vocab.json.
FLAGS.set_default("vocab_file", os.path.join(GOLDEN, "vocab.json"))
FLAGS.set_default("batch_size", 1024)
flags.DEFINE_string("merges_file", None, "merges.txt (default: beside vocab.json).")
flags.DEFINE_bool("golden_differences", False,
                  "List where keras_hub differs from Transformers on the goldens' texts.")


def keras_hub_tokenizer(vocab, merges):
    import keras_hub  # pylint: disable=g-import-not-at-top

    return keras_hub.models.RobertaTokenizer(vocabulary=dict(vocab), merges=merges)


def keras_hub_merges(merges):
    return [f"{a} {b}" for a, b in merges]


def golden_differences(host):
    """keras_hub's ids against Transformers' fast ones on the goldens' texts."""
    import tensorflow as tf

    with gzip.open(os.path.join(GOLDEN, "expected.jsonl.gz"), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    records = [r for r in records if r["kind"] in ("text", "fuzz") and not r["add_prefix_space"]]
    eager = keras_hub_tokenizer(host.vocab, keras_hub_merges(host.merges))
    graph = keras_hub_tokenizer(host.vocab, keras_hub_merges(host.merges))
    in_graph = tf.function(lambda texts: graph(texts))
    counts = {}
    print("| text | Transformers (fast) = bert_tf | keras_hub, tf.function | keras_hub, "
          "eager (tokenizers) |")
    print("|---|---|---|---|")
    for r in records:
        expected = r["fast"]["ids"]
        assert host.tokenize_to_ids(r["text"]) == expected, r["name"]
        python_ids = [int(i) for i in eager(r["text"])]
        graph_ids = in_graph(tf.constant([r["text"]])).to_list()[0]
        key = (r["kind"], python_ids != expected, graph_ids != expected)
        counts[key] = counts.get(key, 0) + 1
        if r["kind"] == "text" and (python_ids != expected or graph_ids != expected):
            def show(ids):
                return " ".join(host.convert_ids_to_tokens(ids)) if ids != expected else "same"
            print(f"| {r['name']}: {json.dumps(r['text'], ensure_ascii=True)[:40]} | "
                  f"{' '.join(r['fast']['tokens'])} | {show(graph_ids)} | {show(python_ids)} |")
    for kind in ("text", "fuzz"):
        total = sum(v for k, v in counts.items() if k[0] == kind)
        eager_differ = sum(v for k, v in counts.items() if k[0] == kind and k[1])
        graph_differ = sum(v for k, v in counts.items() if k[0] == kind and k[2])
        print(f"{kind}: {total} texts; keras_hub differs from Transformers on {graph_differ} "
              f"in a tf.function, {eager_differ} eagerly")


def main(argv):
    del argv
    print_machine_header()
    from bert_tf.roberta.tokenization import RobertaTokenizer

    host = RobertaTokenizer(FLAGS.vocab_file, merges_file=FLAGS.merges_file)
    if FLAGS.golden_differences:
        golden_differences(host)
        return
    if FLAGS.text_file:
        lines, nbytes = read_text_file(FLAGS.text_file)
        source = FLAGS.text_file
    else:
        lines, nbytes, nfiles = build_corpus(FLAGS.corpus_roots, int(FLAGS.corpus_mb * 1e6))
        source = f"{nfiles} files"
    print(f"corpus: {nbytes / 1e6:.2f} MB, {len(lines)} lines from {source}; vocab "
          f"{FLAGS.vocab_file} ({len(host.vocab)} entries, {len(host.merges)} merges); "
          f"{os.cpu_count()} CPUs; best of {FLAGS.repeats} interleaved runs")

    import numpy as np
    import tensorflow as tf

    from bert_tf.roberta.fast_tokenization import TokenizerModule

    size = FLAGS.batch_size
    batches = [tf.constant([line.encode("utf-8") for line in lines[i:i + size]])
               for i in range(0, len(lines), size)]
    vocab_file, merges_file = FLAGS.vocab_file, FLAGS.merges_file

    def host_run():
        tokenizer = RobertaTokenizer(vocab_file, merges_file=merges_file)
        return lambda: [tokenizer.tokenize_to_ids(line) for line in lines]

    start = time.perf_counter()
    module = TokenizerModule(host.vocab)
    module(batches[0][:16])
    setup = {"bert_tf TokenizerModule": time.perf_counter() - start}

    def graph_run():
        def run():
            out = []
            for batch in batches:
                ids = module(batch)
                values, splits = ids.flat_values.numpy(), ids.row_splits.numpy()
                out += [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
            return out
        return run

    runners = [("bert_tf RobertaTokenizer (host, Python)", host_run),
               ("bert_tf TokenizerModule (in-graph, core ops)", graph_run)]
    try:
        import keras_hub  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        print("keras_hub is not installed: its tokenizer is not timed")
    else:
        merges = keras_hub_merges(host.merges)
        str_batches = [lines[i:i + size] for i in range(0, len(lines), size)]

        def keras_graph_run():
            tokenizer = keras_hub_tokenizer(host.vocab, merges)
            function = tf.function(lambda texts: tokenizer(texts))
            function(batches[0][:16])  # traces (untimed: a fresh instance per run)

            def run():
                out = []
                for batch in batches:
                    ids = function(batch)
                    values, splits = ids.flat_values.numpy(), ids.row_splits.numpy()
                    out += [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]
                return out
            return run

        def keras_eager_run():
            tokenizer = keras_hub_tokenizer(host.vocab, merges)
            return lambda: [[int(i) for i in row] for batch in str_batches
                            for row in tokenizer(batch)]

        runners += [("keras_hub RobertaTokenizer in a tf.function (tensorflow-text)",
                     keras_graph_run),
                    ("keras_hub RobertaTokenizer eager (tokenizers)", keras_eager_run)]

    times = {name: [] for name, _ in runners}
    results = {}
    for _ in range(FLAGS.repeats):
        for name, prepare in runners:
            run = prepare()
            start = time.perf_counter()
            results[name] = run()
            times[name].append(time.perf_counter() - start)
    reference = results[runners[0][0]]
    if results[runners[1][0]] != reference:
        bad = sum(a != b for a, b in zip(results[runners[1][0]], reference))
        raise SystemExit(f"MISMATCH: the in-graph tokenizer differs from the host on {bad} lines")
    n_tokens = sum(len(x) for x in reference)
    baseline = runners[0][0]
    print(f"{n_tokens} tokens per run (bert_tf), batches of {size} texts; set-up not counted: "
          + ", ".join(f"{n} {t:.1f} s" for n, t in setup.items()))
    print()
    print(f"| tokenizer | seconds (best) | texts/s | vs {baseline} | lines differing from "
          "bert_tf |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in runners:
        best = min(times[name])
        differ = sum(a != b for a, b in zip(results[name], reference))
        print(f"| {name} | {best:.3f} | {len(lines) / best:,.0f} | "
              f"{times[baseline][np.argmin(times[baseline])] / best:.2f}x | {differ} |")
    print()
    print("checks passed: bert_tf's host and in-graph tokenizers gave identical ids on every "
          "line, every run")


if __name__ == "__main__":
    app.run(main)
