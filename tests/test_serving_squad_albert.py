"""A SQuAD export of an ALBERT checkpoint answers as run_squad.py predicts.

`python -m bert_tf.export --task=squad` on a tiny ALBERT checkpoint (tests/albert_fixtures.py)
with tests/data/albert_spm's SentencePiece model as --vocab_file: the export tokenizes each
context word in the graph with ALBERT's `TokenizerModule.tokenize_with_offsets` and answers
with the context's bytes from the first predicted piece to the last, as run_squad.py's
post-processing (`bert_tf.evaluation.squad_predictions`) answers with its characters. Compared
with that Python path (bert_tf.data.squad on the same SQuAD file, the family's AlbertTokenizer,
the same model) on contexts where the offsets matter: accents precomposed and decomposed,
combining marks, capitals, full-width letters, runs of spaces, tabs, NBSP and U+202F, CJK,
Greek, emoji, digits with commas, empty contexts. The SavedModel is loaded in a process that
has imported tensorflow and tensorflow_text only, which then answers lines through
`bert_tf.predict`.
"""

import json
import os
import subprocess
import sys
import textwrap
import unicodedata

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
pytest.importorskip("sentencepiece")

from albert_fixtures import CONTEXTS as FIXTURE_CONTEXTS  # noqa: E402
from albert_fixtures import SPM_MODEL, write_checkpoint  # noqa: E402
from bert_tf import families  # noqa: E402
from bert_tf.albert.fast_tokenization import TokenizerModule  # noqa: E402
from bert_tf.albert.tokenization import AlbertTokenizer  # noqa: E402
from bert_tf.checkpoints import save_original_checkpoint  # noqa: E402
from bert_tf.data.squad import convert_examples_to_features, read_squad_examples  # noqa: E402
from bert_tf.evaluation.squad_predictions import (NO_ANSWER_NULL_ODDS, RawResult,  # noqa: E402
                                                  compute_predictions)
from bert_tf.layers.heads import SpanHead  # noqa: E402
from bert_tf.models import BertTaskModel  # noqa: E402
from bert_tf.serving import export  # noqa: E402
from squad_export_checks import assert_v2_export_equals_run_squad  # noqa: E402

pytestmark = pytest.mark.slow  # builds ALBERT's graph tokenizer, a model and its SavedModel

MAX_SEQ_LENGTH = 24
SQUAD = dict(max_query_length=6, doc_stride=5, n_best_size=10, max_answer_length=8)
# The head's seed: its answers cover every case test_answers_equal_run_squad_... asserts. The
# 2.0 threshold lies in a gap of its null-score differences (-0.195 | -0.189), so that both ""
# and answers occur, 300 times the float32 rounding of the logits from either side.
HEAD_SEED = 0
V2_THRESHOLD = -0.192
CONTEXTS = FIXTURE_CONTEXTS + [
    "\uff34\uff48\uff45  \u00c9COLE  d\u2019\u00e9t\u00e9\u00a0\u00e0   Z\u00fcrich: \u5317\u4eac"
    "\u5927\u5b66 and \u6771\u4eac, \u03a3\u039f\u03a6\u0399\u0391\u03a3 caf\u00e9 (1,000,000)!",
    "a\u0308b\u0301c  \u0130stanbul\t\ufb01ne \u00bd x\u202fy 12,5, 3, \u00a8x   "
    "\U0001f600 ok \U0001f44d\U0001f3fd DONE",
    "Ca\u0301fe\u0301 \u0301\u0301 NA\u0301IVE\u00a0\u00a0B  \u6771  \u4eac\u90fd x\u0323\u0307 "
    "\u212b 2,5,  O\u0302TEL",
    "",
    "   ",
]
QUESTIONS = ["who?", "\uff37\uff48\uff41\uff54  is it?", "where", "na\u00efve", ""]


