"""bert_tf.data.classifier against recordings of the original run_classifier.py
(tests/data/classifier/make_expected.py), plus the GLUE/custom layouts and every error."""

import json
import logging
import os
import random
from pathlib import Path

import pytest

from bert_tf.bert import tokenization
from bert_tf.data import classifier as cls
from bert_tf.data import classifier_tasks as tasks_lib
from bert_tf.data import records
from bert_tf.data.classifier import ClassifierDataError, InputExample, PaddingInputExample
from conftest import SHARED_DIR

DATA = Path(__file__).parent / "data" / "classifier"
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
VOCAB = SHARED_DIR / "data" / "uncased_vocab.txt"

_TOKENIZERS = {}


def tokenizer(lower=True):
    if not VOCAB.exists():
        pytest.skip(f"{VOCAB} is absent (the uncased BERT vocab comes with ../shared)")
    if lower not in _TOKENIZERS:
        _TOKENIZERS[lower] = tokenization.FullTokenizer(str(VOCAB), do_lower_case=lower)
    return _TOKENIZERS[lower]


def as_rows(examples):
    return [[e.guid, e.text_a, e.text_b, e.label] for e in examples]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# --- processors: the original's four tasks -----------------------------------------------------


@pytest.mark.parametrize("task", ["cola", "mrpc", "mnli", "xnli"])
def test_processor_matches_original(task):
    expected = EXPECTED["processors"][task]
    processor = tasks_lib.get_processor(task.upper())
    assert processor.get_labels() == expected["labels"]
    data_dir = str(DATA / task)
    assert as_rows(processor.get_train_examples(data_dir)) == expected["train"]
    assert as_rows(processor.get_dev_examples(data_dir)) == expected["dev"]
    if task == "xnli":
        with pytest.raises(ClassifierDataError, match="no test set"):
            processor.get_test_examples(data_dir)
    else:
        assert as_rows(processor.get_test_examples(data_dir)) == expected["test"]


def test_quotes_are_text_and_cjk_kept():
    rows = EXPECTED["processors"]["cola"]["train"]
    assert rows[1][1] == 'They drank the pub "dry".'
    assert rows[3][1] == '"Quoted at both ends"'
    assert EXPECTED["processors"]["xnli"]["dev"][1][1] == '他说，"妈妈"，我回来了。'


def test_mnli_mismatched_splits(tmp_path):
    header = "\t".join(f"c{i}" for i in range(16)) + "\n"
    row = "\t".join(["7", "p", "q", "g", "", "", "", "", "premise", "hypo"] + ["x"] * 5
                    + ["entailment"]) + "\n"
    write(tmp_path / "dev_mismatched.tsv", header + row)
    write(tmp_path / "test_mismatched.tsv", header + "\t".join(["9"] + ["s"] * 9) + "\n")
    processor = tasks_lib.get_processor("mnli")
    assert processor.dev_splits == ("dev_matched", "dev_mismatched")
    assert as_rows(processor.get_dev_examples(str(tmp_path), split="dev_mismatched")) == [
        ["dev_mismatched-7", "premise", "hypo", "entailment"]]
    assert as_rows(processor.get_test_examples(str(tmp_path), split="test_mismatched")) == [
        ["test_mismatched-9", "s", "s", "contradiction"]]
    with pytest.raises(ClassifierDataError, match="no split 'dev_other'.*dev_mismatched"):
        processor.get_dev_examples(str(tmp_path), split="dev_other")


def test_xnli_other_language(tmp_path):
    (tmp_path / "multinli").mkdir()
    write(tmp_path / "multinli" / "multinli.train.de.tsv", "p\th\tl\nein\tzwei\tcontradictory\n")
    processor = tasks_lib.get_processor("xnli", language="de")
    assert as_rows(processor.get_train_examples(str(tmp_path))) == [
        ["train-1", "ein", "zwei", "contradiction"]]
    assert as_rows(processor.get_dev_examples(str(DATA / "xnli"))) == []


# --- processors: the other GLUE tasks ------------------------------------------------------------

