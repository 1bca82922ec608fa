"""Records what the ORIGINAL run_classifier.py does on the small TSVs of this folder.

Run once with a copy of the original repository (imported with `tensorflow` resolved to
`tf.compat.v1`, its files untouched):

    python3 tests/data/classifier/make_expected.py --original_repo=/tmp/orig_bert

Writes expected.json next to this file:
  processors    task -> split -> [guid, text_a, text_b, label] of every example the original's
                processor reads from cola/, mrpc/, mnli/, xnli/
  features      convert_single_example cases (inputs, features, logged lines)
  records       file_based_convert_examples_to_features on a list of examples: each record's
                parsed features and its deterministic serialization (hex)
  steps         the train-step arithmetic of main() for a few (examples, batch, epochs)
  float_lines   test_results.tsv lines (the tab-joined str() of float32 probabilities)
  eval_results  eval_results.txt of {float32, float32, int64, float32} values
The vocab is ../shared/data/uncased_vocab.txt (the 30,522-entry BERT-Base uncased vocab).
"""

import argparse
import json
import logging
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from tools.original import load_original_module  # noqa: E402

VOCAB = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")
BINARY = ["0", "1"]
NLI = ["contradiction", "entailment", "neutral"]

# (name, ex_index, do_lower_case, max_seq_length, label_list, text_a, text_b, label)
FEATURE_CASES = [
    ("pair_a_longer", 0, True, 10, BINARY,
     "the quick brown fox jumps over the lazy dog", "a cat", "1"),
    ("pair_tie_trims_b_first", 1, True, 10, BINARY,
     "one two three four five", "six seven eight nine ten", "0"),
    ("pair_b_longer", 2, True, 10, BINARY, "short", "a much longer second sentence here .", "1"),
    ("pair_alternating", 3, True, 9, BINARY,
     "alpha beta gamma delta epsilon zeta", "one two three four five six seven", "0"),
    ("pair_fits", 4, True, 16, NLI, "He said \"no\".", "She's \"fine\"!", "neutral"),
    ("single_long", 5, True, 10, BINARY,
     "this sentence has many more tokens than will fit in ten", None, "1"),
    ("text_b_empty", 0, True, 10, BINARY, "hello world", "", "0"),
    ("text_b_zero_width", 1, True, 10, BINARY, "hello world", "\u200b", "1"),
    ("text_b_whitespace", 2, True, 10, BINARY, "hello world", " \t ", "1"),
    ("accents_lower", 0, True, 16, BINARY, "Héllo Wörld café naïve Zürich", "ÉCOLE", "1"),
    ("accents_cased", 0, False, 16, BINARY, "Héllo Wörld café naïve Zürich", "ÉCOLE", "1"),
    ("cjk_quotes", 3, True, 16, NLI, "北京 \"東京\" 'x'", "日本語 text", "entailment"),
    ("unknown_words", 6, True, 12, BINARY, "qzxjv wxyzzy", "fooooooooooooooooooo", "0"),
    ("empty_a_pair", 0, True, 8, BINARY, "", "only b here", "1"),
    ("single_fits_exactly", 0, True, 6, BINARY, "one two three four", None, "0"),
]


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def record_processors(rc):
    out = {}
    tasks = {
        "cola": (rc.ColaProcessor(), ("train", "dev", "test")),
        "mrpc": (rc.MrpcProcessor(), ("train", "dev", "test")),
        "mnli": (rc.MnliProcessor(), ("train", "dev", "test")),
        "xnli": (rc.XnliProcessor(), ("train", "dev")),
    }
    for task, (processor, splits) in tasks.items():
        data_dir = os.path.join(HERE, task)
        out[task] = {"labels": processor.get_labels()}
        for split in splits:
            examples = getattr(processor, f"get_{split}_examples")(data_dir)
            out[task][split] = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
    return out


