"""bert_tf.data.squad against the original run_squad.py (tests/data/squad/expected.json.gz)."""

import gzip
import json
import logging
import os
import random

import pytest

from bert_tf.bert.tokenization import FullTokenizer
from bert_tf.data import squad
from conftest import SHARED_DIR, load_recorder

HERE = os.path.dirname(os.path.abspath(__file__))
make_expected = load_recorder("squad")  # the recorder: file names, record layouts

EXPECTED = json.load(gzip.open(os.path.join(HERE, "data", "squad", "expected.json.gz"), "rt",
                               encoding="utf-8"))
VOCAB = str(SHARED_DIR / "data" / "uncased_vocab.txt")


@pytest.fixture(scope="module")
def tokenizer():
    if not os.path.exists(VOCAB):
        pytest.skip(f"{VOCAB} is absent (../shared/data comes with CI, not with a clone)")
    return FullTokenizer(VOCAB, do_lower_case=True)


@pytest.fixture
def absl_log():
    capture = make_expected.Capture()
    logger = logging.getLogger("absl")
    old_level = logger.level
    logger.addHandler(capture)
    logger.setLevel(logging.INFO)
    yield capture.messages
    logger.removeHandler(capture)
    logger.setLevel(old_level)


def _read(version, mode):
    return squad.read_squad_examples(make_expected.FILES[version], mode == "train",
                                     version_2_with_negative=version == "v2")


@pytest.mark.parametrize("name", sorted(EXPECTED["read"]))
def test_read_squad_examples_equals_original(name, absl_log):
    version, mode = name.split("/")
    examples = _read(version, mode)
    assert [make_expected.example_record(e) for e in examples] == \
        EXPECTED["read"][name]["examples"]
    assert [m for m in absl_log if m.startswith("Could not find")] == \
        EXPECTED["read"][name]["log"]
    # The questions of a paragraph share its word list, as in the original.
    assert examples[0].doc_tokens is examples[1].doc_tokens


def _features(name, tokenizer):
    version, mode, max_seq_length, max_query_length, doc_stride = name.split("/")
    examples = _read(version, mode)
    if mode == "train":
        random.Random(12345).shuffle(examples)
    features = []
    squad.convert_examples_to_features(examples, tokenizer, int(max_seq_length),
                                       int(doc_stride), int(max_query_length), mode == "train",
                                       features.append)
    return examples, features


@pytest.mark.parametrize("name", sorted(EXPECTED["features"]))
def test_convert_examples_to_features_equals_original(name, tokenizer):
    expected = EXPECTED["features"][name]
    examples, features = _features(name, tokenizer)
    assert [e.qas_id for e in examples] == expected["order"]
    # Through JSON, so that tuples/lists and dict order compare as the recorded ones.
    records = json.loads(json.dumps([make_expected.feature_record(f) for f in features]))
    if "features" in expected:
        for got, want in zip(records, expected["features"]):
            assert got == want
    assert len(records) == expected["count"]
    assert make_expected.digest(records) == expected["sha256"]


def test_logging_of_the_first_examples_equals_original(tokenizer, absl_log):
    _features(make_expected.LOGGED_RUN, tokenizer)
    expected = EXPECTED["features"][make_expected.LOGGED_RUN]["log"]
    assert [m for m in absl_log if not m.startswith("Could not find")] == expected
    assert expected.count("*** Example ***") == sum(
        1 for m in expected if m.startswith("unique_id:"))


def test_improve_answer_span_equals_original(tokenizer):
    for doc, start, end, text, expected in EXPECTED["improve"]:
        assert list(squad._improve_answer_span(doc, start, end, tokenizer, text)) == expected


def test_check_is_max_context_equals_original():
    for spans, table in EXPECTED["max_context"]:
        doc_spans = [squad.DocSpan(*s) for s in spans]
        for j, row in enumerate(table):
            assert [squad._check_is_max_context(doc_spans, j, p) for p in range(len(row))] == row


def test_empty_context_gives_no_feature(tokenizer, tmp_path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [
        {"context": " \t\u202f", "qas": [{"id": "q", "question": "Why?", "answers": []}]}]}]}))
    examples = squad.read_squad_examples(path, is_training=False)
    features = []
    squad.convert_examples_to_features(examples, tokenizer, 20, 3, 5, False, features.append)
    assert examples[0].doc_tokens == [] and features == []


# --- errors ----------------------------------------------------------------------------------