GLUE_CASES = {
    # task: (train/dev header + row, expected train row, test header + row, expected test row)
    "sst-2": ("sentence\tlabel\nit 's a charming journey \t1\n",
              ["train-1", "it 's a charming journey ", None, "1"],
              "index\tsentence\n0\tuneasy mishmash\n", ["test-1", "uneasy mishmash", None, "0"]),
    "qnli": ("index\tquestion\tsentence\tlabel\n5\tWhat?\tThat.\tnot_entailment\n",
             ["train-5", "What?", "That.", "not_entailment"],
             "index\tquestion\tsentence\n3\tWho?\tHim.\n",
             ["test-3", "Who?", "Him.", "entailment"]),
    "qqp": ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
            "133273\t213221\t213222\tHow is the life?\tWhat is life like?\t0\n",
            ["train-133273", "How is the life?", "What is life like?", "0"],
            "id\tquestion1\tquestion2\n0\tWhy?\tWhy not?\n", ["test-0", "Why?", "Why not?", "0"]),
    "rte": ("index\tsentence1\tsentence2\tlabel\n0\tNo weapons.\tWeapons.\tnot_entailment\n",
            ["train-0", "No weapons.", "Weapons.", "not_entailment"],
            "index\tsentence1\tsentence2\n4\tA\tB\n", ["test-4", "A", "B", "entailment"]),
    "wnli": ("index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin.\tI stuck it.\t1\n",
             ["train-0", "I stuck a pin.", "I stuck it.", "1"],
             "index\tsentence1\tsentence2\n2\tA\tB\n", ["test-2", "A", "B", "0"]),
    "sts-b": ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
              "\tscore\n0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane.\t"
              "An air plane.\t5.000\n",
              ["train-0", "A plane.", "An air plane.", 5.0],
              "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
              "\n7\tg\tf\ty\to\ts\ts\tA.\tB.\n", ["test-7", "A.", "B.", 0.0]),
}


@pytest.mark.parametrize("task", sorted(GLUE_CASES))
def test_glue_layouts(tmp_path, task):
    train, train_row, test, test_row = GLUE_CASES[task]
    write(tmp_path / "train.tsv", train)
    write(tmp_path / "dev.tsv", train)
    write(tmp_path / "test.tsv", test)
    processor = tasks_lib.get_processor(task)
    assert as_rows(processor.get_train_examples(str(tmp_path))) == [train_row]
    dev_row = ["dev" + train_row[0][5:]] + train_row[1:]
    assert as_rows(processor.get_dev_examples(str(tmp_path))) == [dev_row]
    assert as_rows(processor.get_test_examples(str(tmp_path))) == [test_row]
    assert processor.is_regression == (task == "sts-b")
    assert (processor.get_labels() is None) == (task == "sts-b")


def test_aliases_and_case():
    assert tasks_lib.get_processor("SST2").task_name == "sst-2"
    assert tasks_lib.get_processor("StsB").task_name == "sts-b"
    assert tasks_lib.get_processor("mrpc", labels=None, language=None).task_name == "mrpc"


def test_qqp_skips_short_rows_with_a_warning(tmp_path, caplog):
    write(tmp_path / "train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
          "1\t2\t3\tHow can I\n"
          "improve?\tWhat?\t1\n"
          "4\t5\t6\tA?\tB?\t0\n")
    with caplog.at_level(logging.WARNING):
        examples = tasks_lib.get_processor("qqp").get_train_examples(str(tmp_path))
    assert as_rows(examples) == [["train-4", "A?", "B?", "0"]]
    assert "skipped 2 rows with fewer than 6 columns (lines 2, 3)" in caplog.text


def test_blank_lines_are_skipped_and_keep_row_indices(tmp_path):
    write(tmp_path / "train.tsv", "s\t1\t\tfirst\n\ns\t0\t*\tthird\n")
    examples = tasks_lib.get_processor("cola").get_train_examples(str(tmp_path))
    assert as_rows(examples) == [["train-0", "first", None, "1"], ["train-2", "third", None, "0"]]


