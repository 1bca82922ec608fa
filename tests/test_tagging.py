"""run_tagging.py / bert_tf.tasks.tagging on a tiny model: the loss falls, eval_results.txt is
conlleval's entity scores of the written predictions, predictions round-trip the input lines,
the head's checkpoint names, resume, and every bad input as a one-line error."""

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.bert.tokenization import FullTokenizer
from bert_tf.data import conll
from bert_tf.evaluation import tagging_metrics
from bert_tf.tasks.tagging import TaggingError, TaggingOptions, TaggingTask, real_records, run
from bert_tf.training.trainer import TrainingError
from conftest import tiny_config_dict
from test_training_helpers import assert_eval_results_equal

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "mary", "paris", "london",
         "acme", "corp", "lives", "in", "works", "at", "the", "visited", "and", "x", "##x"]
PEOPLE = ["john", "mary"]
PLACES = ["paris", "london"]
MAX_SEQ_LENGTH = 10  # windows of 8 pieces
# 16 pieces ("x" and 15 "##x"): longer than a window, split across windows, never dropped.
LONG_WORD = "x" * 16


def sentence_lines(rng):
    """One sentence of a template whose tags follow from the words (so a model can learn)."""
    person, place = rng.choice(PEOPLE), rng.choice(PLACES)
    templates = [
        [(person, "B-PER"), ("lives", "O"), ("in", "O"), (place, "B-LOC")],
        [(person, "B-PER"), ("works", "O"), ("at", "O"), ("acme", "B-ORG"), ("corp", "I-ORG")],
        [("the", "O"), (person, "B-PER"), ("visited", "O"), (place, "B-LOC"), ("and", "O"),
         (rng.choice(PLACES), "B-LOC")],
    ]
    return [f"{word} X {tag}" for word, tag in templates[rng.randint(len(templates))]]


def conll_text(rng, num_sentences, long_word=True):
    lines = ["-DOCSTART- -X- O", ""]
    for i in range(num_sentences):
        lines += sentence_lines(rng)
        if long_word and i == 1:
            lines.insert(len(lines) - 1, f"{LONG_WORD} X O")
        lines.append("")
    return "\n".join(lines) + "\n"


def make_setup(tmp_path):
    """(tmp_path, config, options(**overrides)) over a data_dir of train/dev/test.txt."""
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = BertConfig.from_dict(tiny_config_dict(vocab_size=len(VOCAB),
                                                   max_position_embeddings=16))
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.RandomState(0)
    (data / "train.txt").write_text(conll_text(rng, 32))
    dev = conll_text(rng, 9)
    (data / "dev.txt").write_text(dev)
    (data / "test.txt").write_text(dev)  # gold tags kept: the predictions are conlleval input

    def options(**overrides):
        kwargs = dict(data_dir=str(data), vocab_file=str(tmp_path / "vocab.txt"),
                      output_dir=str(tmp_path / "out"), max_seq_length=MAX_SEQ_LENGTH,
                      doc_stride=4, train_batch_size=8, eval_batch_size=4,
                      predict_batch_size=3, num_train_epochs=3.0, learning_rate=2e-3,
                      save_checkpoints_steps=10, iterations_per_loop=10)
        kwargs.update(overrides)
        return TaggingOptions(**kwargs)

    return tmp_path, config, options


@pytest.fixture()
def setup(tmp_path):
    return make_setup(tmp_path)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return FullTokenizer(str(path), do_lower_case=True)


def parse_records(path):
    dataset = tf.data.TFRecordDataset(str(path)).map(
        lambda s: tf.io.parse_single_example(s, conll.feature_spec(MAX_SEQ_LENGTH)))
    return [{k: v.numpy() for k, v in record.items()} for record in dataset]


def training_windows(tmp_path, tokenizer, seed, num_sentences):
    """(sentences, labels, windows) of a train.txt of `num_sentences` template sentences."""
    path = tmp_path / "train.txt"
    path.write_text(conll_text(np.random.RandomState(seed), num_sentences))
    sentences = conll.read_conll(path)
    labels = conll.label_list(sentences)
    return sentences, labels, conll.convert_sentences(sentences, labels, tokenizer,
                                                      MAX_SEQ_LENGTH, 4)


