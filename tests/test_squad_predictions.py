"""bert_tf.evaluation.squad_predictions against the original's write_predictions
(byte-identical files)."""

import json
import os
import types

import numpy as np
import pytest

from albert_fixtures import SPM_MODEL
from bert_tf.evaluation import squad_predictions as sp
from bert_tf.data import squad
from test_data_squad import EXPECTED, make_expected, tokenizer, absl_log  # noqa: F401

RUNS = {run[0]: run for run in make_expected.PREDICTION_RUNS}
MAX_SEQ_LENGTH, MAX_QUERY_LENGTH, DOC_STRIDE = make_expected.PREDICTION_SHAPE


def _inputs(version, tokenizer):
    examples = squad.read_squad_examples(make_expected.FILES[version], is_training=False,
                                         version_2_with_negative=version == "v2")
    features = []
    squad.convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE,
                                       MAX_QUERY_LENGTH, False, features.append)
    results = [sp.RawResult(f.unique_id, *make_expected.make_logits(
        f.unique_id, MAX_SEQ_LENGTH, f.token_to_orig_map)) for f in features]
    return examples, features, results


def _write(tmp_path, examples, features, results, n_best, max_answer, v2, threshold):
    paths = [str(tmp_path / name) for name in ("predictions.json", "nbest_predictions.json",
                                               "null_odds.json")]
    sp.write_predictions(examples, features, results, n_best, max_answer, True, *paths,
                         version_2_with_negative=v2, null_score_diff_threshold=threshold)
    return {key: (open(path, encoding="utf-8").read() if os.path.exists(path) else None)
            for key, path in zip(("predictions", "nbest", "null_odds"), paths)}


@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED["predictions"])
                                  if "raises" not in EXPECTED["predictions"][n]])
def test_write_predictions_files_equal_original_bytes(name, tokenizer, tmp_path):
    expected = EXPECTED["predictions"][name]
    version = expected["version"]
    files = _write(tmp_path, *_inputs(version, tokenizer), expected["n_best_size"],
                   expected["max_answer_length"], version == "v2", expected["threshold"])
    assert files["predictions"] == expected["predictions"]
    assert files["nbest"] == expected["nbest"]
    assert files["null_odds"] == expected.get("null_odds")
    assert sorted(os.listdir(tmp_path)) == sorted(
        k for k, v in (("predictions.json", 1), ("nbest_predictions.json", 1),
                       ("null_odds.json", files["null_odds"])) if v)  # no temporary file left


def test_exact_threshold_keeps_the_answer():
    # null score - best score == threshold is not "greater": the answer is kept.
    expected = EXPECTED["predictions"]["v2/20/30/diff"]
    odds = json.loads(expected["null_odds"])
    assert odds["a1"] == expected["threshold"]
    assert json.loads(expected["predictions"])["a1"] != ""


def test_v1_without_valid_span_predicts_empty():
    predictions = json.loads(EXPECTED["predictions"]["v1/1/1"]["predictions"])
    assert "empty" in predictions.values()


@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED["predictions"])
                                  if "raises" in EXPECTED["predictions"][n]])
def test_only_null_entry_predicts_no_answer(name, tokenizer, tmp_path):
    """Where the original raises AttributeError (2.0, no non-null candidate left), we predict ""
    with the largest finite null odds; every other question is as in the same run without the
    crash (n_best_size and max_answer_length only change which candidates exist)."""
    expected = EXPECTED["predictions"][name]
    assert expected["raises"] == "AttributeError"
    examples, features, results = _inputs("v2", tokenizer)
    files = _write(tmp_path, examples, features, results, expected["n_best_size"],
                   expected["max_answer_length"], True, expected["threshold"])
    predictions = json.loads(files["predictions"])
    nbest = json.loads(files["nbest"])
    odds = json.loads(files["null_odds"])
    only_null = [qid for qid, entries in nbest.items() if all(e["text"] == "" for e in entries)]
    assert only_null  # the case the original crashes on
    for qid in only_null:
        assert predictions[qid] == ""
        assert odds[qid] == sp.NO_ANSWER_NULL_ODDS
        assert [e["probability"] for e in nbest[qid]] == [1.0]
    for qid in set(predictions) - set(only_null):
        assert odds[qid] < sp.NO_ANSWER_NULL_ODDS