def test_crlf_line_endings(tmp_path):
    write(tmp_path / "train.tsv", "s\t1\t\tfirst\r\ns\t0\t*\tsecond\r\n")
    examples = tasks_lib.get_processor("cola").get_train_examples(str(tmp_path))
    assert [e.text_a for e in examples] == ["first", "second"]


# --- custom data ---------------------------------------------------------------------------------


def test_custom_tsv_labels_from_train(tmp_path):
    write(tmp_path / "train.tsv", "id\ttext_a\ttext_b\tlabel\n1\tA \"q\"\tB\tpos\n2\tC\t\tneg\n")
    write(tmp_path / "dev.tsv", "label\ttext_a\nneg\tD\n")
    write(tmp_path / "test.tsv", "text_a\nE\n")
    processor = tasks_lib.get_processor("custom")
    assert processor.get_labels(str(tmp_path)) == ["neg", "pos"]
    assert as_rows(processor.get_train_examples(str(tmp_path))) == [
        ["train-1", 'A "q"', "B", "pos"], ["train-2", "C", "", "neg"]]
    assert as_rows(processor.get_dev_examples(str(tmp_path))) == [["dev-1", "D", None, "neg"]]
    assert as_rows(processor.get_test_examples(str(tmp_path))) == [["test-1", "E", None, "neg"]]


def test_custom_csv_with_explicit_labels(tmp_path):
    write(tmp_path / "train.csv",
          '\ufefftext_a,label\n"Hello, world",b\n"He said ""hi""\nthen left",a\n')
    processor = tasks_lib.get_processor("custom", labels="b, a,c")
    assert processor.get_labels() == ["b", "a", "c"]
    assert as_rows(processor.get_train_examples(str(tmp_path))) == [
        ["train-1", "Hello, world", None, "b"], ["train-2", 'He said "hi"\nthen left', None, "a"]]


def test_custom_errors(tmp_path):
    with pytest.raises(ClassifierDataError, match="names a label twice"):
        tasks_lib.get_processor("custom", labels="a,b,a")
    with pytest.raises(ClassifierDataError, match="non-empty labels"):
        tasks_lib.get_processor("custom", labels="a,,b")
    processor = tasks_lib.get_processor("custom")
    with pytest.raises(ClassifierDataError, match="pass --labels"):
        processor.get_labels()
    with pytest.raises(ClassifierDataError, match=r"train.tsv: no such file.*train.tsv or "
                                                  r"train.csv in --data_dir"):
        processor.get_labels(str(tmp_path))
    write(tmp_path / "train.tsv", "sentence\tlabel\nx\t1\n")
    with pytest.raises(ClassifierDataError,
                       match=r"train.tsv line 1: the header must name the columns text_a, label"
                             r".*missing text_a; found \['sentence', 'label'\]"):
        processor.get_train_examples(str(tmp_path))
    write(tmp_path / "train.tsv", "text_a\tlabel\nx\t1\nonly-text\n")
    with pytest.raises(ClassifierDataError,
                       match=r"train.tsv line 3: expected at least 2 columns .*'label'.*found 1"):
        processor.get_train_examples(str(tmp_path))
    write(tmp_path / "train.tsv", "text_a\tlabel\nx\t1\n")
    write(tmp_path / "dev.tsv", "text_a\tlabel\ny\t2\n")
    with pytest.raises(ClassifierDataError, match=r"dev.tsv line 2: label '2' is not one of the "
                                                  r"labels \['1'\] \(the distinct labels"):
        processor.get_dev_examples(str(tmp_path))
    write(tmp_path / "dev.csv", "text_a,label\ny,1\n")
    with pytest.raises(ClassifierDataError, match="both dev.tsv and dev.csv exist"):
        processor.get_dev_examples(str(tmp_path))


# --- errors of the fixed-layout processors ----------------------------------------------------


def test_unknown_task_lists_known_ones():
    with pytest.raises(ClassifierDataError, match=r"'squad'.*cola, mnli, mrpc, xnli, sst-2.*"
                                                  r"custom \(aliases: sst2, stsb\)"):
        tasks_lib.get_processor("squad")


