"""Records what the ORIGINAL run_squad.py does on squad_v1.json and squad_v2.json.

Run once with a copy of the original repository (imported with `tensorflow` resolved to
`tf.compat.v1`, its files untouched):

    python3 tests/data/squad/make_expected.py --original_repo=/tmp/orig_bert

Writes expected.json.gz next to this file:
  read:      read_squad_examples for train/predict x v1/v2 (examples and logged warnings);
  features:  convert_examples_to_features for max_seq_length/max_query_length in
             (20, 3), (20, 5), (70, 64) x doc_stride {1, 3, 128} x v1/v2 x train/predict, every
             field in dict order; training examples after the Random(12345) pre-shuffle;
             a sha256 of each feature list plus the full features of the doc_stride 3 and 128
             runs; the log lines of one run;
  improve / max_context: _improve_answer_span and _check_is_max_context cases;
  predictions: write_predictions (the three files byte for byte, or the exception it raises)
             over the features of (20, 5, doc_stride 3) with logits from `make_logits`;
  final_text, best_indexes, softmax: tables of the helpers.
"""

import argparse
import gzip
import hashlib
import json
import logging
import os
import random
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from tools.original import load_original_module  # noqa: E402

FILES = {"v1": os.path.join(HERE, "squad_v1.json"), "v2": os.path.join(HERE, "squad_v2.json")}
SHAPES = ((20, 3), (20, 5), (70, 64))
STRIDES = (1, 3, 128)
FULL_STRIDES = (3, 128)
LOGGED_RUN = "v2/train/20/5/3"
PREDICTION_SHAPE = (20, 5, 3)

# (name, version, n_best_size, max_answer_length, null_score_diff_threshold); a threshold
# "diff:<qid>" is that question's null score difference from the "v2/20/30/0" run.
PREDICTION_RUNS = (
    ("v1/20/30", "v1", 20, 30, 0.0),
    ("v1/5/4", "v1", 5, 4, 0.0),
    ("v1/1/1", "v1", 1, 1, 0.0),
    ("v1/1/30", "v1", 1, 30, 0.0),
    ("v1/20/1", "v1", 20, 1, 0.0),
    ("v2/20/30/0", "v2", 20, 30, 0.0),
    ("v2/5/4/-1", "v2", 5, 4, -1.0),
    ("v2/5/4/0", "v2", 5, 4, 0.0),
    ("v2/20/30/diff", "v2", 20, 30, "diff:a1"),
    ("v2/1/30/0", "v2", 1, 30, 0.0),
    ("v2/5/1/0", "v2", 5, 1, 0.0),
    ("v2/1/1/0", "v2", 1, 1, 0.0),
)

FINAL_TEXT_CASES = (
    ("steve smith", "Steve Smith's", True),
    ("1895", "(1895-1943).", True),
    ("caf", "Caf\u00e9", True),
    ("cafe", "Caf\u00e9", True),
    ("cafe", "Caf\u00e9", False),
    ("zurich", "Z\u00fcrich,", True),
    ("us", "Bus US", True),
    ("the", "other the", True),
    ("a b", "a\u200bb", True),
    ("ab", "a\u200bb", True),
    ("10 km", "10\u00a0km", True),
    ("missing", "Steve Smith", True),
    ("smith", "Steve  Smith", False),
    ("Smith", "Steve Smith", False),
    ("smith", "Steve Smith", False),
    ("x", "", True),
    ("", "abc", True),
    ("e", "\u00e9", True),
    ("ss", "Stra\u00dfe", True),
    ("1943 )", "(1895-1943).", True),
)

BEST_INDEX_CASES = (
    ([1.0, 3.0, 3.0, 2.0, 3.0], 2),
    ([1.0, 3.0, 3.0, 2.0, 3.0], 10),
    ([0.5, 0.5, 0.5], 1),
    ([-1.0, -2.0, 0.0, -0.0], 3),
    ([], 3),
)

SOFTMAX_CASES = ((), (1.0,), (1.0, 2.0, 3.0), (1000.0, 999.5, -1000.0), (0.1, 0.1))


def make_logits(unique_id, length, doc_positions):
    """Start and end logits of one feature: float(float32) of values with 3 decimals, a few
    positions copied onto others to force ties; the window's positions (`doc_positions`) are
    raised by 2 so that most examples keep a non-null candidate."""
    rng = np.random.RandomState(unique_id % (2 ** 31))
    values = rng.randint(-1500, 1501, size=(2, length)) / 1000.0
    values[:, list(doc_positions)] += 2.0
    for row in values:
        for _ in range(3):
            row[rng.randint(length)] = row[rng.randint(length)]
    values = values.astype(np.float32)
    return [float(x) for x in values[0]], [float(x) for x in values[1]]


def example_record(example):
    return [example.qas_id, example.question_text, example.doc_tokens, example.orig_answer_text,
            example.start_position, example.end_position, example.is_impossible]


def feature_record(feature):
    return [feature.unique_id, feature.example_index, feature.doc_span_index, feature.tokens,
            [[k, v] for k, v in feature.token_to_orig_map.items()],
            [[k, v] for k, v in feature.token_is_max_context.items()],
            feature.input_ids, feature.input_mask, feature.segment_ids,
            feature.start_position, feature.end_position, feature.is_impossible]