def record_features(rc, tokenization):
    capture = _Capture()
    logger = logging.getLogger("tensorflow")
    logger.addHandler(capture)
    logger.setLevel(logging.INFO)
    cases = []
    for name, ex_index, lower, length, labels, a, b, label in FEATURE_CASES:
        tokenizer = tokenization.FullTokenizer(VOCAB, do_lower_case=lower)
        capture.messages = []
        example = rc.InputExample(guid=f"case-{name}", text_a=a, text_b=b, label=label)
        f = rc.convert_single_example(ex_index, example, labels, length, tokenizer)
        cases.append({
            "name": name, "ex_index": ex_index, "do_lower_case": lower, "max_seq_length": length,
            "label_list": labels, "text_a": a, "text_b": b, "label": label,
            "input_ids": f.input_ids, "input_mask": f.input_mask, "segment_ids": f.segment_ids,
            "label_id": f.label_id, "is_real_example": f.is_real_example,
            "log": list(capture.messages),
        })
    tokenizer = tokenization.FullTokenizer(VOCAB, do_lower_case=True)
    capture.messages = []
    f = rc.convert_single_example(0, rc.PaddingInputExample(), BINARY, 7, tokenizer)
    cases.append({
        "name": "padding", "ex_index": 0, "do_lower_case": True, "max_seq_length": 7,
        "label_list": BINARY, "padding": True, "input_ids": f.input_ids,
        "input_mask": f.input_mask, "segment_ids": f.segment_ids, "label_id": f.label_id,
        "is_real_example": f.is_real_example, "log": list(capture.messages),
    })
    logger.removeHandler(capture)
    return cases


def record_records(rc, tokenization):
    """file_based_convert_examples_to_features on MRPC train+test examples plus padding."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    processor = rc.MrpcProcessor()
    data_dir = os.path.join(HERE, "mrpc")
    examples = (processor.get_train_examples(data_dir) + processor.get_test_examples(data_dir))
    plain = [{"guid": e.guid, "text_a": e.text_a, "text_b": e.text_b, "label": e.label}
             for e in examples]
    examples = examples + [rc.PaddingInputExample()]
    length = 24
    tokenizer = tokenization.FullTokenizer(VOCAB, do_lower_case=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.tf_record")
        rc.file_based_convert_examples_to_features(examples, BINARY, length, tokenizer, path)
        parsed, serialized = [], []
        for data in tf.data.TFRecordDataset(path).as_numpy_iterator():
            example = tf.train.Example.FromString(data)
            parsed.append({k: list(v.int64_list.value)
                           for k, v in example.features.feature.items()})
            serialized.append(example.SerializeToString(deterministic=True).hex())
    return {"max_seq_length": length, "do_lower_case": True, "label_list": BINARY,
            "examples": plain, "num_padding": 1, "parsed": parsed, "serialized_hex": serialized}


def record_steps():
    # main(): num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs);
    # num_warmup_steps = int(num_train_steps * warmup_proportion).
    out = []
    for n, batch, epochs, proportion in ((3668, 32, 3.0, 0.1), (10, 3, 3.0, 0.1),
                                         (392702, 32, 2.0, 0.1), (7, 8, 3.0, 0.1),
                                         (3668, 32, 3.0, 0.0), (100, 7, 1.5, 0.25)):
        steps = int(n / batch * epochs)
        out.append([n, batch, epochs, proportion, steps, int(steps * proportion)])
    return out


def record_float_lines():
    rows = [[0.99123454, 0.00876546], [1.0, 0.0], [1e-7, 0.9999999, 2.5e-6],
            [0.1234565, 0.3333333333, 0.5433101], [1 / 3, 2 / 3]]
    out = []
    for row in rows:
        probabilities = np.array(row, dtype=np.float32)
        # main() writes "\t".join(str(p) for p in probabilities) + "\n".
        out.append({"probabilities": row,
                    "line": "\t".join(str(p) for p in probabilities) + "\n"})
    return out


def record_eval_results():
    result = {"eval_accuracy": np.float32(0.8455882), "eval_loss": np.float32(0.41234567),
              "global_step": np.int64(343), "loss": np.float32(0.4123)}
    text = "".join("%s = %s\n" % (key, str(result[key])) for key in sorted(result))
    return {"values": {k: [type(v).__name__, v.item()] for k, v in result.items()},
            "text": text}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    rc = load_original_module(args.original_repo, "run_classifier")
    tokenization = rc.tokenization  # the module the original's run_classifier imported
    expected = {
        "vocab": "uncased_vocab.txt",
        "processors": record_processors(rc),
        "features": record_features(rc, tokenization),
        "records": record_records(rc, tokenization),
        "steps": record_steps(),
        "float_lines": record_float_lines(),
        "eval_results": record_eval_results(),
    }
    out_path = os.path.join(HERE, "expected.json")
    with open(out_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=True, indent=1)
        f.write("\n")
    os.replace(out_path + ".tmp", out_path)
    print("wrote", out_path)


if __name__ == "__main__":
    main()
