"""bert_tf.albert.squad_data against google-research/albert's squad_utils.py, run unmodified
(recorded by tests/data/albert_squad/make_expected.py; a live fuzz comparison when a copy of
the original is at hand)."""

import gzip
import json
import logging
import os
import pickle
import random

import pytest

from bert_tf.albert import squad_data
from bert_tf.albert.tokenization import FullTokenizer, encode_pieces, preprocess_text
from conftest import ALBERT_ORIGINAL_REPO, load_recorder

HERE = os.path.dirname(os.path.abspath(__file__))
make_expected = load_recorder("albert_squad")
EXPECTED = json.load(gzip.open(os.path.join(HERE, "data", "albert_squad", "expected.json.gz"),
                               "rt", encoding="utf-8"))


@pytest.fixture(scope="module")
def tokenizers():
    return {lower: FullTokenizer(None, lower, make_expected.SPM_MODEL) for lower in (True, False)}


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


@pytest.mark.parametrize("name", sorted(EXPECTED["read"]))
def test_read_squad_examples_equals_original(name):
    version, mode = name.split("/")
    examples = squad_data.read_squad_examples(make_expected.FILES[version], mode == "train")
    assert [make_expected.example_record(e) for e in examples] == EXPECTED["read"][name]
    # The questions of a paragraph share its text.
    assert examples[0].paragraph_text is examples[1].paragraph_text


def _convert(name, tokenizers, writer=None):
    run_version, mode, max_seq_length, doc_stride, max_query_length, case = name.split("/")
    is_training = mode == "train"
    examples = squad_data.read_squad_examples(make_expected.FILES[run_version], is_training)
    features = []

    def output(feature):
        features.append(feature)
        if writer is not None:
            writer.process_feature(feature)

    summary = squad_data.convert_examples_to_features(
        examples, tokenizers[case == "lower"], int(max_seq_length), int(doc_stride),
        int(max_query_length), is_training, output, do_lower_case=case == "lower")
    return features, summary


@pytest.mark.parametrize("name", sorted(EXPECTED["features"]))
def test_features_equal_original(name, tokenizers, absl_log, tmp_path):
    expected = EXPECTED["features"][name]
    record_file = tmp_path / "records.tfrecord"
    with squad_data.FeatureWriter(record_file, is_training="/train/" in name) as writer:
        features, summary = _convert(name, tokenizers, writer)
    ours = [make_expected.feature_record(f) for f in features]
    if "features" in expected:
        assert len(ours) == len(expected["features"])
        for got, want in zip(ours, expected["features"]):
            assert got == want, got["unique_id"]
    assert len(ours) == expected["num_features"]
    assert make_expected.features_digest(ours) == expected["sha256"]
    assert absl_log.count(squad_data.MISMATCH_MESSAGE) == expected["mismatches"]
    assert summary.num_mismatched == expected["mismatches"]
    assert summary.num_features == len(features)
    assert summary.num_negative == sum(f.is_impossible for f in features)
    if "records" in expected:
        assert make_expected.parse_records(str(record_file)) == expected["records"]


def test_fixture_covers_its_cases(tokenizers):
    """The fixture has what it claims: several windows, an impossible question, out-of-span
    windows, a paragraph kept only on the retry, two dropped, accents, digit-comma pieces."""
    features = EXPECTED["features"]["v2/train/64/24/12/lower"]["features"]
    windows = {}
    for f in features:
        windows[f["unique_id"] - f["doc_span_index"]] = f["doc_span_index"] + 1
    assert max(windows.values()) >= 3
    assert any(f["is_impossible"] and f["start_position"] == 0 for f in features)
    examples = squad_data.read_squad_examples(make_expected.FILES["v2"], True)
    assert sum(e.is_impossible for e in examples) == 2
    sp = tokenizers[True].sp_model
    kept = {}
    for context, _ in make_expected.PARAGRAPHS:
        pieces = encode_pieces(sp, preprocess_text(context, lower=True))
        kept[context] = squad_data.align_paragraph(context, pieces, True)[1]
    assert not kept[make_expected.FAILS] and not kept[make_expected.LIGATURES]
    assert kept[make_expected.RETRY] and kept[make_expected.LONG]
    assert kept[make_expected.ACCENTS] and kept[make_expected.DIGITS]
    assert "▁" in encode_pieces(sp, preprocess_text(make_expected.DIGITS, lower=True))


def test_retry_doubles_the_band(tokenizers):
    """RETRY aligns only on the wider band; LONG on the first; FAILS on neither."""
    sp = tokenizers[True].sp_model
    for context, retried, kept in ((make_expected.RETRY, True, True),
                                   (make_expected.LONG, False, True),
                                   (make_expected.FAILS, True, False)):
        pieces = encode_pieces(sp, preprocess_text(context, lower=True))
        alignment, was_kept = squad_data.align_paragraph(context, pieces, True)
        n, m = len(context), len("".join(pieces))
        assert (alignment.retried, was_kept) == (retried, kept)
        assert alignment.max_dist == (abs(n - m) + 5) * (2 if retried else 1)
        assert (alignment.score > 0.8 * n) == kept


