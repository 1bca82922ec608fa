"""bert_tf.albert.race_data against google-research/albert's race_utils (recorded by
tests/data/albert_race/make_expected.py): the examples its RaceProcessor reads, the records of
its file_based_convert_examples_to_features, and bad input refused in one line."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert import race_data
from bert_tf.albert.tokenization import FullTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "albert_race")
SPM = os.path.join(HERE, "data", "albert_spm", "albert.model")

with open(os.path.join(DATA, "examples.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)
SETTINGS = EXPECTED["settings"]
SPLITS = ("train", "dev", "test")


def processor_of(setting):
    _, _, lower, high_only, middle_only = SETTINGS[setting]
    return race_data.RaceProcessor(lower, high_only=high_only, middle_only=middle_only)


def tokenizer_of(setting):
    return FullTokenizer(None, SETTINGS[setting][2], spm_model_file=SPM)


def parsed(path):
    """[{feature: list of values}] of a record file, in order."""
    out = []
    for raw in tf.data.TFRecordDataset(path):
        example = tf.train.Example.FromString(raw.numpy())
        out.append({name: list(feature.int64_list.value)
                    for name, feature in example.features.feature.items()})
    return out


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_examples_equal_the_originals(setting):
    processor = processor_of(setting)
    for split in SPLITS:
        examples = processor.get_examples(DATA, split)
        got = [[e.example_id, e.context_sentence, e.endings, e.label] for e in examples]
        assert got == EXPECTED["examples"][setting][split], (setting, split)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_records_equal_the_originals(setting, tmp_path):
    length, qa_length = SETTINGS[setting][:2]
    processor, tokenizer = processor_of(setting), tokenizer_of(setting)
    for split in SPLITS:
        examples = processor.get_examples(DATA, split)
        path = str(tmp_path / f"{split}.tf_record")
        assert race_data.write_race_records(examples, length, tokenizer, path,
                                            qa_length) == len(examples)
        original = os.path.join(DATA, "records", f"{setting}_{split}.tf_record")
        assert parsed(path) == parsed(original), (setting, split)
        # Our bytes are protobuf's deterministic serialization of the original's records.
        ours = [r.numpy() for r in tf.data.TFRecordDataset(path)]
        theirs = [tf.train.Example.FromString(r.numpy()).SerializeToString(deterministic=True)
                  for r in tf.data.TFRecordDataset(original)]
        assert ours == theirs


def test_convert_single_example_and_the_spec_read_the_records():
    setting = "s48_q10"
    length, qa_length = SETTINGS[setting][:2]
    examples = processor_of(setting).get_train_examples(DATA)
    tokenizer = tokenizer_of(setting)
    records = parsed(os.path.join(DATA, "records", f"{setting}_train.tf_record"))
    spec = race_data.record_feature_spec(length)
    raw = next(iter(tf.data.TFRecordDataset(
        os.path.join(DATA, "records", f"{setting}_train.tf_record")).batch(len(records))))
    batch = tf.io.parse_example(raw, spec)
    assert batch["input_ids"].shape == (len(examples), race_data.NUM_CHOICES, length)
    for i, example in enumerate(examples):
        features = race_data.convert_single_example(i, example, length, tokenizer, qa_length)
        for name in ("input_ids", "input_mask", "segment_ids"):
            assert sum(getattr(features, name), []) == records[i][name]
            np.testing.assert_array_equal(batch[name][i].numpy(), getattr(features, name))
        assert [features.label_id] == records[i]["label_ids"] == [batch["label_ids"][i]]


def test_long_passages_and_options_are_truncated_as_the_original():
    """The long article fills every sequence; each ending keeps its last max_qa_length pieces
    and the article its first pieces (checked against the records above, spelled out)."""
    setting = "s48_q10"
    length, qa_length = SETTINGS[setting][:2]
    tokenizer = tokenizer_of(setting)
    examples = processor_of(setting).get_dev_examples(DATA)
    long_one = [e for e in examples if e.example_id == "middle3.txt"][0]
    context = tokenizer.tokenize(long_one.context_sentence)
    assert len(context) > length
    features = race_data.convert_single_example(0, long_one, length, tokenizer, qa_length)
    for j, ending in enumerate(long_one.endings):
        kept = tokenizer.tokenize(ending)[-qa_length:]
        article = context[:length - 3 - len(kept)]
        tokens = ["[CLS]"] + article + ["[SEP]"] + kept + ["[SEP]"]
        assert len(tokens) == length
        assert features.input_ids[j] == tokenizer.convert_tokens_to_ids(tokens)
        assert features.input_mask[j] == [1] * length
        assert features.segment_ids[j] == [0] * (len(article) + 2) + [1] * (len(kept) + 1)
    # An ending longer than max_qa_length keeps its end (the option), not the question.
    short = [e for e in examples if e.endings[3].endswith("and the lake.")][0]
    pieces = tokenizer.tokenize(short.endings[3])
    assert len(pieces) > qa_length
    features = race_data.convert_single_example(0, short, length, tokenizer, qa_length)
    n = sum(features.input_mask[3])
    assert features.input_ids[3][n - 1 - qa_length:n - 1] == tokenizer.convert_tokens_to_ids(
        pieces[-qa_length:])


def test_release_layout_reads_the_same_examples(tmp_path):
    """Without all.txt, a level's one-document files (RACE.tar.gz's layout) in name order."""
    for split in SPLITS:
        for level in race_data.LEVELS:
            source = os.path.join(DATA, "RACE", split, level, "all.txt")
            target = tmp_path / "RACE" / split / level
            target.mkdir(parents=True)
            with open(source, encoding="utf-8") as f:
                for number, line in enumerate(f):
                    # Pretty-printed, as the release's files are not one line each.
                    (target / f"{number:04d}.txt").write_text(
                        json.dumps(json.loads(line), indent=1, ensure_ascii=False),
                        encoding="utf-8")
    processor = processor_of("s48_q10")
    for split in SPLITS:
        got = [[e.example_id, e.context_sentence, e.endings, e.label]
               for e in processor.get_examples(str(tmp_path), split)]
        assert got == EXPECTED["examples"]["s48_q10"][split]


def _race_root(tmp_path, lines, level="middle", split="train"):
    root = tmp_path / "data"
    for lev in race_data.LEVELS:
        (root / "RACE" / split / lev).mkdir(parents=True, exist_ok=True)
        (root / "RACE" / split / lev / "all.txt").write_text("", encoding="utf-8")
    path = root / "RACE" / split / level / "all.txt"
    path.write_bytes(lines if isinstance(lines, bytes) else "\n".join(lines).encode("utf-8"))
    return str(root), str(path)


GOOD = {"id": "m1.txt", "article": "A b.", "questions": ["Q _ ?"],
        "options": [["a", "b", "c", "d"]], "answers": ["A"]}


def _doc(**changes):
    return json.dumps(dict(GOOD, **changes))


@pytest.mark.parametrize("line, message", [
    ("{not json", r":2: not JSON"),
    ("[1, 2]", r":2: not a RACE document"),
    (_doc(article=None).replace('"article": null, ', ""), r":2: the RACE document lacks "
                                                          r"article"),
    (_doc(options=[["a", "b", "c"]]), r":2: question 1 has not 4 options"),
    (_doc(answers=["E"]), r":2: question 1's answer is 'E', not one of A, B, C, D"),
    (_doc(answers=["A", "B"]), r":2: 1 questions, 1 option lists and 2 answers"),
    (_doc(questions=[3]), r":2: 'questions' and 'answers' must be lists of strings"),
])
def test_bad_lines_are_refused_naming_file_and_line(tmp_path, line, message):
    root, path = _race_root(tmp_path, [_doc(), line])
    processor = race_data.RaceProcessor()
    with pytest.raises(race_data.RaceDataError, match=message) as info:
        processor.get_train_examples(root)
    assert str(info.value).startswith(path + ":2: ")
    assert "\n" not in str(info.value)


def test_blank_lines_are_skipped_and_bad_utf8_refused(tmp_path):
    root, _ = _race_root(tmp_path, ["", _doc(), "   ", _doc(id="m2.txt"), ""])
    assert [e.example_id for e in race_data.RaceProcessor().get_train_examples(root)] == [
        "m1.txt", "m2.txt"]
    root, path = _race_root(tmp_path, _doc().encode() + b"\n" + b'{"article": "\xff"}\n')
    with pytest.raises(race_data.RaceDataError, match=r"all\.txt:2: not UTF-8"):
        race_data.RaceProcessor().get_train_examples(root)


def test_missing_files_and_flags_are_refused(tmp_path):
    root, _ = _race_root(tmp_path, [_doc()])
    shutil.rmtree(os.path.join(root, "RACE", "train", "high"))
    with pytest.raises(race_data.RaceDataError,
                       match=r"RACE/train/high/all\.txt: no such file \(RACE's train set"):
        race_data.RaceProcessor().get_train_examples(root)
    # --middle_only reads the level that is there.
    assert len(race_data.RaceProcessor(middle_only=True).get_train_examples(root)) == 1
    with pytest.raises(race_data.RaceDataError, match="--high_only and --middle_only"):
        race_data.RaceProcessor(high_only=True, middle_only=True)


def test_an_ending_longer_than_the_sequence_is_refused(tmp_path):
    """The original fails an assert when an ending keeps more than max_seq_length - 3 pieces;
    ours names the document and the choice."""
    root, path = _race_root(tmp_path, [_doc(options=[["a", "b", "c", "d " * 30]])])
    examples = race_data.RaceProcessor().get_train_examples(root)
    tokenizer = FullTokenizer(None, True, spm_model_file=SPM)
    with pytest.raises(race_data.RaceDataError,
                       match=rf"{path}:1: an ending \(m1\.txt, choice D\) keeps 20 pieces "
                             r"after --max_qa_length=20, more than --max_seq_length - 3 = 13"):
        race_data.write_race_records(examples, 16, tokenizer, str(tmp_path / "r"), 20)
    assert not os.path.exists(tmp_path / "r")
    # max_qa_length 0 keeps the whole ending (Python's pieces[-0:]), as the original.
    features = race_data.convert_single_example(0, examples[0], 128, tokenizer, 0)
    assert sum(features.input_mask[3]) == 3 + len(tokenizer.tokenize("A b.")) + len(
        tokenizer.tokenize(examples[0].endings[3]))