def test_sub_token_word_mapping_round_trips(tmp_path, tokenizer):
    sentences, labels, windows = training_windows(tmp_path, tokenizer, 1, 4)
    long_sentence = sentences[1]
    assert LONG_WORD in long_sentence.words
    assert sum(w.sentence_index == 1 for w in windows) > 2  # the long word spans windows
    conll.write_windows(tmp_path / "r.tf_record", windows)
    records = parse_records(tmp_path / "r.tf_record")
    # Through the records and back: "predicting" the gold label ids gives the gold tags, one
    # per word, every word of the long sentence included.
    batches = [{
        "predictions": np.stack([r["label_ids"] for r in records]),
        "label_weights": np.stack([r["label_weights"] for r in records]),
        "word_ids": np.stack([r["word_ids"] for r in records]),
        "sentence_index": np.stack([r["sentence_index"] for r in records]),
        "is_real_example": np.stack([r["input_mask"][0] for r in records]),
    }]
    task = TaggingTask(labels, MAX_SEQ_LENGTH)
    assert task.word_tags(sentences, real_records(batches)) == [s.tags for s in sentences]
    # Every word is predicted at exactly one position, its first piece.
    predicted = [(int(r["sentence_index"][0]), int(r["word_ids"][p]))
                 for r in records for p in np.flatnonzero(r["label_weights"])]
    assert sorted(predicted) == [(s, w) for s, sentence in enumerate(sentences)
                                 for w in range(len(sentence.words))]


def test_entity_scores_of_hand_built_predictions(tmp_path, tokenizer):
    path = tmp_path / "dev.txt"
    path.write_text("john X B-PER\nlives X O\nin X O\nparis X B-LOC\n\n"
                    "acme X B-ORG\ncorp X I-ORG\nand X O\nmary X B-PER\n\n")
    sentences = conll.read_conll(path)
    labels = ["O", "B-LOC", "B-ORG", "B-PER", "I-ORG", "I-PER"]
    windows = conll.convert_sentences(sentences, labels, tokenizer, MAX_SEQ_LENGTH, 4)
    assert len(windows) == 2
    # Predicted word tags: "john lives in paris" -> B-PER O O B-LOC (2 right entities);
    # "acme corp and mary" -> B-ORG O O I-PER: ORG (0, 0) is wrong (gold spans 0-1), "I-PER"
    # after "O" starts a PER (3, 3), which is right. Gold 4 entities, predicted 4, correct 3:
    # precision = recall = F1 = 3/4; tokens right 6 of 8 (not corp, not mary's I-PER).
    word_tags = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O", "O", "I-PER"]]
    predictions = np.zeros([3, MAX_SEQ_LENGTH], np.int32)
    for w, window in enumerate(windows):
        for position in np.flatnonzero(window.label_weights):
            predictions[w, position] = labels.index(word_tags[w][window.word_ids[position]])
        predictions[w, 0] = labels.index("I-PER")  # [CLS]: weight 0, must not count
    # Two eval batches of 2 records; the second ends with an all-zero padding record.
    stacked = {
        "predictions": predictions,
        "label_ids": np.stack([w.label_ids for w in windows] + [np.zeros(MAX_SEQ_LENGTH)]),
        "label_weights": np.stack([w.label_weights for w in windows] +
                                  [np.zeros(MAX_SEQ_LENGTH)]),
        "word_ids": np.stack([w.word_ids for w in windows] + [np.zeros(MAX_SEQ_LENGTH)]),
        "sentence_index": np.array([[0], [1], [0]]),
        "window_index": np.array([[0], [0], [0]]),
        "is_real_example": np.array([1, 1, 0]),
    }
    batches = [dict({k: v[:1] for k, v in stacked.items()}, weighted_loss=1.5, weight=4.0,
                    total_loss=0.375),
               dict({k: v[1:] for k, v in stacked.items()}, weighted_loss=2.5, weight=4.0,
                    total_loss=0.625)]
    task = TaggingTask(labels, MAX_SEQ_LENGTH)
    task.set_eval_sentences(sentences, windows)
    results = task.finalize_eval(batches, global_step=7)
    assert task.eval_word_tags == word_tags
    assert results["eval_precision"] == pytest.approx(0.75)
    assert results["eval_recall"] == pytest.approx(0.75)
    assert results["eval_f1"] == pytest.approx(0.75)
    assert results["eval_accuracy"] == pytest.approx(6 / 8)
    assert results["eval_f1_ORG"] == 0 and results["eval_f1_PER"] == pytest.approx(1.0)
    assert results["eval_loss"] == pytest.approx(4.0 / 8)  # sum(w * CE) / sum(w)
    assert results["loss"] == pytest.approx(0.5)  # mean of the batch losses
    assert results["global_step"] == 7
    with pytest.raises(AssertionError, match="do not match the 2 written, in order"):
        task.finalize_eval(batches[::-1], global_step=7)  # records out of order