def test_convert_index():
    index = [None, 3, None, None, 7, None]
    assert squad_data.convert_index(index, 1) == 3
    assert squad_data.convert_index(index, 0, is_start=True) == 0
    assert squad_data.convert_index(index, 0, is_start=False) == 2
    assert squad_data.convert_index(index, 2, is_start=True) == 4
    assert squad_data.convert_index(index, 2, is_start=False) == 6
    assert squad_data.convert_index(index, 5, m=10, is_start=True) == 8
    assert squad_data.convert_index(index, 5, m=10, is_start=False) == 9
    assert squad_data.convert_index(index, 5, m=8) == 7
    assert squad_data.convert_index([None, 0, None], 0, is_start=False) == 0
    assert squad_data.convert_index([None, 4, 5], 0) == 0


def test_record_feature_spec():
    v1 = squad_data.record_feature_spec(16, is_training=True, is_v2=False)
    assert sorted(v1) == ["end_positions", "input_ids", "input_mask", "is_impossible",
                          "segment_ids", "start_positions", "unique_ids"]
    v2 = squad_data.record_feature_spec(16, is_training=False, is_v2=True)
    assert sorted(v2) == ["input_ids", "input_mask", "p_mask", "segment_ids", "unique_ids"]
    assert v2["p_mask"].shape == [16]


def _write(tmp_path, content, name="bad.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")
    return str(path)