def _example_without_window(tokenizer, tmp_path, v2, empty_last=False):
    """Questions "e" on an empty context and "s" on another; with `empty_last`, "s" first,
    then "e" and "f" on the empty context."""
    empty = {"context": "  ", "qas": [{"id": "e", "question": "Why?", "answers": []}]}
    paragraphs = [empty, {"context": "Steve Smith's car.", "qas": [
        {"id": "s", "question": "Whose?", "answers": []}]}]
    if empty_last:
        empty["qas"].append({"id": "f", "question": "How?", "answers": []})
        paragraphs.reverse()
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"data": [{"paragraphs": paragraphs}]}))
    examples = squad.read_squad_examples(path, False, version_2_with_negative=v2)
    features = []
    squad.convert_examples_to_features(examples, tokenizer, 20, 3, 5, False, features.append)
    # Logits that make "steve smith" the best span of "s".
    results = []
    for f in features:
        start, end = [0.0] * 20, [0.0] * 20
        start[f.doc_offset], end[f.doc_offset + 1] = 5.0, 5.0
        results.append(sp.RawResult(f.unique_id, start, end))
    return examples, features, results


@pytest.mark.parametrize("v2", [False, True])
def test_example_without_window(tokenizer, tmp_path, v2):
    # The original: "empty" in 1.1, IndexError in 2.0; we predict "" (no answer) in 2.0.
    inputs = _example_without_window(tokenizer, tmp_path, v2)
    predictions, nbest, odds = sp.compute_predictions(*inputs, 20, 30, True, v2, 0.0)
    assert predictions["s"] == "Steve Smith"
    if v2:
        assert predictions["e"] == "" and odds["e"] == sp.NO_ANSWER_NULL_ODDS
        assert [(e["text"], e["probability"]) for e in nbest["e"]] == [("", 1.0)]
    else:
        assert predictions["e"] == "empty" and odds == {}


@pytest.mark.parametrize("v2", [False, True])
def test_examples_without_window_after_the_last_window(tokenizer, tmp_path, v2):
    """Questions on empty contexts after the last question with windows (they were left out of
    the block's candidate lists: IndexError)."""
    examples, features, results = _example_without_window(tokenizer, tmp_path, v2,
                                                           empty_last=True)
    predictions = sp.compute_predictions(examples, features, results, 20, 30, True, v2, 0.0)[0]
    assert predictions == {"s": "Steve Smith", "e": "" if v2 else "empty",
                           "f": "" if v2 else "empty"}


def test_original_style_features_give_the_same_files(tokenizer, tmp_path):
    examples, features, results = _inputs("v2", tokenizer)
    plain = [types.SimpleNamespace(
        unique_id=f.unique_id, example_index=f.example_index, doc_span_index=f.doc_span_index,
        tokens=f.tokens, token_to_orig_map=f.token_to_orig_map,
        token_is_max_context=f.token_is_max_context) for f in features]
    expected = EXPECTED["predictions"]["v2/20/30/0"]
    files = _write(tmp_path, examples, plain, results, 20, 30, True, 0.0)
    assert (files["predictions"], files["nbest"], files["null_odds"]) == (
        expected["predictions"], expected["nbest"], expected["null_odds"])


def test_missing_or_short_results_raise(tokenizer, tmp_path):
    examples, features, results = _inputs("v1", tokenizer)
    with pytest.raises(sp.PredictionError, match=f"no result for unique_id "
                                                 f"{features[3].unique_id}"):
        sp.compute_predictions(examples, features, results[:3] + results[4:], 20, 30, True)
    short = [sp.RawResult(r.unique_id, r.start_logits[:5], r.end_logits[:5]) for r in results]
    with pytest.raises(sp.PredictionError, match="5 logits for a feature of"):
        sp.compute_predictions(examples, features, short, 20, 30, True)


def test_numpy_float32_logits_equal_python_floats(tokenizer, tmp_path):
    import numpy as np

    examples, features, results = _inputs("v1", tokenizer)
    arrays = [sp.RawResult(np.int64(r.unique_id), np.array(r.start_logits, np.float32),
                           np.array(r.end_logits, np.float32)) for r in results]
    assert (sp.compute_predictions(examples, features, arrays, 20, 30, True) ==
            sp.compute_predictions(examples, features, results, 20, 30, True))


def test_get_final_text_equals_original(absl_log):
    for pred, orig, lower, expected, log in EXPECTED["final_text"]:
        del absl_log[:]
        assert sp.get_final_text(pred, orig, lower, verbose_logging=True) == expected
        assert absl_log == log
        del absl_log[:]
        sp.get_final_text(pred, orig, lower)
        assert absl_log == []


def test_best_indexes_and_softmax_equal_original():
    for logits, n, expected in EXPECTED["best_indexes"]:
        assert sp.get_best_indexes(logits, n) == expected
    for scores, expected in EXPECTED["softmax"]:
        assert sp.compute_softmax(list(scores)) == expected