def test_option_for_the_wrong_task():
    with pytest.raises(ClassifierDataError, match=r"--labels does not apply to task 'mrpc' "
                                                  r"\(only to: custom\)"):
        tasks_lib.get_processor("mrpc", labels="a,b")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(ClassifierDataError,
                       match=r"dev_matched.tsv: no such file \(task 'mnli' reads its "
                             r"dev_matched split from 'dev_matched.tsv'"):
        tasks_lib.get_processor("mnli").get_dev_examples(str(tmp_path))


_HEADER10 = "\t".join(f"c{i}" for i in range(10)) + "\n"
ROW_ERRORS = {
    # name: (task, split, file content, expected message)
    "short_row": ("mrpc", "train", "h\nq\t1\t2\tonly four\n1\t2\t3\ta\tb\n",
                  r"train.tsv line 2: expected at least 5 tab-separated columns, found 4"),
    "mnli_label_after_texts": ("mnli", "train", "h\n" + _HEADER10.replace("c", ""),
                               r"train.tsv line 2: expected at least 11 .* found 10"),
    "label_outside_list": ("cola", "dev", "s\t1\t\tok\ns\t2\t\tbad label\n",
                           r"dev.tsv line 2: label '2' is not one of the task's labels "
                           r"\['0', '1'\]"),
    "score_not_a_number": ("stsb", "train", _HEADER10 + "\t".join(["0"] * 9 + ["high"]) + "\n",
                           r"train.tsv line 2: score 'high' is not a number"),
    "not_utf8": ("cola", "train", b"s\t1\t\tfine\ns\t0\t\tbad \xff byte\n",
                 r"train.tsv line 2: not valid UTF-8"),
    "stray_carriage_return": ("cola", "train", "s\t1\t\tone\rtwo\n",
                              r"train.tsv line 1: cannot parse the row"),
}


@pytest.mark.parametrize("name", sorted(ROW_ERRORS))
def test_row_errors_name_file_and_line(tmp_path, name):
    task, split, content, message = ROW_ERRORS[name]
    write(tmp_path / f"{split}.tsv", content)
    with pytest.raises(ClassifierDataError, match=message):
        tasks_lib.get_processor(task).get_examples(str(tmp_path), split)


# --- features ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", EXPECTED["features"], ids=lambda c: c["name"])
def test_convert_single_example_matches_original(case, caplog):
    tok = tokenizer(case["do_lower_case"])
    example = (PaddingInputExample() if case.get("padding") else
               InputExample(f"case-{case['name']}", case["text_a"], case["text_b"],
                            case["label"]))
    with caplog.at_level(logging.INFO, logger="absl"):
        features = cls.convert_single_example(case["ex_index"], example, case["label_list"],
                                              case["max_seq_length"], tok)
    assert features.input_ids == case["input_ids"]
    assert features.input_mask == case["input_mask"]
    assert features.segment_ids == case["segment_ids"]
    assert features.label_id == case["label_id"]
    assert features.is_real_example == case["is_real_example"]
    assert [r.getMessage() for r in caplog.records if r.name == "absl"] == case["log"]


def test_truncate_lengths_is_the_pop_loop():
    rng = random.Random(3)
    for _ in range(3000):
        a, b, m = rng.randrange(0, 40), rng.randrange(0, 40), rng.randrange(0, 50)
        la, lb = a, b
        while la + lb > m:
            if la > lb:
                la -= 1
            else:
                lb -= 1
        assert cls.truncate_lengths(a, b, m) == (la, lb), (a, b, m)