def _paragraph(qas, context="Some text here."):
    return {"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}


@pytest.mark.parametrize("content, is_training, message", [
    ("{not json", False, "not JSON"),
    ({"version": "1.1"}, False, "no 'data'"),
    ({"data": [{"title": "x"}]}, False, "no 'paragraphs'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, False, "no 'context'"),
    (_paragraph([{"question": "q"}]), False, "no 'id'"),
    (_paragraph([{"id": "q1"}]), False, "question id 'q1': no 'question'"),
    (_paragraph([{"id": "q1", "question": "q"}]), True, "question id 'q1': no 'answers'"),
    (_paragraph([{"id": "q1", "question": "q", "answers": []}]), True, "exactly 1 answer"),
    (_paragraph([{"id": "q1", "question": "q", "answers": [{"text": "x"}]}]), True,
     "no 'answer_start'"),
    (_paragraph([{"id": "q1", "question": "q",
                  "answers": [{"text": "text", "answer_start": 40}]}]), True, "outside"),
    (_paragraph([{"id": "q1", "question": "q", "answers": [{"text": "", "answer_start": 0}]}]),
     True, "empty"),
    (_paragraph([{"id": "q1", "question": "q", "is_impossible": "yes", "answers": []}]), True,
     "is_impossible"),
])
def test_bad_input_file_is_one_line_naming_it(tmp_path, content, is_training, message):
    path = _write(tmp_path, content)
    with pytest.raises(squad_data.SquadDataError) as info:
        squad_data.read_squad_examples(path, is_training)
    text = str(info.value)
    assert path in text and message in text and "\n" not in text


def test_missing_file_names_it(tmp_path):
    path = str(tmp_path / "absent.json")
    with pytest.raises(squad_data.SquadDataError, match="absent.json: no such file"):
        squad_data.read_squad_examples(path, False)


def test_prediction_reads_no_answers(tmp_path):
    path = _write(tmp_path, _paragraph([{"id": "q1", "question": "q"}]))
    (example,) = squad_data.read_squad_examples(path, False)
    assert (example.orig_answer_text, example.start_position, example.is_impossible) == \
        (None, None, False)


def test_bad_settings(tokenizers):
    with pytest.raises(ValueError, match="max_query_length"):
        squad_data.convert_examples_to_features([], tokenizers[True], 10, 4, 7, False,
                                                print, True)
    with pytest.raises(ValueError, match="doc_stride"):
        squad_data.convert_examples_to_features([], tokenizers[True], 64, 0, 7, False,
                                                print, True)


def test_writer_leaves_no_file_on_error(tmp_path, tokenizers):
    path = tmp_path / "train.tf_record"
    with pytest.raises(RuntimeError):
        with squad_data.FeatureWriter(path, is_training=True) as writer:
            features, _ = _convert("v2/train/64/24/12/lower", tokenizers, writer)
            raise RuntimeError("stop")
    assert features and not os.listdir(tmp_path)


WORDS = ["the", "museum", "Café", "naïve", "Ångström", "1,234", "12,5,", "0,", "1990,",
         "\ufb01nal", "\ufb02ow", "½", "㎏", "中文", "😀", "e\u0301", "Straße", "İstanbul",
         "ΣΟΦΙΑ", "x" * 30, "don't", "(1895-1943).", "\ufb01\ufb01\ufb01", "Ⅻ", "①"]
SEPARATORS = [" ", " ", " ", "  ", ", ", ". ", "\u00a0", "\u3000", "\t", "\n", "   "]


def _random_examples(rng, module, count):
    examples = []
    for p in range(count):
        context = "".join(rng.choice(WORDS) + rng.choice(SEPARATORS)
                          for _ in range(rng.randint(1, 60)))
        for q in range(rng.randint(1, 3)):
            question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
            if rng.random() < 0.2 or not context.strip():
                examples.append(module.SquadExample(f"{p}-{q}", question, context, "", -1,
                                                    is_impossible=True))
            else:
                start = rng.randrange(len(context))
                end = rng.randint(start + 1, min(len(context), start + 30))
                examples.append(module.SquadExample(f"{p}-{q}", question, context,
                                                    context[start:end], start))
    return examples


@pytest.mark.slow
def test_features_equal_original_live_on_random_paragraphs(tokenizers):
    """Random paragraphs of accented, ligature, digit-comma, CJK and emoji words with runs of
    Unicode spaces (many need the retry; some are dropped), against the original run live."""
    if not (ALBERT_ORIGINAL_REPO / "squad_utils.py").exists():
        pytest.skip(f"no copy of google-research/albert at {ALBERT_ORIGINAL_REPO}")
    from tools.original import load_albert_module

    original = load_albert_module(ALBERT_ORIGINAL_REPO, "squad_utils")
    rng = random.Random(29)
    for trial, (lower, is_training, settings) in enumerate([
            (True, True, (32, 8, 6)), (False, False, (64, 16, 12)),
            (True, False, (128, 128, 20)), (False, True, (48, 200, 4))]):
        state = rng.getstate()
        theirs_examples = _random_examples(rng, original, 25)
        rng.setstate(state)
        ours_examples = _random_examples(rng, squad_data, 25)
        outputs = []
        for module, examples, tokenizer in (
                (original, theirs_examples,
                 original.tokenization.FullTokenizer(None, lower, make_expected.SPM_MODEL)),
                (squad_data, ours_examples, tokenizers[lower])):
            features = []
            module.convert_examples_to_features(
                examples=examples, tokenizer=tokenizer, max_seq_length=settings[0],
                doc_stride=settings[1], max_query_length=settings[2], is_training=is_training,
                output_fn=features.append, do_lower_case=lower)
            outputs.append([make_expected.feature_record(f) for f in features])
        assert outputs[0] == outputs[1], trial


# -- --predict_feature_left_file -------------------------------------------------------------
class _RunsOnLoad:
    """Pickles as a call of os.system(command)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def _reduce(module, name, argument):
    """A protocol-0 pickle that calls module.name(argument) when loaded unrestricted."""
    return f"c{module}\n{name}\n(S'{argument}'\ntR.".encode()


@pytest.mark.parametrize("make, refused", [
    (lambda marker: _reduce("os", "system", f"touch {marker}"), "os.system"),
    (lambda marker: _reduce("posix", "system", f"touch {marker}"), "posix.system"),
    (lambda marker: _reduce("builtins", "exec", f"open({str(marker)!r}, 'w')"), "builtins.exec"),
    (lambda marker: _reduce("builtins", "getattr", "x"), "builtins.getattr"),
    (lambda marker: _reduce("subprocess", "call", f"touch {marker}"), "subprocess.call"),
    # protocol 4 (STACK_GLOBAL), as pickle.dumps writes an object that reduces to a call
    (lambda marker: pickle.dumps(_RunsOnLoad(f"touch {marker}"), protocol=4), "system"),
    # a class named as the original's in another module: our plain record, never that module's
    (lambda marker: _reduce("evil_h8.squad_utils", "InputFeatures", f"touch {marker}"),
     "not a file of SQuAD features"),
])
def test_left_file_loads_no_code(tmp_path, make, refused):
    """load_features admits only the original's InputFeatures (as a plain record): a pickle
    naming any other global is refused in one SquadDataError naming the file, nothing run, no
    module imported."""
    import sys

    marker = tmp_path / "ran"
    path = tmp_path / "left.pkl"
    path.write_bytes(make(marker))
    with pytest.raises(squad_data.SquadDataError, match=rf"left.pkl: .*{refused}"):
        squad_data.load_features(path)
    assert not marker.exists()
    assert "evil_h8" not in sys.modules


def test_left_file_is_the_originals_pickle(tmp_path):
    """save_features writes the original's class name (albert.squad_utils.InputFeatures) and
    plain values only, which load_features reads back."""
    import pickletools

    feature = squad_data.FeatureRecord(**{name: [1] for name in squad_data.FEATURE_ATTRIBUTES})
    path = tmp_path / "left.pkl"
    squad_data.save_features(path, [feature])
    globals_named = [arg for op, arg, _ in pickletools.genops(path.read_bytes())
                     if op.name in ("GLOBAL", "STACK_GLOBAL", "INST")]
    assert globals_named == ["albert.squad_utils InputFeatures"]
    (loaded,) = squad_data.load_features(path)
    assert {n: getattr(loaded, n) for n in squad_data.FEATURE_ATTRIBUTES} == {
        n: [1] for n in squad_data.FEATURE_ATTRIBUTES}