@pytest.mark.parametrize("obj", [
    {},
    {"a": "x", "\u00e9\u202f": "caf\u00e9 \"quoted\"\n", "b": ""},
    {"q": 1.5, "r": -0.0, "s": 1e-07, "t": 1000000, "u": float("nan"), "v": float("inf")},
    {"q": [{"text": "a", "probability": 0.25, "start_logit": 2.9779999256134033,
            "end_logit": 0}], "r": []},
    {1: "int key"},
])
def test_json_writer_matches_json_dumps(obj):
    assert sp._dumps_indent4(obj) == json.dumps(obj, indent=4)


def test_best_indexes_with_many_ties_equal_a_stable_sort():
    import numpy as np

    rng = np.random.RandomState(0)
    logits = rng.randint(0, 4, size=(50, 2, 30)).astype(np.float64)  # ties everywhere
    logits[3, 0, :] = 1.0
    for n in (0, 1, 5, 29, 30, 40):
        got = sp._best_indexes(logits, n).tolist()
        for row, want in zip(logits.reshape(-1, 30), np.reshape(got, (100, -1)).tolist()):
            assert want == sorted(range(30), key=lambda i: -row[i])[:n]


def test_blocks_of_examples_give_the_same_files(tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(sp, "_BLOCK_EXAMPLES", 2)
    expected = EXPECTED["predictions"]["v2/5/4/0"]
    files = _write(tmp_path, *_inputs("v2", tokenizer), 5, 4, True, 0.0)
    assert (files["predictions"], files["nbest"], files["null_odds"]) == (
        expected["predictions"], expected["nbest"], expected["null_odds"])


# -- SentencePiece (ALBERT): answers are characters of the context -----------------------------

@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_sentencepiece_predictions_are_the_contexts_characters(tmp_path, do_lower_case):
    """Logits peaked on each training answer's pieces predict exactly the answer's text as the
    context writes it: accents (precomposed and decomposed), capitals, digits with commas,
    punctuation around it, a whitespace run, tab, newline or NBSP inside it. (BERT's
    get_final_text projection gives other texts for several of them: SentencePiece's pieces
    do not de-tokenize to BasicTokenizer's words.)"""
    from albert_fixtures import ANSWERS, write_squad

    from bert_tf.albert.tokenization import AlbertTokenizer

    tokenizer = AlbertTokenizer(SPM_MODEL, do_lower_case)
    path = write_squad(tmp_path / "squad.json")
    shape = dict(tokenizer=tokenizer, max_seq_length=40, doc_stride=8, max_query_length=12)
    train = squad.read_squad_examples(path, True)
    train_features = []
    squad.convert_examples_to_features(train, is_training=True,
                                       output_fn=train_features.append, **shape)
    examples = squad.read_squad_examples(path, False)
    features = []
    squad.convert_examples_to_features(examples, is_training=False, output_fn=features.append,
                                       **shape)
    results = []
    for answer, feature in zip(train_features, features):
        start, end = np.full(40, -5.0), np.full(40, -5.0)
        if answer.start_position:
            start[answer.start_position] = end[answer.end_position] = 5.0
        results.append(sp.RawResult(feature.unique_id, start.tolist(), end.tolist()))
    predictions, nbest, _ = sp.write_predictions(
        examples, features, results, 20, 30, do_lower_case, str(tmp_path / "p.json"),
        str(tmp_path / "n.json"), None, special_tokens=tokenizer.special_tokens)
    assert predictions == {qas_id: text for qas_id, _, _, text in ANSWERS}
    assert json.loads((tmp_path / "p.json").read_text()) == predictions
    # Every n-best text is a stretch of its context without whitespace at the ends.
    for example in examples:
        for entry in nbest[example.qas_id]:
            assert entry["text"] in example.paragraph_text
            assert entry["text"] == entry["text"].strip() != ""


def test_sentencepiece_span_of_a_lone_word_start_is_its_word(tmp_path):
    """A span of only a lone "▁" (no character) predicts its word, as get_final_text falls
    back to the words."""
    from bert_tf.albert.tokenization import AlbertTokenizer

    tokenizer = AlbertTokenizer(SPM_MODEL, True)
    context = "about 1,000 people"
    words, starts = squad.split_context(context)
    example = squad.SquadExample("q", "How many?", words, paragraph_text=context,
                                 word_starts=starts)
    features = []
    squad.convert_examples_to_features([example], tokenizer, 24, 8, 8, False, features.append)
    (feature,) = features
    tokens = feature.tokens
    # "1,000" -> "▁", "1", ",", "0", "00"
    lone = next(i for i in range(feature.doc_offset, len(tokens) - 1)
                if tokens[i:i + 2] == ["▁", "1"])
    logits = np.full(24, -5.0)
    logits[lone] = 5.0
    predictions, _, _ = sp.compute_predictions(
        [example], features, [sp.RawResult(feature.unique_id, logits, logits)], 20, 30, True,
        special_tokens=tokenizer.special_tokens)
    assert predictions == {"q": "1,000"}