def squad_file(path):
    """A SQuAD 1.1 file asking every question of every context (no answers: prediction)."""
    paragraphs = [{"context": context, "qas": [{"id": f"{c}-{q}", "question": question,
                                                "answers": []}
                                               for q, question in enumerate(QUESTIONS)]}
                  for c, context in enumerate(CONTEXTS)]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "albert",
                                                              "paragraphs": paragraphs}]},
                               ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The checkpoint, the graph tokenizer, the v1 export saved and the Python model."""
    root = tmp_path_factory.mktemp("albert_squad")
    config = families.read_config(write_checkpoint(root / "albert_base")[0])
    tf.keras.utils.set_random_seed(HEAD_SEED)
    model = BertTaskModel(config, SpanHead(config.hidden_size))
    prefix = save_original_checkpoint(model, root / "squad" / "model.ckpt-1")
    tokenizer = TokenizerModule(SPM_MODEL, do_lower_case=True)
    module, info = export.build_export("squad", config, prefix, SPM_MODEL, True,
                                       max_seq_length=MAX_SEQ_LENGTH, tokenizer=tokenizer,
                                       **SQUAD)
    export_dir = export.save_export(module, info, root / "export")
    return {"config": config, "prefix": prefix, "tokenizer": tokenizer, "model": model,
            "module": module, "export_dir": export_dir, "root": root}


@pytest.fixture(scope="module")
def python_path(built):
    """run_squad.py's prediction path on the same file: bert_tf.data.squad features with the
    family's tokenizer, the model's logits (-inf at padding: the export takes a window's n best
    among its real positions, see `SquadExport`), and the examples in file order."""
    examples = read_squad_examples(squad_file(built["root"] / "squad.json"), False)
    tokenizer = AlbertTokenizer(SPM_MODEL, do_lower_case=True)
    features = []
    convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, SQUAD["doc_stride"],
                                 SQUAD["max_query_length"], False, features.append)
    assert max(f.doc_span_index for f in features) >= 3  # several windows
    inputs = {name: tf.constant([getattr(f, name) for f in features], tf.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
    outputs = built["model"](inputs)
    real = inputs["input_mask"].numpy() > 0
    starts, ends = (np.where(real, outputs[name].numpy(), -np.inf)
                    for name in ("start_logits", "end_logits"))
    results = [RawResult(f.unique_id, starts[k].tolist(), ends[k].tolist())
               for k, f in enumerate(features)]
    return examples, features, results, tokenizer.special_tokens


def _requests(examples):
    return ([e.question_text for e in examples],
            [e.paragraph_text for e in examples])


def _predictor_lines(examples):
    """`question<TAB>context` lines for bert_tf.predict (contexts without a newline)."""
    chosen = [i for i, e in enumerate(examples) if "\n" not in e.paragraph_text][:12]
    return chosen, [f"{examples[i].question_text}\t{examples[i].paragraph_text}"
                    for i in chosen]


@pytest.fixture(scope="module")
def served(built, python_path):
    """In a fresh process: the saved export's outputs, loaded with tensorflow and
    tensorflow_text imported only (no bert_tf); then `bert_tf.predict`'s rows of the lines of
    `_predictor_lines` (batches of 3, sorted by length), as `python -m bert_tf.predict` gives
    them."""
    questions, contexts = _requests(python_path[0])
    lines = _predictor_lines(python_path[0])[1]
    export_dir = str(built["export_dir"])
    script = f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # registers the SentencePiece ops
        assert not any(m.startswith("bert_tf") for m in sys.modules)
        loaded = tf.saved_model.load({export_dir!r})
        result = loaded.signatures["serving_default"](
            question=tf.constant({questions!r}), context=tf.constant({contexts!r}))
        out = {{k: v.numpy().tolist() for k, v in result.items()}}
        from bert_tf.serving import predict
        out["predict_rows"] = list(predict.predict_lines({export_dir!r}, {lines!r}, 3))
        print(json.dumps(out, default=lambda b: b.decode("utf-8")))
    """
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(export.__file__))))
    env = {**os.environ, "PYTHONPATH": repo, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                            text=True, env=env, cwd=str(built["root"]))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_windows_equal_run_squads_features(built, python_path):
    """The export's windows of the questions and contexts are run_squad.py's features."""
    examples, features = python_path[:2]
    got, example = built["module"]._windows(*(tf.constant(x) for x in _requests(examples)))[:2]
    assert example.numpy().tolist() == [f.example_index for f in features]
    padding = [[0, 0], [0, MAX_SEQ_LENGTH - got["input_ids"].shape[1]]]  # cut batches
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert np.pad(got[name].numpy(), padding).tolist() == [
            getattr(f, name) for f in features], name