def test_loss_is_the_mean_over_predicted_words_of_the_global_batch():
    task = TaggingTask(["O", "B-PER", "I-PER"], 3)
    log_probs = tf.math.log(tf.constant([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1],
                                          [0.2, 0.2, 0.6]]]))
    features = {"label_ids": tf.constant([[0, 1, 2]]),
                "label_weights": tf.constant([[0.0, 1.0, 1.0]])}
    assert float(task.local_normalizers(features)[0]) == 2.0
    # The replica's share of a global batch with 5 predicted words: (-ln .8 - ln .6) / 5.
    loss = task.compute_loss({"log_probs": log_probs}, features, tf.constant([5.0]))
    assert float(loss["total_loss"]) == pytest.approx(-(np.log(0.8) + np.log(0.6)) / 5, 1e-6)
    zero = task.compute_loss({"log_probs": log_probs}, features, tf.constant([0.0]))
    assert float(zero["total_loss"]) == 0.0


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One training run with eval and predict (shared by the slow tests below)."""
    tmp_path, config, options = make_setup(tmp_path_factory.mktemp("tagging"))
    losses = []
    out = run(config, options(), do_train=True, do_eval=True, do_predict=True,
              step_callback=lambda step, values: losses.append((step, values["total_loss"])))
    return types.SimpleNamespace(tmp_path=tmp_path, config=config, options=options, out=out,
                                 losses=losses)


@pytest.mark.slow  # 10-20 s on 2 shared cores: trains, evaluates and predicts
def test_training_lowers_the_loss(trained):
    steps = [step for step, _ in trained.losses]
    windows = len(parse_records(trained.tmp_path / "out" / "train.tf_record"))
    assert windows > 32  # the long word's sentence has several windows
    assert steps == list(range(int(windows / 8 * 3.0)))  # steps count windows, not sentences
    losses = np.array([loss for _, loss in trained.losses])
    # From about ln(5) (5 labels) to well below it (fixed seed; the margin is wide).
    assert losses[:3].mean() > 1.2
    assert losses[-3:].mean() < 0.75 * losses[:3].mean()


@pytest.mark.slow
def test_eval_results_are_the_entity_scores_of_the_predictions(trained):
    out_dir = trained.tmp_path / "out"
    lines = read_lines(out_dir / "eval_results.txt")
    keys = [line.split(" = ")[0] for line in lines]
    assert keys == sorted(keys)
    assert {"eval_precision", "eval_recall", "eval_f1", "eval_accuracy", "eval_loss", "loss",
            "global_step"} <= set(keys)
    written = {k: float(v) for k, v in (line.split(" = ") for line in lines)}
    assert written["global_step"] == int(trained.out["checkpoint"].rsplit("-", 1)[1])
    # Recompute conlleval's scores from the written file (gold then predicted tag).
    gold, predicted, sentence_gold, sentence_predicted = [], [], [], []
    for line in read_lines(out_dir / "eval_predictions.txt") + [""]:
        if not line or line.startswith("-DOCSTART-"):
            if sentence_gold:
                gold.append(sentence_gold)
                predicted.append(sentence_predicted)
            sentence_gold, sentence_predicted = [], []
            continue
        sentence_gold.append(line.split()[-2])
        sentence_predicted.append(line.split()[-1])
    scores = tagging_metrics.entity_scores(gold, predicted)
    for key in ("precision", "recall", "f1", "accuracy"):
        assert written[f"eval_{key}"] == pytest.approx(scores[key], abs=1e-6)
    assert scores["num_gold"] > 15 and scores["f1"] > 0  # a real, non-trivial evaluation


@pytest.mark.slow
def test_predictions_round_trip_the_input_lines(trained):
    data, out_dir = trained.tmp_path / "data", trained.tmp_path / "out"
    predicted = read_lines(out_dir / "test_predictions.txt")
    inputs = read_lines(data / "test.txt")
    # Every input line, with one more column; blank lines and -DOCSTART- kept.
    assert [re.sub(r" \S+$", "", line) for line in predicted] == inputs
    assert all(re.fullmatch(r"O|[BI]-(PER|LOC|ORG)", line.split()[-1])
               for line in predicted if line)
    assert any(line.startswith(LONG_WORD) for line in predicted)
    # Eval and predict tag the same sentences with the same weights alike.
    assert predicted == read_lines(out_dir / "eval_predictions.txt")


@pytest.mark.slow
def test_checkpoint_names_and_resume(trained):
    prefix = trained.out["checkpoint"]
    names = {name for name, _ in tf.train.list_variables(prefix)}
    assert {"bert_tf/tagging/output_weights", "bert_tf/tagging/output_bias",
            "bert_tf/tagging/output_weights/adam_m"} <= names
    assert tf.train.load_variable(prefix, "bert_tf/tagging/output_weights").shape == (5, 16)
    assert "bert/pooler/dense/kernel" in names  # kept, but never trained:
    assert not [n for n in names if n.startswith("bert/pooler/") and "adam" in n]
    assert not [n for n in names if n.startswith(("output_weights", "cls/"))]
    # More epochs with the same output_dir: training continues from the saved step.
    first_run_steps = len(trained.losses)
    steps = []
    out = run(trained.config, trained.options(num_train_epochs=4.0), do_train=True,
              step_callback=lambda step, values: steps.append(step))
    assert steps[0] == first_run_steps
    assert out["checkpoint"].endswith(f"model.ckpt-{steps[-1] + 1}")


def test_bad_flags_and_files_are_clear_errors(setup):
    tmp_path, config, options = setup
    data = tmp_path / "data"
    with pytest.raises(TaggingError, match="At least one of `do_train`, `do_eval` or "
                                           "`do_predict' must be True"):
        run(config, options())
    with pytest.raises(TrainingError, match="Cannot use sequence length 20 because the BERT "
                                            "model was only trained up to sequence length 16"):
        run(config, options(max_seq_length=20), do_train=True)
    with pytest.raises(TrainingError, match="--doc_stride must be positive, got 0"):
        run(config, options(doc_stride=0), do_train=True)
    (data / "dev.txt").write_text("john X B-PER\nlives\n")
    with pytest.raises(conll.ConllError, match=r"dev\.txt:2: expected a word and a tag .* "
                                               r"one column: 'lives'"):
        run(config, options(), do_train=True, do_eval=True)
    (data / "dev.txt").write_text("john X B-MISC\n")
    with pytest.raises(conll.ConllError, match=r"dev\.txt:1: tag 'B-MISC' is not in the label "
                                               r"list of the training file"):
        run(config, options(), do_eval=True)
    (data / "train.txt").write_text("john X B-PER\n\nmary X B-PER\n")
    with pytest.raises(TaggingError, match=r"train\.txt: 2 training windows with "
                                           r"--train_batch_size=8 .* make 0 training steps"):
        run(config, options(num_train_epochs=1.0), do_train=True)
    (data / "train.txt").unlink()
    with pytest.raises(conll.ConllError, match=r"train\.txt: cannot read CoNLL file"):
        run(config, options(), do_train=True)
    with pytest.raises(TaggingError, match=r"train\.txt: not found, and --output_dir=.* has no "
                                           r"task\.json of a tagging run"):
        run(config, options(), do_predict=True)


@pytest.mark.slow  # builds two models
def test_an_output_dir_of_a_classifier_is_refused(setup):
    tmp_path, config, options = setup
    from bert_tf.tasks.classification import ClassificationTask, ClassifierOptions
    from bert_tf.training.trainer import Trainer

    out_dir = str(tmp_path / "out")
    Trainer(config, ClassificationTask("custom", ["no", "yes"], MAX_SEQ_LENGTH),
            ClassifierOptions(data_dir=".", task_name="custom", vocab_file="v",
                              output_dir=out_dir, max_seq_length=MAX_SEQ_LENGTH)).save()
    with pytest.raises(TrainingError, match=r"holds checkpoints of another task .*"
                                            r"classifier:custom"):
        run(config, options(), do_train=True)
    # Without its task.json, the checkpoint still lacks the tagging head.
    os.remove(os.path.join(out_dir, "task.json"))
    with pytest.raises(TrainingError, match=r"model\.ckpt-0: not a training checkpoint of this "
                                            r"model; it lacks .*bert_tf/tagging/output_weights"):
        run(config, options(), do_train=True)


@pytest.mark.slow  # a subprocess importing TensorFlow
def test_script_prints_one_line_errors(setup):
    tmp_path, config, options = setup
    config.to_json_file(str(tmp_path / "bert_config.json"))
    (tmp_path / "data" / "train.txt").write_text("john B-PER\nlives\n")
    proc = subprocess.run(
        [sys.executable, "run_tagging.py", f"--data_dir={tmp_path}/data",
         f"--vocab_file={tmp_path}/vocab.txt", f"--bert_config_file={tmp_path}/bert_config.json",
         f"--output_dir={tmp_path}/out", "--do_train", "--max_seq_length=12"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO))
    assert proc.returncode == 1
    assert re.search(r"run_tagging\.py: error: .*train\.txt:2: expected a word and a tag",
                     proc.stderr)
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_eval_and_predictions_in_length_order_equal_the_padded_run(trained):
    """eval_results.txt, eval_predictions.txt and test_predictions.txt of the trained model
    with dynamic padding (records in length order, batches cut to multiples of 2: 6, 8, 10
    positions) equal those of batches padded to max_seq_length."""
    outputs = {}
    for name, overrides in {"padded": dict(dynamic_padding=False),
                            "cut": dict(padding_width=2)}.items():
        output_dir = trained.tmp_path / name
        run(trained.config, trained.options(output_dir=str(output_dir),
                                            init_checkpoint=trained.out["checkpoint"],
                                            **overrides),
            do_eval=True, do_predict=True)
        outputs[name] = output_dir
    padded, cut = outputs["padded"], outputs["cut"]
    lengths = {int(r["input_mask"].sum()) for r in parse_records(cut / "eval.tf_record")}
    assert len(lengths) > 2 and max(lengths) <= MAX_SEQ_LENGTH
    assert_eval_results_equal(padded / "eval_results.txt", cut / "eval_results.txt")
    for name in ("eval_predictions.txt", "test_predictions.txt"):
        assert read_lines(cut / name) == read_lines(padded / name), name


def test_training_takes_a_permutation_of_the_windows_each_epoch_by_default(setup):
    tmp_path, config, options = setup
    assert options().shuffle_buffer_size == -1  # input_pipeline.PERMUTE_EACH_EPOCH
    assert options(shuffle_buffer_size=100).shuffle_buffer_size == 100


@pytest.mark.slow  # a subprocess importing TensorFlow
def test_script_permutes_each_epoch_unless_shuffle_buffer_size_is_given(setup):
    """run_tagging.py's --help says what the default does, and the options run() gets carry
    the permutation (-1) by default and an explicit --shuffle_buffer_size otherwise."""
    tmp_path, config, options = setup
    config.to_json_file(str(tmp_path / "bert_config.json"))
    common = [f"--data_dir={tmp_path}/data", f"--vocab_file={tmp_path}/vocab.txt",
              f"--bert_config_file={tmp_path}/bert_config.json", f"--output_dir={tmp_path}/o",
              "--do_train"]
    # One process for the three command lines and --helpfull (a process start with TensorFlow
    # is seconds): absl's FLAGS are reset to their defaults before each parse.
    probe = ("import runpy, sys\nfrom bert_tf import run_tagging\n"
             "import bert_tf.tasks.tagging as tagging\n"
             "tagging.run = lambda config, options, *a, **k: print("
             "'BUFFER', options.shuffle_buffer_size) or {}\n"
             "for extra in ([], ['--shuffle_buffer_size=100'], ['--shuffle_buffer_size=0']):\n"
             "    run_tagging.FLAGS.unparse_flags()\n"
             "    argv = ['run_tagging.py'] + sys.argv[1:] + extra\n"
             "    run_tagging.FLAGS(argv)\n"
             "    print('EXIT', run_tagging.main(argv), flush=True)\n"
             "sys.argv = ['run_tagging.py', '--helpfull']\n"
             "runpy.run_path('run_tagging.py', run_name='__main__')\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", probe] + common, cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)
    assert [line for line in proc.stdout.splitlines() if line.startswith(("BUFFER", "EXIT"))] \
        == ["BUFFER -1", "EXIT 0", "BUFFER 100", "EXIT 0", "BUFFER 0", "EXIT 0"], \
        proc.stderr[-2000:]
    assert "fresh random permutation" in proc.stdout  # the script's text, --help's too
    assert "fresh permutation each epoch" in proc.stdout
    assert re.search(r"--shuffle_buffer_size:.*\n(.*\n)*?\s+\(default: '-1'\)", proc.stdout)


@pytest.mark.slow  # two training runs, one in a subprocess killed mid-way
def test_sigkill_and_resume_in_the_permutation_gives_the_uninterrupted_weights(tmp_path,
                                                                            tokenizer):
    """The default input order (a permutation per epoch) with dropout: a run killed after its
    step-4 checkpoint and resumed continues the epoch's permutation (and the next epochs')
    exactly as the uninterrupted run; 16 steps of 4 windows over 15 windows are 4+ epochs."""
    from test_training_helpers import (assert_sigkill_and_resume_is_uninterrupted,
                                       finetune_driver_args, write_config)

    _, labels, windows = training_windows(tmp_path, tokenizer, 3, 11)
    assert len(windows) == 15  # epochs end inside batches
    records = str(tmp_path / "train.tf_record")
    conll.write_windows(records, windows)
    config_file = write_config(tmp_path / "bert_config.json", vocab_size=len(VOCAB))
    task = {"label_list": labels, "max_seq_length": MAX_SEQ_LENGTH, "dropout_rate": 0.1}

    def driver_args(output_dir):
        return finetune_driver_args(
            output_dir, config_file, task, [records], 4,
            task_class="bert_tf.tasks.tagging:TaggingTask", num_train_steps=16,
            num_warmup_steps=2, save_checkpoints_steps=2, keep_checkpoint_max=3,
            shuffle_buffer_size=TaggingOptions.shuffle_buffer_size, seed=11)

    assert_sigkill_and_resume_is_uninterrupted(tmp_path, driver_args, 16)


# -- ALBERT: the SentencePiece model as --vocab_file --------------------------------------------

def test_sentencepiece_label_on_each_words_first_piece():
    """With ALBERT's tokenizer each word (tokenized alone: preprocess_text, SentencePiece)
    starts with a "▁" piece; its label goes on that first piece, a lone "▁" included (the word
    the model splits "▁" + pieces, e.g. "1,000" -> "▁", "1", ",", "0", "00"); its other pieces
    get none."""
    from albert_fixtures import SPM_MODEL

    from bert_tf.albert.tokenization import AlbertTokenizer

    tokenizer = AlbertTokenizer(SPM_MODEL, do_lower_case=True)
    words = ["Müller", "paid", "1,000", "euros", "in", "Zürich", "(1895-1943).",
             "re\u0301sume\u0301"]
    tags = list(range(1, len(words) + 1))
    windows = conll.sentence_windows(words, tags, tokenizer, 12, 4)
    assert len(windows) > 2
    labelled = {}
    for window in windows:
        assert window.tokens[0] == "[CLS]" and window.tokens[-1] == "[SEP]"
        for position, weight in enumerate(window.label_weights):
            if weight:
                word = window.word_ids[position]
                assert word not in labelled
                labelled[word] = (window.tokens[position], window.label_ids[position])
            else:
                assert window.label_ids[position] == 0
    assert labelled == {w: (tokenizer.tokenize(word)[0], tags[w]) for w, word in enumerate(words)}
    assert all(piece.startswith("▁") for piece, _ in labelled.values())
    assert labelled[2][0] == "▁"  # "1,000"


def albert_setup(tmp_path):
    """(config, options(**overrides)) over CoNLL files of ALBERT_FIXTURES' words and the tiny
    ALBERT checkpoint."""
    from albert_fixtures import SPM_MODEL, conll_text, write_checkpoint

    from bert_tf import families

    config_file, prefix = write_checkpoint(tmp_path / "albert_base")
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.RandomState(2)
    (data / "train.txt").write_text(conll_text(rng, 12), encoding="utf-8")
    dev = conll_text(rng, 7)
    (data / "dev.txt").write_text(dev, encoding="utf-8")
    (data / "test.txt").write_text(dev, encoding="utf-8")

    def options(**overrides):
        kwargs = dict(data_dir=str(data), vocab_file=SPM_MODEL, output_dir=str(tmp_path / "out"),
                      init_checkpoint=prefix, max_seq_length=12, doc_stride=4,
                      train_batch_size=4, eval_batch_size=3, predict_batch_size=3,
                      num_train_epochs=1.0, learning_rate=2e-3, save_checkpoints_steps=100,
                      iterations_per_loop=100, tagging_dropout=0.0)
        kwargs.update(overrides)
        return TaggingOptions(**kwargs)

    return families.read_config(config_file), options


@pytest.mark.slow  # ~30 s on 2 shared cores: trains, then evaluates and predicts twice
def test_albert_checkpoint_trains_and_predicts_the_same_padded_and_cut(tmp_path):
    """run_tagging on an ALBERT checkpoint (Google's albert_config.json, model.ckpt-best) with
    its SentencePiece model: trains from the encoder, then evaluates and predicts one tag per
    word; eval_results.txt and the predictions with batches padded to max_seq_length equal
    those of cut batches in length order."""
    config, options = albert_setup(tmp_path)
    out = run(config, options(), do_train=True)
    reader = tf.train.load_checkpoint(out["checkpoint"])
    names = set(reader.get_variable_to_shape_map())
    assert {"bert/encoder/transformer/group_0/inner_group_1/LayerNorm_1/gamma/adam_m",
            "bert_tf/tagging/output_weights"} <= names
    assert not [n for n in names if n.startswith("bert/pooler/") and "adam" in n]
    outputs = {}
    for name, overrides in {"padded": dict(dynamic_padding=False),
                            "cut": dict(padding_width=2)}.items():
        outputs[name] = tmp_path / name
        run(config, options(output_dir=str(outputs[name]), init_checkpoint=out["checkpoint"],
                            **overrides), do_eval=True, do_predict=True)
    padded, cut = outputs["padded"], outputs["cut"]
    lines = read_lines(cut / "test_predictions.txt")
    words = {line.split()[0] for line in lines if line and not line.startswith("-DOCSTART-")}
    assert {"1,000", "naïve", "(1895-1943)."} & words  # the lines as written, a tag each
    assert all(len(line.split()) == 4 for line in lines if line)
    records = tf.data.TFRecordDataset(str(cut / "eval.tf_record")).map(
        lambda s: tf.io.parse_single_example(s, conll.feature_spec(12)))
    lengths = {int(r["input_mask"].numpy().sum()) for r in records}
    assert len(lengths) > 2
    assert_eval_results_equal(padded / "eval_results.txt", cut / "eval_results.txt")
    for name in ("eval_predictions.txt", "test_predictions.txt"):
        assert read_lines(cut / name) == read_lines(padded / name), name