def _write(tmp_path, data, name="data.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def _one(qa, context="Steve Smith was here."):
    return {"data": [{"paragraphs": [{"context": context, "qas": [qa]}]}]}


@pytest.mark.parametrize("data, is_training, v2, message", [
    ("{not json", False, False, "not JSON"),
    ({"version": "1.1"}, False, False, "top level: no 'data'"),
    ({"data": {"paragraphs": []}}, False, False, "'data' must be list"),
    ({"data": [{"title": "t"}]}, False, False, "data[0]: no 'paragraphs'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, False, False, "paragraphs[0]: no 'context'"),
    (_one({"question": "Who?", "answers": []}), False, False, "qas[0]: no 'id'"),
    (_one({"id": "q7", "answers": []}), False, False, "question id 'q7': no 'question'"),
    (_one({"id": "q7", "question": "Who?"}), True, False, "question id 'q7': no 'answers'"),
    (_one({"id": "q7", "question": "Who?", "answers": [
        {"text": "Steve", "answer_start": 0}, {"text": "Smith", "answer_start": 6}]}),
     True, False, "'q7': 2 answers; for training, each question should have exactly 1"),
    (_one({"id": "q7", "question": "Who?", "answers": [{"text": "Steve"}]}), True, False,
     "'q7', answer: no 'answer_start'"),
    (_one({"id": "q7", "question": "Who?", "answers": [{"text": "Steve", "answer_start": -2}]}),
     True, False, "'q7': answer_start -2 with a 5-character answer lies outside"),
    (_one({"id": "q7", "question": "Who?", "answers": [{"text": "here.", "answer_start": 18}]}),
     True, False, "'q7': answer_start 18 with a 5-character answer lies outside its "
                  "21-character context"),
    (_one({"id": "q7", "question": "Who?", "answers": [{"text": " ", "answer_start": 5}]}),
     True, False, "'q7': the answer text ' ' is empty"),
    (_one({"id": "q7", "question": "Who?", "answers": [], "is_impossible": True}), True, False,
     "'q7' is marked is_impossible (SQuAD 2.0 data): pass version_2_with_negative=True"),
    (_one({"id": "q7", "question": "Who?", "answers": [], "is_impossible": True}), False, False,
     "--version_2_with_negative"),
    (_one({"id": "q7", "question": "Who?", "answers": [{"text": "Steve", "answer_start": 0}]}),
     True, True, "'q7': no 'is_impossible'"),
])
def test_bad_files_raise_one_clear_error(tmp_path, data, is_training, v2, message):
    path = _write(tmp_path, data)
    with pytest.raises(squad.SquadDataError) as info:
        squad.read_squad_examples(path, is_training, version_2_with_negative=v2)
    assert message in str(info.value)
    assert path in str(info.value)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(squad.SquadDataError, match="nope.json: no such file"):
        squad.read_squad_examples(tmp_path / "nope.json", is_training=False)


def test_prediction_ignores_answers(tmp_path):
    # The original never reads answers in prediction: an answer outside the context is fine.
    path = _write(tmp_path, _one({"id": "q", "question": "Who?",
                                  "answers": [{"text": "x", "answer_start": 999}]}))
    (example,) = squad.read_squad_examples(path, is_training=False)
    assert example.start_position is None and example.orig_answer_text is None


@pytest.mark.parametrize("max_seq_length, doc_stride, max_query_length, message", [
    (20, 0, 5, "doc_stride must be positive"),
    (20, -3, 5, "doc_stride must be positive"),
    (8, 3, 5, r"The max_seq_length \(8\) must be greater than max_query_length \(5\) \+ 3"),
])
def test_bad_window_settings_raise(tokenizer, max_seq_length, doc_stride, max_query_length,
                                   message):
    examples = _read("v1", "predict")
    with pytest.raises(ValueError, match=message):
        squad.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                           max_query_length, False, lambda f: None)


# --- records ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["train", "predict"])
def test_feature_writer_records_parse_back(tokenizer, tmp_path, mode):
    import tensorflow as tf

    is_training = mode == "train"
    _, features = _features(f"v2/{mode}/20/5/3", tokenizer)
    path = str(tmp_path / "out.tf_record")
    writer = squad.FeatureWriter(path, is_training)
    for feature in features:
        writer.process_feature(feature)
    assert not os.path.exists(path)  # only the temporary file until close
    writer.close()
    assert writer.num_features == len(features) and os.listdir(tmp_path) == ["out.tf_record"]

    spec = squad.record_feature_spec(20, is_training)
    assert set(spec) == ({"unique_ids", "input_ids", "input_mask", "segment_ids"} |
                         ({"start_positions", "end_positions"} if is_training else set()))
    full_spec = dict(spec, is_impossible=tf.io.FixedLenFeature([], tf.int64)) \
        if is_training else spec
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
    assert len(records) == len(features)
    parsed = {k: v.numpy().tolist() for k, v in tf.io.parse_example(records, full_spec).items()}
    for i, (record, feature) in enumerate(zip(records, features)):
        assert parsed["unique_ids"][i] == feature.unique_id
        for name in ("input_ids", "input_mask", "segment_ids"):
            assert parsed[name][i] == getattr(feature, name)
        # The original's Example, deterministically serialized, has the same bytes.
        values = {"unique_ids": [feature.unique_id], "input_ids": feature.input_ids,
                  "input_mask": feature.input_mask, "segment_ids": feature.segment_ids}
        if is_training:
            assert parsed["start_positions"][i] == feature.start_position
            assert parsed["end_positions"][i] == feature.end_position
            assert parsed["is_impossible"][i] == int(feature.is_impossible)
            values.update(start_positions=[feature.start_position],
                          end_positions=[feature.end_position],
                          is_impossible=[int(feature.is_impossible)])
        example = tf.train.Example(features=tf.train.Features(feature={
            k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
            for k, v in values.items()}))
        assert record == example.SerializeToString(deterministic=True)


def test_feature_writer_leaves_nothing_on_error(tokenizer, tmp_path):
    _, features = _features("v1/predict/20/5/3", tokenizer)
    path = str(tmp_path / "out.tf_record")
    with pytest.raises(RuntimeError):
        with squad.FeatureWriter(path, is_training=False) as writer:
            writer.process_feature(features[0])
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == []


# -- SentencePiece (ALBERT): answers aligned by characters ---------------------------------------

@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def albert_tokenizer(request):
    from albert_fixtures import SPM_MODEL

    from bert_tf.albert.tokenization import AlbertTokenizer

    return AlbertTokenizer(SPM_MODEL, do_lower_case=request.param)


def _albert_features(tmp_path, tokenizer, is_training, version_2=False):
    from albert_fixtures import write_squad

    path = write_squad(tmp_path / "squad.json", version_2)
    examples = squad.read_squad_examples(path, is_training, version_2)
    features = []
    squad.convert_examples_to_features(examples, tokenizer, 40, 8, 12, is_training,
                                       features.append)
    return examples, features


def test_sentencepiece_training_answers_are_their_characters(albert_tokenizer, tmp_path):
    """Every training answer (accents precomposed and decomposed, digits with commas, inside
    a word, across a whitespace run, an NBSP or punctuation) is the pieces holding exactly its
    characters, in every window that holds it whole; windows without it point at [CLS]."""
    from albert_fixtures import ANSWERS

    examples, features = _albert_features(tmp_path, albert_tokenizer, True, version_2=True)
    assert len(features) > 3 * len(examples)  # long contexts: several windows each
    found = {}
    for feature in features:
        example = examples[feature.example_index]
        assert feature.tokens[0] == "[CLS]" and feature.tokens.count("[SEP]") == 2
        assert feature.input_ids[:feature.num_tokens] == albert_tokenizer.convert_tokens_to_ids(
            feature.tokens)
        if example.is_impossible or feature.start_position == 0:
            assert feature.start_position == feature.end_position == 0
            continue
        document, base = feature.document, feature.doc_start - feature.doc_offset
        text = document.span_text(example.paragraph_text, base + feature.start_position,
                                  base + feature.end_position)
        assert text == example.orig_answer_text, example.qas_id
        found[example.qas_id] = found.get(example.qas_id, 0) + 1
    assert set(found) == {qas_id for qas_id, *_ in ANSWERS}
    # Pieces are those of each whole word, tokenized alone (as BERT's words are).
    document = features[0].document
    words = examples[0].doc_tokens
    assert document.ids == [i for w in words for i in albert_tokenizer.tokenize_to_ids(w)]


def test_sentencepiece_pieces_know_their_characters(albert_tokenizer, tmp_path):
    examples, features = _albert_features(tmp_path, albert_tokenizer, False)
    documents = {id(f.document): (f.document, examples[f.example_index]) for f in features}
    assert len(documents) == 2  # one per paragraph, shared by its questions
    for document, example in documents.values():
        context = example.paragraph_text
        for i, (start, end) in enumerate(zip(document.char_starts, document.char_ends)):
            word = document.tok_to_orig_index[i]
            word_start = example.word_starts[word]
            # Inside its word.
            assert word_start <= start <= end <= word_start + len(example.doc_tokens[word])
            unknown = document.ids[i] == albert_tokenizer.sp_model.unk_id()
            if start < end and not unknown:
                normalized = albert_tokenizer.preprocess(context[start:end])
                piece = document.tokens[i].replace("▁", "")
                assert piece.casefold() in albert_tokenizer.sp_model.Normalize(
                    normalized).casefold()


def test_wordpiece_examples_keep_the_originals_alignment(tokenizer):
    """BERT's tokenizer gives no offsets: its documents carry none, and its training answers
    are the original's (test_convert_examples_to_features_equals_original)."""
    examples = _read("v1", "train")
    assert examples[0].paragraph_text is not None and examples[0].answer_start is not None
    features = []
    squad.convert_examples_to_features(examples[:2], tokenizer, 64, 16, 8, True,
                                       features.append)
    assert features[0].document.char_starts is None