def test_answers_equal_run_squad_and_keep_the_contexts_characters(built, python_path, served):
    examples, features, results, special = python_path
    predictions, nbest, _ = compute_predictions(
        examples, features, results, SQUAD["n_best_size"], SQUAD["max_answer_length"], True,
        special_tokens=special)
    assert served["answer"] == [predictions[e.qas_id] for e in examples]
    for i, example in enumerate(examples):
        top = nbest[example.qas_id][0]
        np.testing.assert_allclose(
            [served["score"][i], served["start_logit"][i], served["end_logit"][i]],
            [top["start_logit"] + top["end_logit"], top["start_logit"], top["end_logit"]],
            atol=1e-5, rtol=0)
    answered = [(a, e.paragraph_text) for a, e in zip(served["answer"], examples)
                if a != "empty"]
    assert len(answered) >= 25
    assert all(a in context and a == a.strip() for a, context in answered)
    # Answers the context's characters give and de-tokenized pieces would not: combining
    # marks, capitals, runs of spaces inside, CJK, full-width letters; and answers that cut
    # a word (not whole words).
    texts = [a for a, _ in answered]
    assert any(unicodedata.combining(c) for a in texts for c in a), texts
    assert any(c.isupper() for a in texts for c in a), texts
    assert any("  " in a for a in texts), texts
    assert any("\u4e00" <= c <= "\u9fff" for a in texts for c in a), texts
    assert any(not set(a.split()) <= set(context.split()) for a, context in answered), texts
    empty = [i for i, e in enumerate(examples) if not e.paragraph_text.strip()]
    assert empty and all(served["answer"][i] == "empty" and served["score"][i] == 0.0
                         for i in empty)


def test_info_file_says_tensorflow_text_is_needed(built):
    with open(os.path.join(built["export_dir"], export.EXPORT_INFO_FILE)) as f:
        info = json.load(f)
    assert info == {"task": "squad", "max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": True,
                    "dynamic_padding": True, "core_ops": False, "precision": "float32",
                    "version_2_with_negative": False, "null_score_diff_threshold": 0.0,
                    **SQUAD}


def test_squad_v2_answers_and_null_odds_equal_run_squad(built, python_path):
    """--version_2_with_negative, built from the same checkpoint and called in this process."""
    module, info = export.build_export(
        "squad", built["config"], built["prefix"], SPM_MODEL, True, MAX_SEQ_LENGTH,
        tokenizer=built["tokenizer"], version_2_with_negative=True,
        null_score_diff_threshold=V2_THRESHOLD, **SQUAD)
    assert info["version_2_with_negative"] is True
    examples, features, results, special = python_path
    answers, odds = assert_v2_export_equals_run_squad(
        module, *_requests(examples), examples, features, results, SQUAD, V2_THRESHOLD,
        special_tokens=special)
    # Answers, "" above the threshold and "" without a valid span all occur.
    assert any(answers) and "" in answers
    assert any(V2_THRESHOLD < x < NO_ANSWER_NULL_ODDS for x in odds)
    assert NO_ANSWER_NULL_ODDS in odds


def test_mixed_length_batches_equal_one_by_one_and_the_padded_export(built, python_path):
    """A batch of mixed lengths answers as each request alone and as the export padded to
    max_seq_length."""
    questions, contexts = _requests(python_path[0][::6])
    modules = [export.build_export("squad", built["config"], built["prefix"], SPM_MODEL, True,
                                   64, tokenizer=built["tokenizer"], dynamic_padding=dynamic,
                                   **SQUAD)[0] for dynamic in (True, False)]

    def call(module, q, c):
        return {k: v.numpy() for k, v in module.serve(tf.constant(q), tf.constant(c)).items()}

    batch, padded = (call(m, questions, contexts) for m in modules)
    rows = [call(modules[0], [q], [c]) for q, c in zip(questions, contexts)]
    for name, values in batch.items():
        alone = np.concatenate([r[name] for r in rows])
        for other in (padded[name], alone):
            if values.dtype.kind == "f":
                np.testing.assert_allclose(values, other, atol=1e-5, rtol=0)
            else:
                np.testing.assert_array_equal(values, other)
    assert sum(a != b"empty" for a in batch["answer"]) >= 3


def test_predictor_answers_lines(served, python_path):
    """bert_tf.predict (what `python -m bert_tf.predict` runs; it imports tensorflow_text for
    an export that says core_ops false) answers each line as the SavedModel does."""
    chosen = _predictor_lines(python_path[0])[0]
    rows = served["predict_rows"]
    assert [r["answer"] for r in rows] == [served["answer"][i] for i in chosen]
    np.testing.assert_allclose([r["score"] for r in rows], [served["score"][i] for i in chosen],
                               atol=1e-5, rtol=0)


def test_a_graph_tokenizer_without_offsets_or_normalize_is_refused(built):
    class IdsOnly:  # a graph tokenizer that gives piece ids and nothing else
        core_ops = True

        def __call__(self, texts):
            raise AssertionError("not called")

    with pytest.raises(export.ExportError, match=r"^--task=squad: the albert graph tokenizer "
                                                 r"cannot map predicted pieces back"):
        export.build_export("squad", built["config"], built["prefix"], SPM_MODEL, True,
                            max_seq_length=32, max_query_length=8, tokenizer=IdsOnly())
