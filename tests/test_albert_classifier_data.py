"""bert_tf.albert.classifier_data against google-research/albert's classifier_utils.py, recorded
by tests/data/albert_classifier/make_expected.py on a small GLUE root: every task's examples
(guids, texts and labels through preprocess_text, both casings for mrpc and sst-2) and records
(max_seq_length 32, SentencePiece); bad input refused in one line naming the file and line."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert import classifier_data
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.data.classifier import ClassifierDataError

DATA = Path(__file__).resolve().parent / "data" / "albert_classifier"
GLUE = DATA / "glue"
SPM = Path(__file__).resolve().parent / "data" / "albert_spm" / "albert.model"
EXAMPLES = json.loads((DATA / "examples.json").read_text(encoding="utf-8"))
MAX_SEQ_LENGTH = 32


def examples_of(task, split, do_lower_case=True, data_dir=GLUE):
    processor = classifier_data.get_processor(task, do_lower_case)
    return processor.get_examples(str(data_dir), split)


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_examples_equal_the_originals(key):
    task, _, cased = key.partition("/")
    for split, expected in EXAMPLES[key].items():
        ours = [[e.guid, e.text_a, e.text_b, e.label]
                for e in examples_of(task, split, do_lower_case=not cased)]
        assert ours == expected, (key, split)
        if task == "sts-b":
            assert all(isinstance(e[3], float) for e in ours)


def read_records(path):
    out = []
    for raw in tf.data.TFRecordDataset(str(path)):
        example = tf.train.Example.FromString(raw.numpy())
        features = {}
        for name, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            features[name] = (kind, list(getattr(feature, kind).value))
        out.append(features)
    return out


@pytest.mark.parametrize("task", sorted(classifier_data.PROCESSORS))
def test_records_equal_the_originals(task, tmp_path):
    processor = classifier_data.get_processor(task)
    tokenizer = FullTokenizer(None, True, spm_model_file=str(SPM))
    for split in ("train", "dev", "test"):
        path = tmp_path / f"{task}_{split}.tf_record"
        examples = processor.get_examples(str(GLUE), split)
        assert classifier_data.write_records(examples, processor.get_labels(), MAX_SEQ_LENGTH,
                                             tokenizer, str(path)) == len(examples)
        ours, original = read_records(path), read_records(
            DATA / "records" / f"{task}_{split}.tf_record")
        assert ours == original, (task, split)
        assert len(ours) == len(examples)
        kind = "float_list" if task == "sts-b" else "int64_list"
        assert all(r["label_ids"][0] == kind for r in ours)


def test_records_cover_truncation_and_an_empty_second_text():
    """The fixture exercises what the layout rules act on: pairs cut to max_seq_length (the
    longer text first), and an MRPC pair whose second text is empty (the single layout)."""
    records = read_records(DATA / "records" / "mrpc_train.tf_record")
    lengths = [sum(r["input_mask"][1]) for r in records]
    assert MAX_SEQ_LENGTH in lengths
    singles = [r for r in records if not any(r["segment_ids"][1])]
    assert len(singles) == 1
    assert EXAMPLES["mrpc"]["train"][3][2] == ""


def test_task_names_are_the_originals_case_insensitive():
    assert sorted(classifier_data.PROCESSORS) == sorted(
        ["cola", "mnli", "mismnli", "mrpc", "rte", "sst-2", "sts-b", "qqp", "qnli", "wnli"])
    assert classifier_data.get_processor("STS-B").is_regression
    assert classifier_data.get_processor("MisMNLI").input_file("/glue", "dev") == (
        "/glue/MNLI/dev_mismatched.tsv")
    with pytest.raises(ClassifierDataError, match=r"--task_name='xnli': Task not found"):
        classifier_data.get_processor("xnli")


def copy_task(tmp_path, task_dir):
    target = tmp_path / "glue" / task_dir
    target.mkdir(parents=True)
    for path in (GLUE / task_dir).iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return tmp_path / "glue", target


def replace_line(path, number, text):
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = text
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("task, task_dir, line, text, message", [
    ("mrpc", "MRPC", 3, b"1\t5\t6\tonly three", r"MRPC/train.tsv line 3: expected at least 5 "
     r"tab-separated columns, found 4"),
    ("mrpc", "MRPC", 2, b"2\t1\t2\ta\tb", r"MRPC/train.tsv line 2: label '2' is not one of the "
     r"task's labels \['0', '1'\]"),
    ("sts-b", "STS-B", 4, b"3\tg\tf\ty\t0\tn\tn\ta\tb\thigh", r"STS-B/train.tsv line 4: score "
     r"'high' is not a number"),
    ("rte", "RTE", 2, b"0\ta\tb\tmaybe", r"RTE/train.tsv line 2: label 'maybe'"),
    ("mrpc", "MRPC", 5, b"1\t5\t6\t\xff\xfe\tb", r"MRPC/train.tsv line 5: not valid UTF-8"),
])
def test_bad_rows_are_refused_naming_file_and_line(tmp_path, task, task_dir, line, text,
                                                   message):
    glue, directory = copy_task(tmp_path, task_dir)
    replace_line(directory / "train.tsv", line, text)
    with pytest.raises(ClassifierDataError, match=message):
        examples_of(task, "train", data_dir=glue)


def test_missing_file_names_the_glue_layout(tmp_path):
    with pytest.raises(ClassifierDataError,
                       match=r"CoLA/dev.tsv: no such file \(task 'cola' reads its dev set from "
                             r"CoLA/dev.tsv under --data_dir, the GLUE root\)"):
        examples_of("cola", "dev", data_dir=tmp_path)


def test_blank_lines_are_skipped_and_still_counted_in_guids(tmp_path):
    glue, directory = copy_task(tmp_path, "MRPC")
    path = directory / "train.tsv"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:3] + [b""] + lines[3:]))
    ours = examples_of("mrpc", "train", data_dir=glue)
    original = EXAMPLES["mrpc"]["train"]
    assert [e.text_a for e in ours] == [e[1] for e in original]
    assert [e.guid for e in ours] == ["train-1", "train-2"] + [
        f"train-{i + 1}" for i in range(3, len(original) + 1)]


def test_qqp_skips_short_rows_of_train_and_dev_only(tmp_path):
    glue, directory = copy_task(tmp_path, "QQP")
    assert len(examples_of("qqp", "train", data_dir=glue)) == len(EXAMPLES["qqp"]["train"])
    replace_line(directory / "test.tsv", 2, b"0\tonly a question")
    with pytest.raises(ClassifierDataError, match=r"QQP/test.tsv line 2: expected at least 3"):
        examples_of("qqp", "test", data_dir=glue)


def test_regression_records_hold_float_scores(tmp_path):
    (record,) = read_records(DATA / "records" / "sts-b_train.tf_record")[:1]
    assert record["label_ids"] == ("float_list", [np.float32(5.0)])