def test_regression_features_and_label_errors():
    tok = tokenizer()
    features = cls.convert_single_example(9, InputExample("g", "a", "b", 3.8), None, 8, tok)
    assert features.label_id == 3.8 and isinstance(features.label_id, float)
    with pytest.raises(ClassifierDataError, match=r"example x: label 'maybe' is not one of "
                                                  r"\['0', '1'\]"):
        cls.convert_single_example(9, InputExample("x", "a", None, "maybe"), ["0", "1"], 8, tok)
    with pytest.raises(ClassifierDataError, match="example y: score 'n/a' is not a number"):
        cls.convert_single_example(9, InputExample("y", "a", None, "n/a"), None, 8, tok)
    with pytest.raises(ClassifierDataError, match="max_seq_length=1: must be at least 2"):
        cls.convert_single_example(9, InputExample("z", "a"), ["0"], 1, tok)


def test_vocab_without_cls_and_short_pairs(tmp_path):
    vocab = write(tmp_path / "vocab.txt", "[PAD]\n[UNK]\n[SEP]\na\nb\n")
    no_cls = tokenization.FullTokenizer(str(vocab))
    with pytest.raises(ClassifierDataError, match=r"the vocab has no \[CLS\] token"):
        cls.convert_single_example(0, InputExample("g", "a"), ["0"], 8, no_cls)
    with pytest.raises(ClassifierDataError, match="example p: a pair needs max_seq_length >= 3"):
        cls.convert_single_example(9, InputExample("p", "a", "b", "0"), ["0"], 2, tokenizer())
    # A single sequence fits in 2: [CLS] [SEP], as in the original.
    single = cls.convert_single_example(9, InputExample("s", "a b", None, "0"), ["0"], 2,
                                        tokenizer())
    assert single.input_ids == [101, 102]


# --- records -------------------------------------------------------------------------------------


def read_records(path):
    data = Path(path).read_bytes()
    offset, out = 0, []
    while offset < len(data):
        n = int.from_bytes(data[offset:offset + 8], "little")
        out.append(data[offset + 12:offset + 12 + n])
        offset += 16 + n
    return out


def records_case():
    case = EXPECTED["records"]
    examples = [InputExample(**e) for e in case["examples"]]
    examples += [PaddingInputExample()] * case["num_padding"]
    return case, examples


def test_records_equal_the_originals_bytes(tmp_path):
    case, examples = records_case()
    out = str(tmp_path / "train.tf_record")
    count = cls.write_classifier_records(examples, case["label_list"], case["max_seq_length"],
                                         tokenizer(case["do_lower_case"]), out)
    assert count == len(case["serialized_hex"])
    assert [r.hex() for r in read_records(out)] == case["serialized_hex"]
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p or p.endswith(records.META_SUFFIX)]


def test_records_parse_with_the_feature_spec(tmp_path):
    import numpy as np
    import tensorflow as tf

    case, examples = records_case()
    length = case["max_seq_length"]
    out = str(tmp_path / "r.tf_record")
    cls.write_classifier_records(examples, case["label_list"], length, tokenizer(), out)
    batch = tf.io.parse_example(read_records(out), cls.record_feature_spec(length))
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert batch[name].numpy().tolist() == [p[name] for p in case["parsed"]]
    for name in ("label_ids", "is_real_example"):
        assert batch[name].numpy().tolist() == [p[name][0] for p in case["parsed"]]

    scores = [InputExample("a", "first", "second", 4.25), InputExample("b", "x", None, "0.5")]
    out = str(tmp_path / "stsb.tf_record")
    cls.write_classifier_records(scores + [PaddingInputExample()], None, 8, tokenizer(), out)
    parsed = tf.io.parse_example(read_records(out), cls.record_feature_spec(8, True))
    np.testing.assert_array_equal(parsed["label_ids"].numpy(),
                                  np.array([4.25, 0.5, 0.0], np.float32))
    assert parsed["is_real_example"].numpy().tolist() == [1, 1, 0]
    expected = tf.train.Example()
    expected.features.feature["label_ids"].float_list.value.append(4.25)
    first = tf.train.Example.FromString(read_records(out)[0])
    assert first.features.feature["label_ids"] == expected.features.feature["label_ids"]


