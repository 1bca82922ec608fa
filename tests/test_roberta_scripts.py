"""Every fine-tuning script, extract_features, export and predict on a tiny RoBERTa folder
(bert_config.json of model_type roberta, a TF1-layout checkpoint, vocab.json and merges.txt, as
`python -m bert_tf.hf import` writes it) and, for the end-to-end tests, a tiny XLM-RoBERTa one
(model_type xlm-roberta, sentencepiece.bpe.model): the records' layout `<s> A </s></s> B </s>`
(segment 0, padded with <pad>), SQuAD answers as the context's exact characters, tagging on
each word's first piece, dynamic padding on and off, host predictions = a direct model call =
the export's answers (XLM-R's SQuAD export refused in one line: its graph tokenizer has no
offsets), and the flags (--merges_file, --do_lower_case, --max_seq_length over the usable
length)."""

import csv
import functools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from bert_tf import families
from bert_tf import flags as shared_flags
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.data import conll
from bert_tf.data.classifier import InputExample, convert_single_example
from bert_tf.feature_extraction import ExtractFeaturesOptions, run_extract_features
from bert_tf.layers.heads import ClassifierHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.model import RobertaModel
from bert_tf.serving import export, predict
from bert_tf.tasks import classification, squad, tagging
from bert_tf.tasks.finetuning import FineTuningOptions

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data", "roberta_tokenizer")
XLMR_MODEL = os.path.join(REPO, "tests", "data", "xlm_roberta", "sentencepiece.bpe.model")
# Usable length: max_position_embeddings 34 - pad_token_id 1 - 1 = 32.
CONFIG = dict(vocab_size=1036, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, hidden_act="gelu_exact", hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, max_position_embeddings=34, type_vocab_size=1,
              initializer_range=0.2, model_type="roberta", pad_token_id=1)
# XLM-R's: the test SentencePiece model's 600 pieces + fairseq's <pad> and <mask> = 602 ids.
XLMR_CONFIG = dict(CONFIG, vocab_size=602, model_type="xlm-roberta")
TRAINER = dict(train_batch_size=4, learning_rate=1e-3, num_train_epochs=1.0,
               save_checkpoints_steps=100, iterations_per_loop=10, predict_batch_size=3)
