"""Exported SavedModels answer raw strings like the Python path, in a process without bert_tf.

Each export is built once per module on the golden tiny model with a random head saved as a
checkpoint; one subprocess (PYTHONPATH empty, importing only tensorflow: the exports hold core
TensorFlow ops only) loads them all and answers the same strings, compared with our model on
FullTokenizer features.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import (load_original_checkpoint, original_variable_map,
                                 save_original_checkpoint)
from bert_tf.data.conll import Sentence, sentence_windows, word_predictions
from bert_tf.data.pairs import pad_to, pair_tokens
from bert_tf.data.squad import SquadExample, convert_examples_to_features, split_context
from bert_tf.evaluation.squad_predictions import (NO_ANSWER_NULL_ODDS, RawResult,
                                                  compute_predictions, get_final_text)
from bert_tf.bert.fast_tokenization import TokenizerModule
from bert_tf.bert.tokenization import FullTokenizer
from bert_tf.layers.heads import ClassifierHead, SpanHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.serving import export, predict
from bert_tf.serving.inputs import ServingInputs
from bert_tf.serving.squad_export import SquadExport
from conftest import golden_path
from squad_export_checks import assert_v2_export_equals_run_squad
from test_data_squad import EXPECTED

pytestmark = pytest.mark.slow
MAX_SEQ_LENGTH = 24
LABELS = ["neg", "pos", "mixed"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]
LAYERS = "-1,0"
SQUAD = dict(max_query_length=6, doc_stride=5, n_best_size=4, max_answer_length=6)
V2_THRESHOLD = -0.3  # SQuAD 2.0: gives both "" and answers with the squad model below
# Tagging windows of 10 pieces advancing by 4, so long texts get overlapping windows.
TAGGING = dict(max_seq_length=12, doc_stride=4)
TAGGING_TEXTS = [
    "the man went to the store and he bought a gallon of milk , then went home .",
    "pneumonoultramicroscopicsilicovolcanoconiosis is a word longer than a window",
    "word",
    "",
    "b \u0301 c \u0301",  # a lone combining accent is a word without pieces
    "Unbelievable café, naïve!",
    "a " * 30,
]
TEXTS_A = ["the man went to the store", "he bought a gallon of milk", "", "a " * 40,
           "Unbelievable café, naïve!"]
TEXTS_B = ["it was closed", "", "penguins are flightless birds", "b \u0301 c", "x\u00a0y"]
QUESTIONS = ["who went to the store?", "what did he buy", "where", "", "why " * 10]
CONTEXTS = [
    "the man went to the store and he bought a gallon of milk, then went home.",
    "he bought (a gallon) of milk at the store\tbefore\nnoon \u202fwith his friend " * 3,
    "short",
    "",
    "the quick brown fox jumps over the lazy dog " * 4,
]
# Context words that get_final_text trims to the predicted pieces ("(dog)," -> "dog"), maps
# through lower-casing and accents ("Café"), or answers whole: a soft hyphen / NBSP inside a
# word (lengths differ without spaces), "1990" and "#tag" ([UNK] pieces: not found); CJK,
# Greek, repeated sub-strings ("Dog,dog": the first occurrence is taken).
SQUAD_WORDS = ["(dog),", "Café", "naïve;", "Cafe\u0301", "ele\u00adphant", "hot\u00a0dog",
               "1990", "(1990)", "#tag", "北区", "ab力cd", "Dog,dog", "dog.", '"quoted"', "it's",
               "x-ray:", "hotdog", "the", "fire!", "Ωmega", "ΣΑΣ", "well-known", "end.",
               "dogdog"]
SQUAD_QUESTIONS = QUESTIONS + [["what", "who is it?", "where (now)"][i % 3] for i in range(40)]
SQUAD_CONTEXTS = CONTEXTS + [
    " ".join(SQUAD_WORDS[(i * 5 + 3 * j * j + j) % len(SQUAD_WORDS)] for j in range(3 + i * 7 % 11))
    for i in range(40)]


# Seeds of the random heads on the golden encoder. The squad head's answers must cover every
# case the squad tests assert (a [UNK] word answered whole, trimmed answers, ...): about a third
# of the seeds give all of them, 105 does.
HEAD_SEEDS = {"classifier": 100, "features": 101, "tagging": 102, "squad": 105}


@pytest.fixture(scope="module")
def golden():
    model_dir = golden_path("model")
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    vocab_file = str(model_dir / "vocab.txt")
    return config, str(model_dir / "bert_model.ckpt"), vocab_file, FullTokenizer(vocab_file)


@pytest.fixture(scope="module")
def tables(golden):
    """The in-graph tokenizer of the golden vocab (uncased), shared by the exports."""
    return TokenizerModule(golden[3].vocab, do_lower_case=True)


@pytest.fixture(scope="module")
def exports(golden, tables, tmp_path_factory):
    """task -> (Python model, export directory); the checkpoints are in <task>_ckpt beside."""
    config, checkpoint, vocab_file, tokenizer = golden
    root = tmp_path_factory.mktemp("exports")
    heads = {"classifier": lambda: ClassifierHead(len(LABELS), config.hidden_size),
             "tagging": lambda: TokenClassifierHead(len(TAGS), config.hidden_size),
             "squad": lambda: SpanHead(config.hidden_size)}
    built = {}
    for task in export.TASKS:
        tf.keras.utils.set_random_seed(HEAD_SEEDS[task])
        model = BertTaskModel(config, heads.get(task, heads["classifier"])())
        load_original_checkpoint(model, checkpoint)
        prefix = save_original_checkpoint(model, root / f"{task}_ckpt" / "model.ckpt")
        labels = {"classifier": LABELS, "tagging": TAGS}.get(task)
        options = dict(max_seq_length=MAX_SEQ_LENGTH, **SQUAD)
        options.update(TAGGING if task == "tagging" else {})
        module, info = export.build_export(
            task, config, prefix, vocab_file, True, labels=labels, layers=LAYERS,
            tokenizer=tables, **options)
        built[task] = (model, export.save_export(module, info, root / task))
    return built


def _run_without_bert_tf(script, cwd):
    env = {**os.environ, "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                            text=True, env=env, cwd=str(cwd))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def served(exports, tmp_path_factory):
    """task -> outputs (lists) of the exported SavedModel, computed in a fresh process."""
    calls = {
        "classifier": {"text_a": TEXTS_A, "text_b": TEXTS_B},
        "features": {"text_a": TEXTS_A, "text_b": TEXTS_B},
        "tagging": {"text": TAGGING_TEXTS},
        "squad": {"question": SQUAD_QUESTIONS, "context": SQUAD_CONTEXTS},
    }
    jobs = {task: (str(exports[task][1]), kwargs) for task, kwargs in calls.items()}
    jobs["classifier_single"] = (str(exports["classifier"][1]), {"text_a": TEXTS_A})
    jobs["tagging_no_pieces"] = (str(exports["tagging"][1]), {"text": ["", "\u0301 \t"]})
    jobs["squad_no_window"] = (str(exports["squad"][1]), {"question": ["q", "r"],
                                                          "context": ["", " \t "]})
    script = f"""
        import json, sys
        import tensorflow as tf
        assert not any(m.startswith(("bert_tf", "tensorflow_text")) for m in sys.modules)
        out = {{}}
        for name, (path, kwargs) in {jobs!r}.items():
            loaded = tf.saved_model.load(path)
            signature = "single" if name.endswith("_single") else "serving_default"
            inputs = {{k: tf.constant(v) for k, v in kwargs.items()}}
            result = loaded.signatures[signature](**inputs)
            out[name] = {{k: v.numpy().tolist() for k, v in result.items()}}
        print(json.dumps(out, default=lambda b: b.decode("utf-8")))
    """
    return _run_without_bert_tf(script, tmp_path_factory.mktemp("run"))


def _pair_features(tokenizer, texts_a, texts_b):
    rows = {"input_ids": [], "input_mask": [], "segment_ids": []}
    for a, b in zip(texts_a, texts_b):
        tokens, segments = pair_tokens(tokenizer.tokenize(a),
                                       tokenizer.tokenize(b) if b else None, MAX_SEQ_LENGTH)
        ids = tokenizer.convert_tokens_to_ids(tokens)
        rows["input_ids"].append(pad_to(ids, MAX_SEQ_LENGTH))
        rows["input_mask"].append(pad_to([1] * len(ids), MAX_SEQ_LENGTH))
        rows["segment_ids"].append(pad_to(segments, MAX_SEQ_LENGTH))
    return {k: tf.constant(v, tf.int32) for k, v in rows.items()}


def test_classifier_equals_python(exports, served, golden):
    tokenizer = golden[3]
    model = exports["classifier"][0]
    for name, texts_b in (("classifier", TEXTS_B), ("classifier_single", [""] * len(TEXTS_A))):
        expected = model(_pair_features(tokenizer, TEXTS_A, texts_b))["probabilities"].numpy()
        got = served[name]
        np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5, rtol=0)
        assert got["label"] == [LABELS[i] for i in expected.argmax(-1)]
        assert got["label_id"] == expected.argmax(-1).tolist()


def test_features_equal_python(exports, served, golden):
    tokenizer = golden[3]
    features = _pair_features(tokenizer, TEXTS_A, TEXTS_B)
    layers = exports["features"][0].bert(features)["all_encoder_layers"]
    expected = np.stack([layers[-1], layers[0]], axis=2)
    got = served["features"]
    assert got["input_ids"] == features["input_ids"].numpy().tolist()
    assert got["input_mask"] == features["input_mask"].numpy().tolist()
    np.testing.assert_allclose(got["layers"], expected, atol=1e-5, rtol=0)


def test_tagging_equals_run_taggings_windows(exports, served, golden):
    tokenizer = golden[3]
    model, export_dir = exports["tagging"]
    sentences, windows = [], []
    for i, text in enumerate(TAGGING_TEXTS):
        sentences.append(Sentence(text.split(), None, [], 0))
        windows += sentence_windows(sentences[-1].words, None, tokenizer,
                                    TAGGING["max_seq_length"], TAGGING["doc_stride"], i)
    pieces = [len(tokenizer.tokenize(w)) for s in sentences for w in s.words]
    assert max(pieces) > TAGGING["max_seq_length"] - 2  # a word longer than a window
    assert max(w.window_index for w in windows) >= 3  # overlapping windows
    features = {name: tf.constant([getattr(w, name) for w in windows], tf.int32)
                for name in ("input_ids", "input_mask", "segment_ids")}
    predictions = model(features)["logits"].numpy().argmax(-1)
    expected = word_predictions(sentences, windows, predictions, TAGS)
    got = served["tagging"]
    assert got["num_words"] == [len(s.words) for s in sentences]
    width = max(got["num_words"])
    assert got["tags"] == [tags + [""] * (width - len(tags)) for tags in expected]
    assert expected[4][1] == expected[4][3] == "O"  # the words without pieces
    assert served["tagging_no_pieces"] == {"tags": [[""], ["O"]], "num_words": [0, 1]}
    with open(os.path.join(export_dir, export.EXPORT_INFO_FILE)) as f:
        info = json.load(f)
    assert (info["max_seq_length"], info["doc_stride"]) == (
        TAGGING["max_seq_length"], TAGGING["doc_stride"])


@pytest.fixture(scope="module")
def squad_python(exports, golden):
    """The Python path on SQUAD_QUESTIONS / SQUAD_CONTEXTS: (examples, features, results) from
    bert_tf.data.squad and the squad model's logits, -inf at padding: the export takes a
    window's n best among its real positions, where run_squad.py ranks padding too (this
    random head gives padding large logits, which would crowd real positions out; see
    `SquadExport`)."""
    tokenizer = golden[3]
    model = exports["squad"][0]
    examples = [SquadExample(str(i), q, split_context(c)[0])
                for i, (q, c) in enumerate(zip(SQUAD_QUESTIONS, SQUAD_CONTEXTS))]
    features = []
    convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, SQUAD["doc_stride"],
                                 SQUAD["max_query_length"], False, features.append)
    assert max(f.doc_span_index for f in features) >= 3  # several windows are exercised
    inputs = {name: tf.constant([getattr(f, name) for f in features], tf.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
    outputs = model(inputs)
    real = inputs["input_mask"].numpy() > 0
    starts, ends = (np.where(real, outputs[name].numpy(), -np.inf)
                    for name in ("start_logits", "end_logits"))
    results = [RawResult(f.unique_id, starts[k].tolist(), ends[k].tolist())
               for k, f in enumerate(features)]
    return examples, features, results


def _word_spans(example):
    """Every run of whole context words joined by spaces (what an untrimmed answer is)."""
    words = example.doc_tokens
    return {" ".join(words[a:b]) for a in range(len(words)) for b in range(a + 1, len(words) + 1)}


def test_squad_final_text_equals_get_final_text(golden, tables):
    """The graph's get_final_text on the original's recorded cases (do_lower_case) and on the
    fallbacks and traps of the SQuAD contexts, against bert_tf.evaluation.squad_predictions."""
    vocab = golden[3].vocab
    module = SquadExport(None, ServingInputs(vocab, True, MAX_SEQ_LENGTH, tokenizer=tables),
                         vocab)
    cases = [(pred, orig, expected) for pred, orig, lower, expected, _ in EXPECTED["final_text"]
             if lower]
    cases += [(pred, orig, get_final_text(pred, orig, True)) for pred, orig in [
        ("dog", "(dog),"), ("dog ) ,", "(dog),"), ("dog", "Dog, dog"), ("og", "hotdog Dog"),
        ("cafe", "Cafe\u0301"), ("elephant", "ele\u00adphant"), ("hot dog", "hot\u00a0dog"),
        ("[UNK]", "1990"), ("北", "ab北区cd"), ("力 加", "x力加y"), ("mega", "Ωmega"),
        ("σας", "ΣΑΣ"), ("ive ;", "naïve;")]]
    got = tf.function(module.final_text)(tf.constant([c[0] for c in cases]),
                                         tf.constant([c[1] for c in cases]))
    assert [x.decode("utf-8") for x in got.numpy()] == [c[2] for c in cases]
    assert [c[2] for c in cases[-13:]] == [
        "dog", "dog),", "Dog", "og", "Cafe\u0301", "ele\u00adphant", "hot\u00a0dog", "1990", "北",
        "力加", "mega", "ΣΑΣ", "ïve;"]
    pieces = [["c", "##a", "##f"], ["[UNK]", "a", "##b"], []]
    pred_text = module.pred_text(tf.ragged.constant([[vocab[p] for p in x] for x in pieces]))
    assert pred_text.numpy().tolist() == [b"caf", b"[UNK] ab", b""]


@pytest.mark.parametrize("pair_segments", [False, True], ids=["one_segment", "two_segments"])
def test_squad_windows_with_two_separators_equal_python(golden, tables, pair_segments):
    """A family laying pairs out as `<s> q </s></s> window </s>` (RoBERTa's, all segment 0;
    and with segment 1 after the separators): the export's windows equal bert_tf.data.squad's
    features with the same special tokens."""
    special = dataclasses.replace(golden[3].special_tokens, pair_separators=2,
                                  pair_segments=pair_segments)

    class Tokenizer(FullTokenizer):
        special_tokens = special

    tokenizer = Tokenizer(golden[2])
    inputs = ServingInputs(tokenizer.vocab, True, MAX_SEQ_LENGTH, tokenizer=tables,
                           dynamic_padding=False)
    inputs.special_tokens = special  # as such a family's ServingInputs would hold
    module = SquadExport(None, inputs, tokenizer.vocab, SQUAD["max_query_length"],
                         SQUAD["doc_stride"])
    examples = [SquadExample(str(i), q, split_context(c)[0])
                for i, (q, c) in enumerate(zip(SQUAD_QUESTIONS, SQUAD_CONTEXTS))]
    features = []
    convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, SQUAD["doc_stride"],
                                 SQUAD["max_query_length"], False, features.append)
    assert sum(f.tokens.count("[SEP]") == 3 for f in features) == len(features)
    assert max(f.doc_span_index for f in features) >= 3
    got, example = module._windows(tf.constant(SQUAD_QUESTIONS), tf.constant(SQUAD_CONTEXTS))[:2]
    assert example.numpy().tolist() == [f.example_index for f in features]
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert got[name].numpy().tolist() == [getattr(f, name) for f in features], name


def test_squad_answers_equal_run_squad(exports, served, squad_python):
    examples, features, results = squad_python
    predictions, nbest, _ = compute_predictions(
        examples, features, results, SQUAD["n_best_size"], SQUAD["max_answer_length"], True)
    got = served["squad"]
    assert got["answer"] == [predictions[e.qas_id] for e in examples]
    for i, example in enumerate(examples):
        top = nbest[example.qas_id][0]
        np.testing.assert_allclose(
            [got["score"][i], got["start_logit"][i], got["end_logit"][i]],
            [top["start_logit"] + top["end_logit"], top["start_logit"], top["end_logit"]],
            atol=1e-5, rtol=0)
    answered = [(a, e) for a, e in zip(got["answer"], examples) if a != "empty"]
    trimmed = [a for a, e in answered if a not in _word_spans(e)]
    assert len(answered) >= 30 and len(trimmed) >= 10, (answered, trimmed)
    # Whole words where get_final_text falls back: [UNK] pieces, lengths differing.
    assert any("1990" in a for a, _ in answered)
    assert any("\u00ad" in a or "\u00a0" in a for a, _ in answered)
    assert got["answer"][3] == "empty"  # an empty context has no window
    assert served["squad_no_window"] == {"answer": ["empty"] * 2, "score": [0.0] * 2,
                                         "start_logit": [0.0] * 2, "end_logit": [0.0] * 2}


def test_squad_v2_answers_and_null_odds_equal_run_squad(exports, golden, tables, squad_python):
    """Version 2.0: the export built with --version_2_with_negative from the squad checkpoint,
    called in this process (the graph is the saved one's), against the Python path."""
    config, _, vocab_file, _ = golden
    checkpoint_dir = os.path.join(os.path.dirname(exports["squad"][1]), "squad_ckpt")
    module, info = export.build_export(
        "squad", config, checkpoint_dir, vocab_file, True, MAX_SEQ_LENGTH, tokenizer=tables,
        version_2_with_negative=True, null_score_diff_threshold=V2_THRESHOLD, **SQUAD)
    assert (info["version_2_with_negative"], info["null_score_diff_threshold"]) == (
        True, V2_THRESHOLD)
    answers, odds = assert_v2_export_equals_run_squad(
        module, SQUAD_QUESTIONS, SQUAD_CONTEXTS, *squad_python, SQUAD, V2_THRESHOLD)
    examples = squad_python[0]
    # Trimmed answers, "" above the threshold and "" without a valid span all occur.
    assert any(a and a not in _word_spans(e) for a, e in zip(answers, examples))
    assert any(V2_THRESHOLD < x < NO_ANSWER_NULL_ODDS for x in odds)
    assert NO_ANSWER_NULL_ODDS in odds


def _saved_model_cli():
    """The plain `saved_model_cli` command: the console script of this Python if installed,
    else the one on PATH, else its module."""
    beside = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    script = beside if os.access(beside, os.X_OK) else shutil.which("saved_model_cli")
    return [script] if script else [sys.executable, "-m",
                                    "tensorflow.python.tools.saved_model_cli"]


def _cli_outputs(stdout):
    """saved_model_cli's "Result for output key NAME:" blocks -> NAME -> flat list of str."""
    blocks = re.split(r"^Result for output key (\w+):$", stdout, flags=re.M)[1:]
    return {name: re.findall(r"b'[^']*'|[-+.\deE]+", text)
            for name, text in zip(blocks[::2], blocks[1::2])}


def test_saved_model_cli_runs_the_classifier(exports, golden):
    """Plain `saved_model_cli run`, which cannot load tensorflow-text ops: the export holds
    only core TensorFlow ops, and prints the outputs of the Python path."""
    path = str(exports["classifier"][1])
    inputs = f"text_a={TEXTS_A!r};text_b={TEXTS_B!r}"
    result = subprocess.run(
        _saved_model_cli() + ["run", "--dir", path, "--tag_set", "serve", "--signature_def",
                              "serving_default", "--input_exprs", inputs],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    got = _cli_outputs(result.stdout)
    assert sorted(got) == ["label", "label_id", "probabilities"], result.stdout[-3000:]
    features = _pair_features(golden[3], TEXTS_A, TEXTS_B)
    expected = exports["classifier"][0](features)["probabilities"].numpy()
    np.testing.assert_allclose(
        np.reshape([float(x) for x in got["probabilities"]], expected.shape), expected,
        atol=1e-5, rtol=0)
    assert [int(x) for x in got["label_id"]] == expected.argmax(-1).tolist()
    assert got["label"] == [f"b'{LABELS[i]}'" for i in expected.argmax(-1)]


def test_each_weight_is_stored_once_under_its_original_name(exports):
    """The export's variables checkpoint holds the model's weights once each (issue 31: they
    were stored twice, under the Keras model and as its tf.Variables), keyed by the original
    checkpoint names, with the model's values; its bytes are the weights' bytes."""
    for task, (model, path) in exports.items():
        table = original_variable_map(model.bert if task == "features" else model)
        prefix = os.path.join(path, "variables", "variables")
        saved = tf.train.load_checkpoint(prefix)
        keys = {name for name, _ in tf.train.list_variables(prefix)}
        keys.discard("_CHECKPOINTABLE_OBJECT_GRAPH")
        assert keys == {f"weights/{name}/.ATTRIBUTES/VARIABLE_VALUE" for name in table}, task
        for name, variable in table.items():
            np.testing.assert_array_equal(
                saved.get_tensor(f"weights/{name}/.ATTRIBUTES/VARIABLE_VALUE"), variable.numpy())
        stored = sum(saved.get_tensor(key).nbytes for key in keys)
        assert stored == sum(v.numpy().nbytes for v in table.values()), task


def test_bad_flags_are_clear_errors(golden, tmp_path):
    config, checkpoint, vocab_file, _ = golden
    with pytest.raises(export.ExportError, match="--task='nope'"):
        export.build_export("nope", config, checkpoint, vocab_file)
    with pytest.raises(export.ExportError, match="needs label names"):
        export.build_export("classifier", config, checkpoint, vocab_file, max_seq_length=32)
    with pytest.raises(export.ExportError, match="max_position_embeddings=64"):
        export.build_export("features", config, checkpoint, vocab_file, max_seq_length=128)
    with pytest.raises(export.ExportError, match="max_query_length=64"):
        export.build_export("squad", config, checkpoint, vocab_file, max_seq_length=40)
    with pytest.raises(export.ExportError, match="--doc_stride=0: expected a positive"):
        export.build_export("tagging", config, checkpoint, vocab_file, max_seq_length=32,
                            labels=TAGS, doc_stride=0)
    with pytest.raises(export.ExportError, match="no --labels given"):
        export.read_labels(None, str(tmp_path / "model.ckpt"))
    (tmp_path / "task.json").write_text(json.dumps({"labels": ["a", "b"]}))
    assert export.read_labels(None, str(tmp_path / "model.ckpt")) == ["a", "b"]
    assert export.read_labels(None, str(tmp_path)) == ["a", "b"]
    assert export.read_labels("x, y", None) == ["x", "y"]


def test_damaged_checkpoint_or_export_is_one_line(golden, exports, tmp_path):
    """Issue 18: a checkpoint or SavedModel whose data file was cut short."""
    config, checkpoint, vocab_file, _ = golden
    damaged = str(tmp_path / "bert_model.ckpt")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(checkpoint + suffix, damaged + suffix)
    data = damaged + ".data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) // 2)
    with pytest.raises(ValueError) as err:  # bert_tf.export prints ValueErrors as one line
        export.build_export("features", config, damaged, vocab_file,
                            max_seq_length=MAX_SEQ_LENGTH)
    assert str(err.value).startswith(f"checkpoint {damaged} is damaged: {data} (")
    assert "is cut short" in str(err.value) and "\n" not in str(err.value)

    export_dir = tmp_path / "export"
    shutil.copytree(exports["features"][1], export_dir)
    variables = export_dir / "variables" / "variables.data-00000-of-00001"
    os.truncate(variables, os.path.getsize(variables) // 2)
    with pytest.raises(predict.PredictError) as err:
        list(predict.predict_lines(str(export_dir), ["a line"]))
    assert str(err.value).startswith(f"--export_dir={export_dir}: cannot load the SavedModel; "
                                     "its files are damaged or incomplete (")
    assert "\n" not in str(err.value)


def test_doc_stride_defaults_to_the_training_scripts(golden, tables, exports):
    """Without --doc_stride a tagging export windows as run_tagging.py (64), SQuAD as
    run_squad.py (128), so its answers are the evaluation's."""
    config, _, vocab_file, _ = golden
    for task, labels, stride in (("tagging", TAGS, 64), ("squad", None, 128)):
        checkpoint = os.path.join(os.path.dirname(exports[task][1]), f"{task}_ckpt", "model.ckpt")
        module, info = export.build_export(task, config, checkpoint, vocab_file,
                                           max_seq_length=MAX_SEQ_LENGTH, labels=labels,
                                           max_query_length=6, tokenizer=tables)
        assert info["doc_stride"] == stride
        assert (module.inputs.doc_stride if task == "tagging" else module.doc_stride) == stride


def _predict(export_dir, stdin, *args):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(export.__file__))))
    env = {**os.environ, "PYTHONPATH": repo, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, "-m", "bert_tf.predict", f"--export_dir={export_dir}",
                           "--batch_size=2", *args], input=stdin, capture_output=True,
                          text=True, env=env)