def test_failed_write_leaves_no_file(tmp_path):
    out = tmp_path / "eval.tf_record"
    examples = [InputExample("ok", "a", None, "1"), InputExample("bad", "b", None, "7")]
    with pytest.raises(ClassifierDataError, match="example bad: label '7'"):
        cls.write_classifier_records(examples, ["0", "1"], 8, tokenizer(), str(out))
    assert os.listdir(tmp_path) == []


def test_sidecar_detects_stale_records(tmp_path):
    data = write(tmp_path / "train.tsv", "s\t1\t\tfirst\n")
    out = str(tmp_path / "train.tf_record")
    meta = records.records_meta("cola", [str(data)], 8, str(VOCAB), True, ["0", "1"])
    assert not records.records_are_current(out, meta)
    examples = tasks_lib.get_processor("cola").get_train_examples(str(tmp_path))
    cls.write_classifier_records(examples, ["0", "1"], 8, tokenizer(), out, meta=meta)
    assert records.records_are_current(out, meta)
    assert records.read_records_meta(out)["num_records"] == 1
    for changed in (dict(max_seq_length=9), dict(do_lower_case=False),
                    dict(label_list=["1", "0"]), dict(task_name="sst-2")):
        args = dict(task_name="cola", input_files=[str(data)], max_seq_length=8,
                    vocab_file=str(VOCAB), do_lower_case=True, label_list=["0", "1"])
        args.update(changed)
        assert not records.records_are_current(out, records.records_meta(**args)), changed
    write(data, "s\t1\t\tfirst, edited\n")
    assert not records.records_are_current(
        out, records.records_meta("cola", [str(data)], 8, str(VOCAB), True, ["0", "1"]))
    with open(out, "ab") as f:  # a record file changed after it was written
        f.write(b"\0")
    assert not records.records_are_current(out, meta)
    (tmp_path / ("train.tf_record" + records.META_SUFFIX)).write_text("{not json")
    assert not records.records_are_current(out, meta)


def test_rewrite_removes_the_old_sidecar_first(tmp_path, monkeypatch):
    out = str(tmp_path / "r.tf_record")
    meta = records.records_meta("cola", [], 8, str(VOCAB), True, ["0", "1"])
    examples = [InputExample("a", "x", None, "1")]
    cls.write_classifier_records(examples, ["0", "1"], 8, tokenizer(), out, meta=meta)

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(cls.files, "replace", fail)
    with pytest.raises(OSError):
        cls.write_classifier_records(examples, ["0", "1"], 8, tokenizer(), out, meta=meta)
    assert not records.records_are_current(out, meta)
    assert sorted(os.listdir(tmp_path)) == ["r.tf_record"]


# --- arithmetic ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n,batch,epochs,proportion,steps,warmup", EXPECTED["steps"])
def test_num_train_steps_and_warmup(n, batch, epochs, proportion, steps, warmup):
    assert records.num_train_steps_and_warmup(n, batch, epochs, proportion) == (steps, warmup)


def test_num_train_steps_rejects_zero_batch():
    with pytest.raises(records.RecordsError, match="--train_batch_size=0"):
        records.num_train_steps_and_warmup(10, 0, 3.0, 0.1)


def test_pairs_whose_b_is_truncated_away_match_the_original_layout():
    # The original's extract_features (same layout as the classifier) recorded at
    # max_seq_length 4 (tests/data/extract_features/): when truncation empties b, the second
    # [SEP] is left out and every segment id is 0.
    recorded = json.loads((Path(__file__).parent / "data" / "extract_features" /
                           "read_convert_expected.json").read_text())
    tokenizer = tokenization.FullTokenizer(str(SHARED_DIR / "data" / recorded["vocab"]),
                                           recorded["do_lower_case"])
    length = recorded["short_max_seq_length"]
    checked = 0
    for (_, text_a, text_b), expected in zip(recorded["examples"], recorded["short_features"]):
        if text_b is None:
            continue
        features = cls.convert_single_example(
            0, InputExample("g", text_a, text_b, "0"), ["0", "1"], length, tokenizer)
        assert features.input_ids == expected["input_ids"], text_a
        assert features.segment_ids == expected["input_type_ids"], text_a
        checked += 1
    assert checked >= 2