def digest(records):
    return hashlib.sha256(json.dumps(records, ensure_ascii=True).encode()).hexdigest()


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--vocab_file",
                        default=os.path.join(os.path.dirname(REPO), "shared", "data",
                                             "uncased_vocab.txt"))
    args = parser.parse_args()
    orig = load_original_module(args.original_repo, "run_squad")
    flags = orig.FLAGS
    flags(["prog", "--vocab_file=unused", "--bert_config_file=unused", "--output_dir=unused"])
    tokenizer = orig.tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)
    capture = Capture()
    logger = logging.getLogger("tensorflow")
    logger.addHandler(capture)
    logger.setLevel(logging.INFO)
    out = {"read": {}, "features": {}, "improve": [], "max_context": [], "predictions": {}}

    for version, path in FILES.items():
        flags.version_2_with_negative = version == "v2"
        for mode in ("train", "predict"):
            capture.messages = []
            examples = orig.read_squad_examples(path, is_training=mode == "train")
            out["read"][f"{version}/{mode}"] = {
                "examples": [example_record(e) for e in examples],
                "log": list(capture.messages)}

    for version, path in FILES.items():
        flags.version_2_with_negative = version == "v2"
        for mode in ("train", "predict"):
            is_training = mode == "train"
            for max_seq_length, max_query_length in SHAPES:
                for doc_stride in STRIDES:
                    examples = orig.read_squad_examples(path, is_training=is_training)
                    if is_training:
                        random.Random(12345).shuffle(examples)
                    features = []
                    capture.messages = []
                    orig.convert_examples_to_features(
                        examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                        is_training, features.append)
                    name = f"{version}/{mode}/{max_seq_length}/{max_query_length}/{doc_stride}"
                    records = [feature_record(f) for f in features]
                    entry = {"order": [e.qas_id for e in examples], "count": len(records),
                             "sha256": digest(records)}
                    if doc_stride in FULL_STRIDES and max_seq_length == 20:
                        entry["features"] = records
                    if name == LOGGED_RUN:
                        entry["log"] = list(capture.messages)
                    out["features"][name] = entry

    doc = tokenizer.tokenize("The leader was John Smith (1895-1943).")
    for start, end, text in ((0, len(doc) - 1, "1895"), (5, len(doc) - 1, "1895"),
                             (0, len(doc) - 1, "(1895-1943)."), (2, 4, "Japan"),
                             (0, len(doc) - 1, "smith"), (3, 2, "leader")):
        out["improve"].append([doc, start, end, text, list(
            orig._improve_answer_span(doc, start, end, tokenizer, text))])
    span = orig.collections.namedtuple("DocSpan", ["start", "length"])
    for spans in (((0, 5), (3, 5), (6, 5)), ((0, 4), (2, 4), (4, 4)), ((0, 3), (1, 3)),
                  ((0, 10),), ((0, 6), (2, 6), (4, 6), (6, 4))):
        doc_spans = [span(*s) for s in spans]
        end = max(s + n for s, n in spans)
        table = [[orig._check_is_max_context(doc_spans, j, p) for p in range(end + 1)]
                 for j in range(len(spans))]
        out["max_context"].append([spans, table])

    max_seq_length, max_query_length, doc_stride = PREDICTION_SHAPE
    features_of, examples_of = {}, {}
    for version, path in FILES.items():
        flags.version_2_with_negative = version == "v2"
        examples_of[version] = orig.read_squad_examples(path, is_training=False)
        features_of[version] = []
        orig.convert_examples_to_features(
            examples_of[version], tokenizer, max_seq_length, doc_stride, max_query_length,
            False, features_of[version].append)
    results_of = {
        version: [orig.RawResult(
            f.unique_id, *make_logits(f.unique_id, max_seq_length, f.token_to_orig_map))
                  for f in features] for version, features in features_of.items()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, n_best, max_answer, threshold in PREDICTION_RUNS:
            if isinstance(threshold, str):
                qid = threshold.split(":")[1]
                threshold = json.loads(out["predictions"]["v2/20/30/0"]["null_odds"])[qid]
            flags.version_2_with_negative = version == "v2"
            flags.null_score_diff_threshold = threshold
            paths = [os.path.join(tmp, f"{name.replace('/', '_')}_{k}.json")
                     for k in ("predictions", "nbest", "null_odds")]
            entry = {"version": version, "n_best_size": n_best, "max_answer_length": max_answer,
                     "threshold": threshold}
            try:
                orig.write_predictions(examples_of[version], features_of[version],
                                       results_of[version], n_best, max_answer, True, *paths)
            except Exception as e:  # pylint: disable=broad-except  (recorded: the v2 crash)
                entry["raises"] = type(e).__name__
            else:
                for key, path in zip(("predictions", "nbest", "null_odds"), paths):
                    if os.path.exists(path):
                        with open(path, encoding="utf-8") as f:
                            entry[key] = f.read()
            out["predictions"][name] = entry

    flags.verbose_logging = True
    out["final_text"] = []
    for pred, orig_text, lower in FINAL_TEXT_CASES:
        capture.messages = []
        text = orig.get_final_text(pred, orig_text, lower)
        out["final_text"].append([pred, orig_text, lower, text, list(capture.messages)])
    out["best_indexes"] = [[list(logits), n, orig._get_best_indexes(logits, n)]
                           for logits, n in BEST_INDEX_CASES]
    out["softmax"] = [[list(s), orig._compute_softmax(list(s))] for s in SOFTMAX_CASES]

    out_path = os.path.join(HERE, "expected.json.gz")
    text = json.dumps(out, ensure_ascii=True, sort_keys=True).encode()
    with open(out_path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text)  # mtime=0: the same records give the same bytes
    os.replace(out_path + ".tmp", out_path)
    print("wrote", out_path, os.path.getsize(out_path), "bytes")


if __name__ == "__main__":
    main()