def test_predictor_writes_a_json_line_per_input_line(exports, served, tmp_path):
    lines = "".join(f"{a}\t{b}\n" if b else f"{a}\n" for a, b in zip(TEXTS_A, TEXTS_B))
    result = _predict(exports["classifier"][1], lines)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["label"] for r in rows] == served["classifier"]["label"]
    np.testing.assert_allclose([[r["probabilities"][x] for x in LABELS] for r in rows],
                               served["classifier"]["probabilities"], atol=1e-6, rtol=0)

    input_file = tmp_path / "questions.tsv"
    # A line holds no newline; a space separates the context's words as well (its tab stays).
    input_file.write_text("".join(f"{q}\t{c.replace(chr(10), ' ')}\n"
                                  for q, c in zip(QUESTIONS, CONTEXTS)))
    output_file = tmp_path / "answers.jsonl"
    result = _predict(exports["squad"][1], "", f"--input_file={input_file}",
                      f"--output_file={output_file}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(x) for x in output_file.read_text().splitlines()]
    assert [r["answer"] for r in rows] == served["squad"]["answer"][:len(QUESTIONS)]
    assert sorted(os.listdir(tmp_path)) == ["answers.jsonl", "questions.tsv"]


def test_predictor_rows_of_a_squad_v2_export():
    outputs = {"answer": np.array([b"", "Caf\u00e9".encode("utf-8")], object),
               "score": np.array([1.5, 0.25], np.float32), "start_logit": np.zeros(2, np.float32),
               "end_logit": np.zeros(2, np.float32),
               "null_score_diff": np.array([0.5, NO_ANSWER_NULL_ODDS])}
    rows = predict.result_rows("squad", {"task": "squad"}, [("q", "c")] * 2, outputs)
    assert rows == [{"answer": "", "score": 1.5, "null_score_diff": 0.5},
                    {"answer": "Caf\u00e9", "score": 0.25, "null_score_diff": NO_ANSWER_NULL_ODDS}]
    assert json.loads(json.dumps(rows[1]))["null_score_diff"] == NO_ANSWER_NULL_ODDS


def test_predictor_names_a_bad_line(exports, tmp_path):
    output_file = tmp_path / "out.jsonl"
    result = _predict(exports["squad"][1], "q\tc\nno tab here\n", f"--output_file={output_file}")
    assert result.returncode != 0
    assert "stdin: line 2: expected question<TAB>context, found no tab" in result.stderr
    assert os.listdir(tmp_path) == []  # no partial output


class _ShapeRecorder:
    """Calls `model`, keeping the shape [B, S] of the last input_ids it was given (in a
    variable, so that it is read after a tf.function ran)."""

    def __init__(self, model):
        self.model = model
        self.shape = tf.Variable([0, 0], dtype=tf.int32)

    def __call__(self, features, training=False):
        self.shape.assign(tf.shape(features["input_ids"]))
        return self.model(features, training=training)


MIXED = {
    "classifier": {"text_a": TEXTS_A, "text_b": TEXTS_B},
    "features": {"text_a": TEXTS_A, "text_b": TEXTS_B},
    "tagging": {"text": TAGGING_TEXTS},
    "squad": {"question": SQUAD_QUESTIONS[:8], "context": SQUAD_CONTEXTS[:8]},
}


def _dynamic_and_padded(exports, golden, tables, task):
    """The export modules of `task` from its checkpoint, with and without dynamic padding
    (max_seq_length 64: short requests run at 16 positions), their model calls recorded."""
    config, _, vocab_file, _ = golden
    checkpoint = os.path.join(os.path.dirname(exports[task][1]), f"{task}_ckpt")
    labels = {"classifier": LABELS, "tagging": TAGS}.get(task)
    options = dict(SQUAD, doc_stride=TAGGING["doc_stride"]) if task == "tagging" else SQUAD
    modules = []
    for dynamic in (True, False):
        module, info = export.build_export(task, config, checkpoint, vocab_file, True, 64,
                                           labels=labels, layers=LAYERS, tokenizer=tables,
                                           dynamic_padding=dynamic, **options)
        assert info["dynamic_padding"] is dynamic
        module.model = _ShapeRecorder(module.model)
        modules.append(module)
    return modules


def _call(module, inputs):
    result = module.serve(**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in result.items()}, module.model.shape.numpy().tolist()


def _assert_same_answers(task, got, expected, rows=None):
    """`got` (a request's outputs) equal `expected`'s rows `rows`; floats within 1e-5 (the
    same sums, kernels of other shapes: float32 rounding of values of order 1)."""
    rows = slice(None) if rows is None else rows
    for name, values in got.items():
        reference = expected[name][rows]
        if task == "features" and name != "input_mask":
            # Each text's real tokens; positions past them are padding.
            for g, r, mask in zip(values, reference, expected["input_mask"][rows]):
                n = int(mask.sum())
                np.testing.assert_allclose(g[:n], r[:n], atol=1e-5, rtol=0)
        elif task == "features":
            for g, r in zip(values, reference):
                assert g.sum() == r.sum() and np.all(g[:g.sum()] == 1)
        elif task == "tagging" and name == "tags":
            for g, r in zip(values, reference):
                assert [t for t in g if t] == [t for t in r if t]
        elif values.dtype.kind == "f":
            np.testing.assert_allclose(values, reference, atol=1e-5, rtol=0)
        else:
            np.testing.assert_array_equal(values, reference)


@pytest.mark.parametrize("task", export.TASKS)
def test_mixed_length_batches_equal_one_by_one_and_the_padded_export(exports, golden, tables,
                                                                     task):
    """Every export answers a batch of mixed lengths as each request alone, and as the export
    padded to max_seq_length; the batch runs at its longest sequence rounded up to 16, a
    shorter request alone at its own (checked on the shapes the model is called with)."""
    dynamic, padded = _dynamic_and_padded(exports, golden, tables, task)
    inputs = MIXED[task]
    batch, batch_shape = _call(dynamic, inputs)
    reference, padded_shape = _call(padded, inputs)
    assert padded_shape[1] == 64 and batch_shape[0] == padded_shape[0]
    _assert_same_answers(task, batch, reference)
    count = len(next(iter(inputs.values())))
    lengths = []
    for i in range(count):
        alone, shape = _call(dynamic, {k: v[i:i + 1] for k, v in inputs.items()})
        _assert_same_answers(task, alone, reference, slice(i, i + 1))
        lengths.append(shape[1])
    assert max(lengths) == batch_shape[1] and min(lengths) < min(batch_shape[1], 64)


def test_a_short_request_runs_at_its_own_length(exports, golden, tables):
    """A 12-piece sentence at batch 1 costs a 16-position forward pass, not max_seq_length's;
    the features export's outputs show it too (S = 16)."""
    tokenizer = golden[3]
    text = "the man " * 5
    assert len(tokenizer.tokenize(text)) + 2 == 12
    dynamic, padded = _dynamic_and_padded(exports, golden, tables, "classifier")
    assert _call(dynamic, {"text_a": [text], "text_b": [""]})[1] == [1, 16]
    assert _call(padded, {"text_a": [text], "text_b": [""]})[1] == [1, 64]
    features = export.build_export("features", golden[0], golden[1], golden[2], True, 64,
                                   layers=LAYERS, tokenizer=tables)[0]
    out = features.serve(tf.constant([text]), tf.constant([""]))
    assert out["layers"].shape[:2] == (1, 16) and out["input_mask"].numpy().sum() == 12


def test_predictor_sorts_windows_of_lines_and_answers_in_input_order(exports):
    """Lines sorted by length in windows of 4 into batches of 2 get the answers of batches in
    input order (--sort_window=1), line for line."""
    cases = {"classifier": [f"{a}\t{b}" if b else a for a, b in zip(TEXTS_A, TEXTS_B)],
             "tagging": TAGGING_TEXTS}
    for task, lines in cases.items():
        lines = lines + lines[::-1]
        sorted_rows = list(predict.predict_lines(exports[task][1], lines, 2, sort_window=4))
        plain_rows = list(predict.predict_lines(exports[task][1], lines, 2, sort_window=1))
        assert len(sorted_rows) == len(plain_rows) == len(lines)
        for got, expected in zip(sorted_rows, plain_rows):
            assert got.keys() == expected.keys()
            for key, value in got.items():
                if key == "probabilities":
                    np.testing.assert_allclose(list(value.values()),
                                               list(expected[key].values()), atol=1e-5, rtol=0)
                else:
                    assert value == expected[key]


@pytest.mark.slow
def test_albert_classifier_export_equals_python(tmp_path):
    """An ALBERT checkpoint and its SentencePiece model as --vocab_file: the export tokenizes
    in the graph (preprocess_text, SentencePiece, the digit-comma rule: ALBERT's
    TokenizerModule) and its probabilities, saved and loaded again, are the Python model's on
    the host tokenizer's pieces. It records that loading needs tensorflow_text (core_ops
    False)."""
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops for loading)

    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.tokenization import AlbertTokenizer

    spm_model = Path(__file__).parent / "data" / "albert_spm" / "albert.model"
    config = AlbertConfig(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_hidden_groups=1, inner_group_num=2, num_attention_heads=2,
                          intermediate_size=32, max_position_embeddings=64)
    tf.keras.utils.set_random_seed(5)
    model = BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size))
    prefix = save_original_checkpoint(model, tmp_path / "ckpt" / "model.ckpt-best")
    module, info = export.build_export("classifier", config, prefix, str(spm_model), True,
                                       max_seq_length=MAX_SEQ_LENGTH, labels=LABELS)
    assert info["core_ops"] is False
    export_dir = export.save_export(module, info, tmp_path / "classifier")
    loaded = tf.saved_model.load(str(export_dir))
    texts_a = ["Hello  World, 1,000 Cafés!", "ÅNGSTRÖM naïve", "x 2,5, people"]
    texts_b = ["Second sentence.", "", "It rained in 1990, again."]
    got = loaded.signatures["serving_default"](text_a=tf.constant(texts_a),
                                                text_b=tf.constant(texts_b))
    tokenizer = AlbertTokenizer(str(spm_model), do_lower_case=True)
    expected = model(_pair_features(tokenizer, texts_a, texts_b))["probabilities"].numpy()
    np.testing.assert_allclose(got["probabilities"].numpy(), expected, atol=1e-5, rtol=0)