# Accents, a combining mark, emoji, punctuation without spaces, a capital after a tab.
CONTEXTS = [
    "Le café à Zürich, fondé en 1893, sert du thé.",
    "Emoji 🙂🚀 go here:rocket!(launch) at 10:30,OK?",
    "Naïve re\u0301sume\u0301s\tAnd \"quoted\" words—dashes…end.",
]
SENTENCES = ["the café is open", "Zürich 🙂 works", "a b c d e f g", "¿Qué?", "no-space,here"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder as `python -m bert_tf.hf import` writes one (encoder weights only)."""
    path = tmp_path_factory.mktemp("roberta")
    config = RobertaConfig.from_dict(CONFIG)
    config.to_json_file(str(path / "bert_config.json"))
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(DATA, name), path / name)
    tf.keras.utils.set_random_seed(1)
    save_original_checkpoint(RobertaModel(config), str(path / "bert_model.ckpt"))
    return path


@pytest.fixture(scope="module", params=["roberta", "xlm-roberta"])
def any_folder(request, folder, tmp_path_factory):
    """The RoBERTa folder, or an XLM-R one made alike (sentencepiece.bpe.model, no merges)."""
    if request.param == "roberta":
        return folder
    path = tmp_path_factory.mktemp("xlm_roberta")
    config = families.config_from_dict(XLMR_CONFIG)
    config.to_json_file(str(path / "bert_config.json"))
    shutil.copy(XLMR_MODEL, path / "sentencepiece.bpe.model")
    tf.keras.utils.set_random_seed(1)
    save_original_checkpoint(families.build_encoder(config), str(path / "bert_model.ckpt"))
    return path


def config_of(folder):
    return families.read_config(folder / "bert_config.json")


def vocab_of(folder):
    """The folder's --vocab_file: vocab.json (RoBERTa) or sentencepiece.bpe.model (XLM-R)."""
    json_vocab = folder / "vocab.json"
    return str(json_vocab if json_vocab.exists() else folder / "sentencepiece.bpe.model")


def files_of(folder):
    """The folder's tokenizer file flags: --merges_file for RoBERTa, none for XLM-R."""
    merges = folder / "merges.txt"
    return {"merges_file": str(merges)} if merges.exists() else {}


def tokenizer_of(folder, words=False):
    return families.make_tokenizer(config_of(folder), vocab_of(folder), False, files_of(folder),
                                   words=words)


def common(folder, output_dir, **overrides):
    return dict(dict(vocab_file=vocab_of(folder), do_lower_case=False,
                     tokenizer_files=files_of(folder),
                     init_checkpoint=str(folder / "bert_model.ckpt"), output_dir=str(output_dir),
                     max_seq_length=24, **TRAINER), **overrides)


# --- flags ------------------------------------------------------------------------------------

def parsed(argv):
    values = absl_flags.FlagValues()
    absl_flags.DEFINE_bool("do_lower_case", True, "", flag_values=values)
    for name in shared_flags.TOKENIZER_FILE_FLAGS:
        absl_flags.DEFINE_string(name, None, "", flag_values=values)
    values(["prog", *argv])
    return values


def test_do_lower_case_takes_the_family_default_and_refuses_true_for_roberta(folder):
    roberta, bert = config_of(folder), families.config_from_dict(
        {k: v for k, v in CONFIG.items() if k not in ("model_type", "pad_token_id")})
    merges = str(folder / "merges.txt")
    assert shared_flags.tokenizer_settings(parsed([]), roberta) == (False, {"merges_file": None})
    assert shared_flags.tokenizer_settings(parsed([f"--merges_file={merges}"]), roberta) == (
        False, {"merges_file": merges})
    assert shared_flags.tokenizer_settings(parsed(["--do_lower_case=false"]), roberta)[0] is False
    with pytest.raises(shared_flags.FlagError, match=r"^--do_lower_case=true: a roberta model's "
                                                      r"tokenizer is cased"):
        shared_flags.tokenizer_settings(parsed(["--do_lower_case=true"]), roberta)
    # XLM-R's SentencePiece vocabulary is cased too.
    xlmr = families.config_from_dict(XLMR_CONFIG)
    assert shared_flags.tokenizer_settings(parsed([]), xlmr)[0] is False
    with pytest.raises(shared_flags.FlagError, match=r"^--do_lower_case=true: a xlm-roberta "
                                                      r"model's tokenizer is cased"):
        shared_flags.tokenizer_settings(parsed(["--do_lower_case=true"]), xlmr)
    # BERT keeps the original's default and meaning.
    assert shared_flags.tokenizer_settings(parsed([]), bert)[0] is True
    assert shared_flags.tokenizer_settings(parsed(["--do_lower_case=false"]), bert)[0] is False
    # Every family's tokenizer file flags are defined once, in bert_tf.flags.
    for name in families.NAMES:
        assert set(families.get(name).tokenizer_file_flags) <= set(
            shared_flags.TOKENIZER_FILE_FLAGS)


@pytest.mark.slow  # two subprocesses of run_classifier.py
def test_the_commands_refuse_in_one_line(folder, tmp_path):
    """run_classifier.py with --do_lower_case=true, and with --max_seq_length past the usable
    length (33 of 34 positions with pad id 1): one line each, naming the flag."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("text_a\tlabel\nhello\tx\n")
    base = [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=custom",
            f"--data_dir={data}", f"--vocab_file={folder / 'vocab.json'}",
            f"--bert_config_file={folder / 'bert_config.json'}",
            f"--output_dir={tmp_path / 'out'}", "--do_train"]
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
    refusals = [
        (["--do_lower_case=true"],
         "run_classifier.py: error: --do_lower_case=true: a roberta model's tokenizer is cased"),
        (["--max_seq_length=33"],
         "run_classifier.py: error: Cannot use sequence length 33 because the BERT model was "
         "only trained up to sequence length 32 (--max_seq_length > max_position_embeddings 34 "
         "- pad_token_id 1 - 1 of the roberta config)"),
    ]
    for extra, expected in refusals:
        done = subprocess.run(base + extra, capture_output=True, text=True, env=env, cwd=REPO,
                              timeout=300)
        assert done.returncode == 1
        lines = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(lines) == 1 and lines[0].startswith(expected), done.stderr[-2000:]
        assert "Traceback" not in done.stderr


def test_max_seq_length_checks_use_the_usable_length(folder, tmp_path):
    config = config_of(folder)
    options = FineTuningOptions(**common(folder, tmp_path, max_seq_length=33))
    assert any("sequence length 32 (--max_seq_length > max_position_embeddings 34 - "
               "pad_token_id 1 - 1 of the roberta config)" in p for p in options.problems(config))
    assert not FineTuningOptions(**common(folder, tmp_path, max_seq_length=32)).problems(config)
    with pytest.raises(squad.SquadError, match="up to sequence length 32"):
        squad.validate_flags(config, squad.SquadOptions(**common(
            folder, tmp_path, max_seq_length=33, max_query_length=4, doc_stride=8,
            predict_file="x")), False, True)
    with pytest.raises(export.ExportError, match=r"--max_seq_length=33: expected 3 to 32 "
                                                 r"\(max_position_embeddings 34 - pad_token_id "
                                                 r"1 - 1 of the roberta config\)$"):
        export.build_export("features", config, str(folder / "bert_model.ckpt"),
                            str(folder / "vocab.json"), False, 33)
    from bert_tf.feature_extraction import FeatureExtractionError, check_max_seq_length
    with pytest.raises(FeatureExtractionError, match=r"--max_seq_length=33: the model takes at "
                                                     r"most 32 positions"):
        check_max_seq_length(33, config)
    check_max_seq_length(32, config)


# --- classifier -------------------------------------------------------------------------------

def write_tsv(path, rows, header):
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows))


@pytest.mark.slow  # trains, predicts and exports a tiny model (10-25 s)
def test_classifier(any_folder, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    pairs = [(SENTENCES[i % 5], SENTENCES[(i + 2) % 5]) for i in range(8)]
    write_tsv(data / "train.tsv", [(a, b, "xy"[i % 2]) for i, (a, b) in enumerate(pairs)],
              ("text_a", "text_b", "label"))
    write_tsv(data / "test.tsv", pairs[:7], ("text_a", "text_b"))
    config = config_of(any_folder)
    results = {}
    for dynamic in (True, False):
        out = tmp_path / f"out_{dynamic}"
        options = classification.ClassifierOptions(**common(
            any_folder, out, data_dir=str(data), task_name="custom", dynamic_padding=dynamic))
        ran = classification.run(config, options, do_train=True, do_predict=True)
        with open(ran["test_results"]) as f:
            results[dynamic] = np.array([[float(x) for x in row] for row in csv.reader(
                f, delimiter="\t")])
        checkpoint = ran["checkpoint"]
    # Padding is masked out of attention: the same probabilities up to float32 rounding of
    # other shapes' sums (probabilities <= 1: ~1e-7 each, a few steps of it).
    np.testing.assert_allclose(results[True], results[False], atol=1e-6)

    # The records' layout, and the model called directly on those features.
    tokenizer = tokenizer_of(any_folder)
    features = [convert_single_example(i, InputExample(str(i), a, b, "x"), ["x", "y"], 24,
                                       tokenizer) for i, (a, b) in enumerate(pairs[:7])]
    first = features[0]
    n = sum(first.input_mask)
    ids_a, ids_b = (tokenizer.tokenize_to_ids(t) for t in pairs[0])
    assert first.input_ids[:n] == [0, *ids_a, 2, 2, *ids_b, 2]  # <s> A </s></s> B </s>
    assert first.input_ids[n:] == [1] * (24 - n)  # <pad>
    assert first.segment_ids == [0] * 24
    model = BertTaskModel(config, ClassifierHead(2, config.hidden_size))
    load_original_checkpoint(model, checkpoint)
    batch = {name: tf.constant([getattr(f, name) for f in features])
             for name in ("input_ids", "input_mask", "segment_ids")}
    probabilities = tf.nn.softmax(model(batch, training=False)["logits"]).numpy()
    np.testing.assert_allclose(results[False], probabilities, atol=1e-6)

    # The export answers as the host prediction; predict reads it.
    module, info = export.build_export(
        "classifier", config, checkpoint, vocab_of(any_folder), False, 24, ["x", "y"])
    served = module.serve(tf.constant([a for a, _ in pairs[:7]]),
                          tf.constant([b for _, b in pairs[:7]]))
    np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-6)
    export.save_export(module, info, tmp_path / "export")
    rows = list(predict.predict_lines(str(tmp_path / "export"),
                                      [f"{a}\t{b}" for a, b in pairs[:7]], batch_size=2))
    np.testing.assert_allclose([[r["probabilities"][k] for k in "xy"] for r in rows],
                               probabilities, atol=1e-6)


# --- SQuAD ------------------------------------------------------------------------------------

def squad_file(path, with_answers=True):
    questions = [("Where is the café?", 0, "Zürich"), ("When?", 0, "1893"),
                 ("What flies?", 1, "🚀"), ("Which word?", 1, "rocket"),
                 ("What is quoted?", 2, "\"quoted\""), ("Accents?", 2, "re\u0301sume\u0301s")]
    paragraphs = [{"context": c, "qas": []} for c in CONTEXTS]
    for i, (question, p, answer) in enumerate(questions):
        qa = {"id": f"q{i}", "question": question}
        if with_answers:
            qa["answers"] = [{"text": answer,
                              "answer_start": CONTEXTS[p].index(answer)}]
        paragraphs[p]["qas"].append(qa)
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t",
                                                             "paragraphs": paragraphs}]}))
    return questions


@pytest.mark.slow  # trains, predicts and exports a tiny model (10-25 s)
def test_squad(any_folder, tmp_path):
    train = tmp_path / "train.json"
    questions = squad_file(train)
    predict_file = tmp_path / "dev.json"
    squad_file(predict_file, with_answers=False)
    config = config_of(any_folder)
    predictions = {}
    for name, padding in (("dynamic", dict(dynamic_padding=True, predict_dynamic_padding=True)),
                          ("static", dict(dynamic_padding=False))):
        options = squad.SquadOptions(**common(
            any_folder, tmp_path / name, train_file=str(train), predict_file=str(predict_file),
            max_query_length=6, doc_stride=8, max_answer_length=6, n_best_size=5, **padding))
        ran = squad.run(config, options, do_train=True, do_predict=True)
        with open(ran["predictions"], encoding="utf-8") as f:
            predictions[name] = json.load(f)
        checkpoint = ran["checkpoint"]
    for i, (_, p, _) in enumerate(questions):
        for answers in predictions.values():
            # The context's own characters, whatever the pieces (accents, emoji, no spaces).
            assert answers[f"q{i}"] and answers[f"q{i}"] in CONTEXTS[p], answers[f"q{i}"]

    # The training answers were found through the offsets: each feature's span holds it.
    tokenizer = tokenizer_of(any_folder, words=True)
    examples = squad_data_examples(train)
    features = []
    from bert_tf.data.squad import convert_examples_to_features
    convert_examples_to_features(examples, tokenizer, 24, 8, 6, True, features.append)
    found = {}
    for feature in features:
        assert feature.input_ids[0] == 0 and feature.segment_ids == [0] * 24
        n = sum(feature.input_mask)
        assert feature.input_ids[n:] == [1] * (24 - n)
        q = len(feature.query_ids)
        assert feature.input_ids[q + 1:q + 3] == [2, 2] and feature.input_ids[n - 1] == 2
        if feature.start_position:
            doc = feature.document
            first = feature.doc_start + feature.start_position - feature.doc_offset
            last = feature.doc_start + feature.end_position - feature.doc_offset
            example = examples[feature.example_index]
            found[example.qas_id] = doc.span_text(example.paragraph_text, first, last)
    expected = {e.qas_id: e.orig_answer_text for e in examples}
    if config.model_type == "xlm-roberta":
        # The test SentencePiece model knows neither emoji: SentencePiece makes the run "🙂🚀"
        # one <unk> piece, so the answer widens to that whole piece (the original's rule: an
        # answer starts and ends on pieces).
        expected["q2"] = "🙂🚀"
    assert found == expected
    # Every word starts with a word-start piece (Ġ, ▁), as after a space: Transformers'
    # is_split_into_words.
    prefix = tokenizer.special_tokens.word_start_prefix
    assert all(features[0].document.tokens[i].startswith(prefix)
               for i in features[0].document.orig_to_tok_index)

    # The export (n-best over real positions, as --predict_dynamic_padding) answers alike.
    build = functools.partial(
        export.build_export, "squad", config, checkpoint, vocab_of(any_folder), False, 24,
        max_query_length=6, doc_stride=8, n_best_size=5, max_answer_length=6)
    if config.model_type == "xlm-roberta":
        # Its graph tokenizer has no offsets to map pieces back to characters: refused.
        with pytest.raises(export.ExportError, match=r"^--task=squad: the xlm-roberta graph "
                                                     r"tokenizer cannot map predicted pieces "
                                                     r"back to the context's characters"):
            build()
        return
    module, _ = build()
    served = module.serve(tf.constant([q for q, _, _ in questions]),
                          tf.constant([CONTEXTS[p] for _, p, _ in questions]))
    assert [a.decode("utf-8") for a in served["answer"].numpy()] == [
        predictions["dynamic"][f"q{i}"] for i in range(len(questions))]


def squad_data_examples(path):
    from bert_tf.data.squad import read_squad_examples
    return read_squad_examples(str(path), True)


# --- tagging ----------------------------------------------------------------------------------

@pytest.mark.slow  # trains, predicts and exports a tiny model (10-25 s)
def test_tagging(any_folder, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    sentences = [s.split() for s in SENTENCES + CONTEXTS[:2]]
    text = "".join("".join(f"{w} {['O', 'B-X', 'I-X'][j % 3]}\n"
                           for j, w in enumerate(words)) + "\n" for words in sentences)
    for split in ("train", "dev", "test"):
        (data / f"{split}.txt").write_text(text)
    config = config_of(any_folder)
    predicted = {}
    for dynamic in (True, False):
        options = tagging.TaggingOptions(**common(
            any_folder, tmp_path / f"out_{dynamic}", data_dir=str(data), doc_stride=8,
            dynamic_padding=dynamic))
        ran = tagging.run(config, options, do_train=True, do_predict=True)
        with open(ran["test_predictions"], encoding="utf-8") as f:
            predicted[dynamic] = f.read()
        checkpoint = ran["checkpoint"]
        labels = json.loads((tmp_path / f"out_{dynamic}" / "task.json").read_text())["labels"]
    assert predicted[True] == predicted[False]

    # Each word is predicted at its first piece, which starts with the prefix space.
    tokenizer = tokenizer_of(any_folder, words=True)
    for words in sentences:
        windows = conll.sentence_windows(words, [0] * len(words), tokenizer, 24, 8)
        firsts = {}
        for window in windows:
            for position, weight in enumerate(window.label_weights):
                if weight:
                    firsts.setdefault(window.word_ids[position], window.tokens[position])
            n = sum(window.input_mask)
            assert window.input_ids[0] == 0 and window.input_ids[n - 1] == 2
            assert window.input_ids[n:] == [1] * (24 - n)
        assert firsts == {w: tokenizer.tokenize(word)[0] for w, word in enumerate(words)}
        prefix = tokenizer.special_tokens.word_start_prefix  # Ġ, ▁
        assert all(piece.startswith(prefix) for piece in firsts.values())

    # The model called directly on the records' windows: each word's tag at its chosen piece.
    model = BertTaskModel(config, TokenClassifierHead(len(labels), config.hidden_size))
    load_original_checkpoint(model, checkpoint)
    direct = []
    for words in sentences:
        windows = conll.sentence_windows(words, None, tokenizer, 24, 8)
        batch = {name: tf.constant([getattr(w, name) for w in windows])
                 for name in ("input_ids", "input_mask", "segment_ids")}
        ids = tf.argmax(model(batch, training=False)["logits"], -1).numpy()
        tags = {}
        for k, window in enumerate(windows):
            for position, weight in enumerate(window.label_weights):
                if weight:
                    tags[window.word_ids[position]] = labels[ids[k, position]]
        direct.append([tags[w] for w in range(len(words))])
    host = [[line.split()[-1] for line in block.splitlines()]
            for block in predicted[True].strip("\n").split("\n\n")]
    assert direct == host

    module, _ = export.build_export("tagging", config, checkpoint, vocab_of(any_folder),
                                    False, 24, labels, doc_stride=8)
    served = module.serve(tf.constant([" ".join(words) for words in sentences]))
    tags = [[t.decode() for t in row[:n]] for row, n in zip(served["tags"].numpy(),
                                                            served["num_words"].numpy())]
    assert tags == host


# --- extract_features ---------------------------------------------------------------------------

def json_tolerance(values):
    """The JSON lines round to 6 decimals (as the original's), 5e-7 each, so two of them differ
    by up to 1e-6; plus float32 differences between cut, padded and exported batches (other
    shapes, other summation orders) of 1e-6 at the values' scale (test_extract_features')."""
    return 1e-6 + 1e-6 * max(1.0, float(np.abs(values).max()))


@pytest.mark.slow  # extracts twice and exports a tiny model (10-25 s)
def test_extract_features(any_folder, tmp_path):
    lines = [SENTENCES[0], f"{SENTENCES[1]} ||| {SENTENCES[3]}", CONTEXTS[1], "x"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    outputs = {}
    for dynamic in (True, False):
        options = ExtractFeaturesOptions(
            input_file=str(tmp_path / "in.txt"), output_file=str(tmp_path / f"{dynamic}.jsonl"),
            bert_config_file=str(any_folder / "bert_config.json"),
            init_checkpoint=str(any_folder / "bert_model.ckpt"), vocab_file=vocab_of(any_folder),
            layers="-1", max_seq_length=24, batch_size=3, dynamic_padding=dynamic)
        assert options.do_lower_case is None  # the family's default: false for RoBERTa
        run_extract_features(options)
        with open(tmp_path / f"{dynamic}.jsonl", encoding="utf-8") as f:
            outputs[dynamic] = [json.loads(line) for line in f]
    vectors = {d: [np.array([t["layers"][0]["values"] for t in row["features"]])
                   for row in rows] for d, rows in outputs.items()}
    for a, b in zip(vectors[True], vectors[False]):
        np.testing.assert_allclose(a, b, atol=json_tolerance(b), rtol=0)
    tokens = [t["token"] for t in outputs[True][1]["features"]]
    tokenizer = tokenizer_of(any_folder)
    a, b = (tokenizer.tokenize(s) for s in (SENTENCES[1], SENTENCES[3]))
    assert tokens == ["<s>", *a, "</s>", "</s>", *b, "</s>"]

    config = config_of(any_folder)
    model = families.build_encoder(config)
    load_original_checkpoint(model, str(any_folder / "bert_model.ckpt"))
    module, _ = export.build_export("features", config, str(any_folder / "bert_model.ckpt"),
                                    vocab_of(any_folder), False, 24, layers="-1")
    pairs = [(line.split(" ||| ") + [""])[:2] for line in lines]
    served = module.serve(tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs]))
    direct = model({k: served[k] for k in ("input_ids", "input_mask")} | {
        "segment_ids": tf.zeros_like(served["input_ids"])}, training=False)["sequence_output"]
    for i, host in enumerate(vectors[True]):
        n = len(host)
        assert int(served["input_mask"][i].numpy().sum()) == n
        np.testing.assert_allclose(served["layers"][i, :n, 0].numpy(), host,
                                   atol=json_tolerance(host), rtol=0)
        np.testing.assert_allclose(direct[i, :n].numpy(), host, atol=json_tolerance(host), rtol=0)
        assert set(served["input_ids"][i, n:].numpy().tolist()) <= {1}
