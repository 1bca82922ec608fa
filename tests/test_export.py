"""Exported SavedModels answer raw strings like the Python path, in a process without bert_tf.

Each export is built once per module on the golden tiny model with a random head saved as a
checkpoint; one subprocess (PYTHONPATH empty, importing only tensorflow and tensorflow_text)
loads them all and answers the same strings, compared with our model on FullTokenizer features.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import export
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.config import BertConfig
from bert_tf.data.pairs import pad_to, pair_tokens
from bert_tf.data.squad import SquadExample, convert_examples_to_features, split_context
from bert_tf.fast_tokenization import TokenizerModule
from bert_tf.heads import ClassifierHead, SpanHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.squad_predictions import RawResult, compute_predictions
from bert_tf.tokenization import FullTokenizer
from conftest import golden_path

pytestmark = pytest.mark.slow
MAX_SEQ_LENGTH = 24
LABELS = ["neg", "pos", "mixed"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]
LAYERS = "-1,0"
SQUAD = dict(max_query_length=6, doc_stride=5, n_best_size=4, max_answer_length=6)
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


@pytest.fixture(scope="module")
def golden():
    model_dir = golden_path("model")
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    vocab_file = str(model_dir / "vocab.txt")
    return config, str(model_dir / "bert_model.ckpt"), vocab_file, FullTokenizer(vocab_file)


@pytest.fixture(scope="module")
def exports(golden, tmp_path_factory):
    """task -> (Python model, export directory)."""
    config, checkpoint, vocab_file, tokenizer = golden
    root = tmp_path_factory.mktemp("exports")
    tables = TokenizerModule(tokenizer.vocab, do_lower_case=True)
    heads = {"classifier": lambda: ClassifierHead(len(LABELS), config.hidden_size),
             "tagging": lambda: TokenClassifierHead(len(TAGS), config.hidden_size),
             "squad": lambda: SpanHead(config.hidden_size)}
    built = {}
    for i, task in enumerate(export.TASKS):
        keras_seed = 100 + i
        tf.keras.utils.set_random_seed(keras_seed)
        model = BertTaskModel(config, heads.get(task, heads["classifier"])())
        load_original_checkpoint(model, checkpoint)
        prefix = save_original_checkpoint(model, root / f"{task}_ckpt" / "model.ckpt")
        labels = {"classifier": LABELS, "tagging": TAGS}.get(task)
        module, info = export.build_export(
            task, config, prefix, vocab_file, True, MAX_SEQ_LENGTH, labels, LAYERS,
            tokenizer=tables, **SQUAD)
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
        "tagging": {"text": TEXTS_A + TEXTS_B},
        "squad": {"question": QUESTIONS, "context": CONTEXTS},
    }
    jobs = {task: (str(exports[task][1]), kwargs) for task, kwargs in calls.items()}
    jobs["classifier_single"] = (str(exports["classifier"][1]), {"text_a": TEXTS_A})
    jobs["squad_no_window"] = (str(exports["squad"][1]), {"question": ["q", "r"],
                                                          "context": ["", " \t "]})
    script = f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # registers the WordPiece ops
        assert not any(m.startswith("bert_tf") for m in sys.modules)
        out = {{}}
        for name, (path, kwargs) in {jobs!r}.items():
            loaded = tf.saved_model.load(path)
            signature = "single" if name.endswith("_single") else "serving_default"
            result = loaded.signatures[signature](**{{k: tf.constant(v) for k, v in kwargs.items()}})
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


def test_tagging_gives_the_tag_of_each_words_first_piece(exports, served, golden):
    tokenizer = golden[3]
    model = exports["tagging"][0]
    texts = TEXTS_A + TEXTS_B
    got = served["tagging"]
    for i, text in enumerate(texts):
        words = text.split()
        tokens, firsts = ["[CLS]"], []
        for word in words:
            pieces = tokenizer.tokenize(word)
            # A word keeps its tag when its first piece has a position.
            firsts.append(len(tokens) if pieces and len(tokens) < MAX_SEQ_LENGTH - 1 else None)
            tokens += pieces
        tokens = tokens[:MAX_SEQ_LENGTH - 1] + ["[SEP]"]
        ids = tokenizer.convert_tokens_to_ids(tokens)
        features = {"input_ids": [pad_to(ids, MAX_SEQ_LENGTH)],
                    "input_mask": [pad_to([1] * len(ids), MAX_SEQ_LENGTH)],
                    "segment_ids": [[0] * MAX_SEQ_LENGTH]}
        logits = model({k: tf.constant(v) for k, v in features.items()})["logits"].numpy()[0]
        tags = ["" if p is None else TAGS[logits[p].argmax()] for p in firsts]
        assert got["num_words"][i] == len(words), text
        width = len(got["tags"][i])
        assert got["tags"][i] == tags + [""] * (width - len(tags)), text
    # "a " * 40 has more words than positions: the cut words get "".
    assert got["num_words"][3] == 40 and got["tags"][3][MAX_SEQ_LENGTH - 2:] == [""] * 18


def _script_best_span(features, results, n_best_size, max_answer_length):
    """run_squad.py's best span of one example, written as its loop: (first word, last word,
    start logit, end logit) or None."""
    best = None
    for feature, (start_logits, end_logits) in zip(features, results):
        def top(logits):
            return sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:n_best_size]
        for s in top(start_logits):
            for e in top(end_logits):
                if (s not in feature.token_to_orig_map or e not in feature.token_to_orig_map
                        or not feature.token_is_max_context.get(s, False)
                        or e < s or e - s + 1 > max_answer_length):
                    continue
                total = float(start_logits[s]) + float(end_logits[e])
                if best is None or total > best[0]:
                    best = (total, feature.token_to_orig_map[s], feature.token_to_orig_map[e],
                            float(start_logits[s]), float(end_logits[e]))
    return best


def test_squad_equals_the_scripts_word_span(exports, served, golden):
    tokenizer = golden[3]
    model = exports["squad"][0]
    examples = [SquadExample(str(i), q, split_context(c)[0])
                for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS))]
    features = []
    convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, SQUAD["doc_stride"],
                                 SQUAD["max_query_length"], False, features.append)
    assert max(f.doc_span_index for f in features) >= 3  # several windows are exercised
    inputs = {name: tf.constant([getattr(f, name) for f in features], tf.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
    outputs = model(inputs)
    starts, ends = outputs["start_logits"].numpy(), outputs["end_logits"].numpy()
    results = [RawResult(f.unique_id, starts[k].tolist(), ends[k].tolist())
               for k, f in enumerate(features)]
    predictions, nbest, _ = compute_predictions(
        examples, features, results, SQUAD["n_best_size"], SQUAD["max_answer_length"], True)
    got = served["squad"]
    for i, example in enumerate(examples):
        mine = [k for k, f in enumerate(features) if f.example_index == i]
        best = _script_best_span([features[k] for k in mine],
                                 [(starts[k], ends[k]) for k in mine],
                                 SQUAD["n_best_size"], SQUAD["max_answer_length"])
        if best is None:
            assert (got["answer"][i], got["score"][i]) == ("empty", 0.0)
            assert predictions[str(i)] == "empty"
            continue
        total, first, last, start_logit, end_logit = best
        assert got["answer"][i] == " ".join(example.doc_tokens[first:last + 1])
        np.testing.assert_allclose(
            [got["score"][i], got["start_logit"][i], got["end_logit"][i]],
            [total, start_logit, end_logit], atol=1e-5, rtol=0)
        # The script's final text is this word span trimmed to the predicted pieces.
        assert predictions[str(i)] in got["answer"][i]
        top = nbest[str(i)][0]
        assert top["start_logit"] + top["end_logit"] == pytest.approx(total, abs=1e-5)
    assert got["answer"][3] == "empty"  # an empty context has no window
    assert served["squad_no_window"] == {"answer": ["empty"] * 2, "score": [0.0] * 2,
                                         "start_logit": [0.0] * 2, "end_logit": [0.0] * 2}


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
    with pytest.raises(export.ExportError, match="no --labels given"):
        export.read_labels(None, str(tmp_path / "model.ckpt"))
    (tmp_path / "task.json").write_text(json.dumps({"labels": ["a", "b"]}))
    assert export.read_labels(None, str(tmp_path / "model.ckpt")) == ["a", "b"]
    assert export.read_labels(None, str(tmp_path)) == ["a", "b"]
    assert export.read_labels("x, y", None) == ["x", "y"]


def _predict(export_dir, stdin, *args):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(export.__file__)))
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
    assert [r["answer"] for r in rows] == served["squad"]["answer"]
    assert sorted(os.listdir(tmp_path)) == ["answers.jsonl", "questions.tsv"]


def test_predictor_names_a_bad_line(exports, tmp_path):
    output_file = tmp_path / "out.jsonl"
    result = _predict(exports["squad"][1], "q\tc\nno tab here\n", f"--output_file={output_file}")
    assert result.returncode != 0
    assert "stdin: line 2: expected question<TAB>context, found no tab" in result.stderr
    assert os.listdir(tmp_path) == []  # no partial output