@pytest.mark.slow  # builds ALBERT's graph tokenizer
def test_albert_tagging_export_equals_run_taggings_windows(tmp_path):
    """An ALBERT tagging export (the SentencePiece model as --vocab_file) tags each word as
    run_tagging.py's windows of the host tokenizer's pieces predict it (the label at each
    word's first piece). (ALBERT's SQuAD export: tests/test_serving_squad_albert.py.)"""
    from albert_fixtures import SPM_MODEL, write_checkpoint

    from bert_tf import families
    from bert_tf.albert.tokenization import AlbertTokenizer

    config_file, _ = write_checkpoint(tmp_path / "albert_base")
    config = families.read_config(config_file)
    tf.keras.utils.set_random_seed(7)
    model = BertTaskModel(config, TokenClassifierHead(len(TAGS), config.hidden_size))
    prefix = save_original_checkpoint(model, tmp_path / "tagger" / "model.ckpt-1")
    module, info = export.build_export("tagging", config, prefix, SPM_MODEL, True,
                                       max_seq_length=10, labels=TAGS, doc_stride=3)
    assert info["core_ops"] is False
    texts = ["Müller paid 1,000 euros in Zürich (1895-1943).", "Ca\u0301fe naïve  ÅNGSTRÖM",
             "\u0301 x"]
    got = module.serve(tf.constant(texts))
    tokenizer = AlbertTokenizer(SPM_MODEL, do_lower_case=True)
    sentences, windows = [], []
    for i, text in enumerate(texts):
        sentences.append(Sentence(text.split(), None, [], 0))
        windows += sentence_windows(sentences[-1].words, None, tokenizer, 10, 3, i)
    assert max(w.window_index for w in windows) >= 3  # overlapping windows
    features = {name: tf.constant([getattr(w, name) for w in windows], tf.int32)
                for name in ("input_ids", "input_mask", "segment_ids")}
    expected = word_predictions(sentences, windows, model(features)["logits"].numpy().argmax(-1),
                                TAGS)
    width = max(len(s.words) for s in sentences)
    assert [[t.decode() for t in row] for row in got["tags"].numpy()] == [
        tags + [""] * (width - len(tags)) for tags in expected]
