"""run_classifier.py end to end on a tiny model: outputs, record reuse, and every bad input
as a one-line error naming the file, line or flag."""

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import save_original_checkpoint
from bert_tf.data.classifier import ClassifierDataError
from bert_tf.tasks.classification import (
    ClassifierError, ClassifierOptions, run, warn_if_labels_in_runs,
)
from bert_tf.training.trainer import TrainingError
from conftest import tiny_config_dict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "in", "park", "it", "rained"]


def write_vocab(path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    path.write_text("\n".join(tokens) + "\n")
    return len(tokens)


def write_split(path, rows, header="text_a\ttext_b\tlabel"):
    path.write_text(header + "\n" + "".join("\t".join(r) + "\n" for r in rows))


@pytest.fixture()
def setup(tmp_path):
    vocab_size = write_vocab(tmp_path / "vocab.txt")
    config = BertConfig.from_dict(tiny_config_dict(vocab_size=vocab_size, max_position_embeddings=16))
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.RandomState(0)

    def rows(n):
        return [(" ".join(rng.choice(WORDS, 4)), " ".join(rng.choice(WORDS, 3)),
                 ["no", "yes", "maybe"][i % 3]) for i in range(n)]

    write_split(data / "train.tsv", rows(12))
    write_split(data / "dev.tsv", rows(7))
    write_split(data / "test.tsv", [r[:2] for r in rows(5)], header="text_a\ttext_b")

    def options(**overrides):
        kwargs = dict(data_dir=str(data), task_name="custom", vocab_file=str(tmp_path / "vocab.txt"),
                      output_dir=str(tmp_path / "out"), max_seq_length=12, train_batch_size=4,
                      eval_batch_size=3, predict_batch_size=2, num_train_epochs=1.0,
                      learning_rate=1e-3, save_checkpoints_steps=2, iterations_per_loop=2)
        kwargs.update(overrides)
        return ClassifierOptions(**kwargs)

    return tmp_path, config, options


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


@pytest.mark.slow  # 13-23 s on 2 shared cores: trains, evaluates and predicts
def test_train_eval_predict_writes_the_original_files(setup):
    tmp_path, config, options = setup
    out = run(config, options(), do_train=True, do_eval=True, do_predict=True)
    files = set(os.listdir(tmp_path / "out"))
    assert {"train.tf_record", "eval.tf_record", "predict.tf_record", "model.ckpt-3.index",
            "eval_results.txt", "test_results.tsv"} <= files
    # int(12 / 4 * 1.0) = 3 steps; eval over all 7 examples (the last batch of 3 is partial).
    assert out["checkpoint"].endswith("model.ckpt-3")
    lines = read_lines(tmp_path / "out" / "eval_results.txt")
    assert [line.split(" = ")[0] for line in lines] == [
        "eval_accuracy", "eval_loss", "global_step", "loss"]
    assert lines[2] == "global_step = 3"
    accuracy = float(lines[0].split(" = ")[1])
    assert accuracy * 7 == pytest.approx(round(accuracy * 7), abs=1e-5)  # k of 7 right
    rows = [list(map(float, line.split("\t"))) for line in read_lines(out["test_results"])]
    assert len(rows) == 5 and all(len(r) == 3 for r in rows)  # labels maybe, no, yes
    np.testing.assert_allclose([sum(r) for r in rows], 1.0, atol=1e-6)


@pytest.mark.slow
def test_records_are_rebuilt_when_flags_change_and_reused_otherwise(setup):
    tmp_path, config, options = setup
    run(config, options(), do_eval=True)
    record = tmp_path / "out" / "eval.tf_record"
    first = record.stat().st_mtime_ns
    run(config, options(), do_eval=True)
    assert record.stat().st_mtime_ns == first  # same files and flags: reused
    run(config, options(max_seq_length=10), do_eval=True)
    assert record.stat().st_mtime_ns != first  # other flags: written anew
    import tensorflow as tf
    parsed = tf.io.parse_single_example(
        next(iter(tf.data.TFRecordDataset(str(record)))),
        {"input_ids": tf.io.FixedLenFeature([10], tf.int64)})
    assert parsed["input_ids"].shape == (10,)


def write_mnli(path, rows, split):
    """MNLI's layout: the guid in column 0, the sentences in columns 8 and 9, the label last
    (none in the test files)."""
    header = "\t".join(["index"] + [f"c{i}" for i in range(1, 8)] + ["sentence1", "sentence2"]
                       + ([] if split.startswith("test") else ["gold_label"]))
    write_split(path, [[str(i)] + ["x"] * 7 + list(row[:2])
                       + ([] if split.startswith("test") else [row[2]])
                       for i, row in enumerate(rows)], header=header)


@pytest.mark.slow  # ~30 s on 2 shared cores: evaluates and predicts twice
def test_mnli_runs_without_the_mismatched_files_and_uses_them_when_present(setup, caplog):
    """The original reads only train.tsv, dev_matched.tsv and test_matched.tsv: a folder with
    just those works (the mismatched sets skipped, as the log says); with the mismatched files
    they are evaluated and predicted too."""
    tmp_path, config, options = setup
    mnli = tmp_path / "mnli"
    mnli.mkdir()
    labels = ["contradiction", "entailment", "neutral"]
    rows = [(" ".join(WORDS[i:i + 4]), " ".join(WORDS[i + 1:i + 3]), labels[i % 3])
            for i in range(8)]
    for split in ("train", "dev_matched", "test_matched"):
        write_mnli(mnli / f"{split}.tsv", rows, split)
    out_dir = tmp_path / "mnli_out"
    mnli_options = options(task_name="MNLI", data_dir=str(mnli), output_dir=str(out_dir))
    with caplog.at_level(logging.INFO, logger="absl"):
        out = run(config, mnli_options, do_eval=True, do_predict=True)
    assert sorted(out["eval_results"]) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    assert len(read_lines(out["test_results"])) == 8
    assert "test_results_mismatched" not in out
    files = set(os.listdir(out_dir))
    assert not {"eval_mismatched.tf_record", "predict_mismatched.tf_record",
                "test_results_mismatched.tsv"} & files
    for split in ("dev_mismatched", "test_mismatched"):
        assert f"{mnli / split}.tsv: absent from --data_dir; skipping the {split} set" in (
            caplog.text)

    write_mnli(mnli / "dev_mismatched.tsv", rows[:5], "dev_mismatched")
    write_mnli(mnli / "test_mismatched.tsv", rows[:3], "test_mismatched")
    out = run(config, mnli_options, do_eval=True, do_predict=True)
    assert {"eval_accuracy_mismatched", "eval_loss_mismatched"} <= set(out["eval_results"])
    assert out["test_results_mismatched"] == str(out_dir / "test_results_mismatched.tsv")
    assert len(read_lines(out["test_results_mismatched"])) == 3
    assert len(read_lines(out["test_results"])) == 8


def test_bad_flags_are_clear_errors(setup):
    tmp_path, config, options = setup
    with pytest.raises(ClassifierError, match="At least one of `do_train`, `do_eval` or "
                                              "`do_predict' must be True"):
        run(config, options())
    with pytest.raises(ClassifierDataError, match="--task_name='glue': unknown task; expected "
                                                  "one of cola, mnli, mrpc, xnli"):
        run(config, options(task_name="glue"), do_train=True)
    with pytest.raises(TrainingError, match="Cannot use sequence length 20 because the BERT "
                                            "model was only trained up to sequence length 16"):
        run(config, options(max_seq_length=20), do_train=True)
    with pytest.raises(ClassifierError, match="uncased_L-12_H-768_A-12` seems to be a "
                                              "lowercased model"):
        run(config, options(do_lower_case=False,
                            init_checkpoint="/m/uncased_L-12_H-768_A-12/bert_model.ckpt"),
            do_train=True)


def test_bad_files_name_the_file_and_line(setup):
    tmp_path, config, options = setup
    data = tmp_path / "data"
    (data / "test.tsv").unlink()
    with pytest.raises(ClassifierDataError, match=r"test\.tsv or test\.csv"):
        run(config, options(), do_predict=True)
    write_split(data / "dev.tsv", [("the cat", "sat", "yes"), ("a dog", "ran")])
    with pytest.raises(ClassifierDataError, match=r"dev\.tsv line 3: expected at least 3 columns"):
        run(config, options(), do_eval=True)
    write_split(data / "dev.tsv", [("the cat", "sat", "perhaps")])
    with pytest.raises(ClassifierDataError,
                       match=r"dev\.tsv line 2: label 'perhaps' is not one of the labels"):
        run(config, options(), do_eval=True)
    (data / "train.tsv").unlink()
    with pytest.raises(ClassifierDataError, match=r"train\.tsv or train\.csv"):
        run(config, options(), do_train=True)


@pytest.mark.slow  # 13-23 s on 2 shared cores: several script runs
def test_checkpoints_of_another_shape_or_task_are_refused(setup):
    tmp_path, config, options = setup
    from bert_tf.tasks.classification import ClassificationTask

    # An init_checkpoint of another architecture.
    other = BertConfig.from_dict(tiny_config_dict(vocab_size=config.vocab_size, hidden_size=8,
                                                  max_position_embeddings=16))
    prefix = save_original_checkpoint(
        ClassificationTask("custom", ["a", "b"], 12).build_model(other),
        str(tmp_path / "other" / "bert_model.ckpt"))
    with pytest.raises(TrainingError, match=r"--init_checkpoint: checkpoint .*bert_model\.ckpt "
                                            r"does not fit the model"):
        run(config, options(init_checkpoint=prefix), do_train=True)
    # An output_dir whose checkpoints have another label set.
    run(config, options(), do_train=True)
    write_split(tmp_path / "data" / "train.tsv",
                [("the cat", "sat", "yes"), ("a dog", "ran", "no")] * 4)
    with pytest.raises(TrainingError, match=r"holds checkpoints of another task .*\"maybe\""):
        run(config, options(), do_train=True)


@pytest.mark.slow  # 13-23 s on 2 shared cores: several script runs
def test_script_prints_one_line_errors(setup):
    tmp_path, config, options = setup
    config.to_json_file(str(tmp_path / "bert_config.json"))
    proc = subprocess.run(
        [sys.executable, "run_classifier.py", "--task_name=nope", f"--data_dir={tmp_path}/data",
         f"--vocab_file={tmp_path}/vocab.txt", f"--bert_config_file={tmp_path}/bert_config.json",
         f"--output_dir={tmp_path}/out", "--do_train", "--max_seq_length=12"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO))
    assert proc.returncode == 1
    assert "run_classifier.py: error: --task_name='nope': unknown task" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_training_file_sorted_by_label_warns_under_a_small_shuffle_buffer(caplog):
    sorted_labels = ["0"] * 300 + ["1"] * 300
    mixed = list(np.random.RandomState(0).permutation(sorted_labels))
    with caplog.at_level("WARNING"):
        assert warn_if_labels_in_runs(sorted_labels, 100, "train.tsv")
    assert "train.tsv: the training labels come in long runs (1 label changes" in caplog.text
    assert "--shuffle_buffer_size=-1" in caplog.text
    assert not warn_if_labels_in_runs(mixed, 100, "train.tsv")
    # Grouped in runs of 20 (a source's examples together, say): still far from random.
    grouped = [str(i // 20 % 2) for i in range(600)]
    assert warn_if_labels_in_runs(grouped, 100, "train.tsv")
    # A permutation per epoch or a buffer as large as the file mixes any order; regression
    # scores (all distinct) and tiny files say nothing.
    assert not warn_if_labels_in_runs(sorted_labels, -1, "train.tsv")
    assert not warn_if_labels_in_runs(sorted_labels, 300, "train.tsv")
    assert not warn_if_labels_in_runs([i / 600 for i in range(600)], 100, "train.tsv")
    assert not warn_if_labels_in_runs(["0"] * 20 + ["1"] * 20, 10, "train.tsv")


# -- ALBERT: Google's checkpoint layout, the SentencePiece model as --vocab_file ----------------

@pytest.mark.slow  # ~30 s on 2 shared cores: a script run (train, eval, predict) and a predict
def test_albert_checkpoint_and_sentencepiece_model(tmp_path):
    """run_classifier.py with --bert_config_file=albert_config.json (Google's, no model_type),
    --vocab_file=<the SentencePiece model> and --init_checkpoint=model.ckpt-best: trains from
    the checkpoint's encoder, evaluates and predicts; the records hold the family tokenizer's
    pieces (preprocess_text, then SentencePiece) between its [CLS] and [SEP]; predictions with
    batches padded to max_seq_length equal those of cut batches in length order."""
    import tensorflow as tf

    from albert_fixtures import SPM_MODEL, WORDS, write_checkpoint

    from bert_tf import families
    from bert_tf.albert.tokenization import AlbertTokenizer

    config_file, prefix = write_checkpoint(tmp_path / "albert_base")
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.RandomState(1)

    def rows(n):
        return [(" ".join(rng.choice(WORDS, rng.randint(1, 9))), " ".join(rng.choice(WORDS, 3)),
                 ["no", "yes"][i % 2]) for i in range(n)]

    write_split(data / "train.tsv", rows(8))
    write_split(data / "dev.tsv", rows(5))
    test_rows = [r[:2] for r in rows(7)]
    write_split(data / "test.tsv", test_rows, header="text_a\ttext_b")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "run_classifier.py", "--task_name=custom", f"--data_dir={data}",
         f"--bert_config_file={config_file}", f"--vocab_file={SPM_MODEL}",
         f"--init_checkpoint={prefix}", f"--output_dir={out}", "--do_train", "--do_eval",
         "--do_predict", "--max_seq_length=32", "--train_batch_size=4", "--eval_batch_size=2",
         "--predict_batch_size=3", "--num_train_epochs=1", "--learning_rate=1e-3",
         "--padding_width=4"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Every variable of the checkpoint (the encoder) loaded; only the head is new.
    assert f"loaded {len(tf.train.list_variables(prefix))} variables" in proc.stderr
    assert "lacks output_weights, output_bias:" in proc.stderr
    assert read_lines(out / "eval_results.txt")[2] == "global_step = 2"
    reader = tf.train.load_checkpoint(str(out / "model.ckpt-2"))
    names = set(reader.get_variable_to_shape_map())
    assert {"bert/encoder/transformer/group_0/inner_group_1/ffn_1/intermediate/dense/kernel",
            "bert/encoder/embedding_hidden_mapping_in/kernel/adam_m",
            "bert/pooler/dense/kernel/adam_v", "output_weights", "output_bias"} <= names
    # The predict records: [CLS] a [SEP] b [SEP] of the family tokenizer's pieces.
    tokenizer = AlbertTokenizer(SPM_MODEL, True)
    record = next(iter(tf.data.TFRecordDataset(str(out / "predict.tf_record"))))
    ids = tf.io.parse_single_example(record, {"input_ids": tf.io.FixedLenFeature([32], tf.int64)})
    a, b = (tokenizer.tokenize(t) for t in test_rows[0])
    assert ids["input_ids"].numpy().tolist()[:len(a) + len(b) + 3] == \
        tokenizer.convert_tokens_to_ids(["[CLS]", *a, "[SEP]", *b, "[SEP]"])
    # Predictions of the trained checkpoint, batches padded to max_seq_length.
    options = ClassifierOptions(
        data_dir=str(data), task_name="custom", vocab_file=SPM_MODEL,
        output_dir=str(tmp_path / "padded"), init_checkpoint=str(out / "model.ckpt-2"),
        max_seq_length=32, predict_batch_size=3, dynamic_padding=False)
    padded = run(families.read_config(config_file), options, do_predict=True)
    lengths = [len(tokenizer.tokenize(x)) + len(tokenizer.tokenize(y)) + 3 for x, y in test_rows]
    assert len({(n + 3) // 4 for n in lengths}) > 1  # cut batches of several lengths
    cut = [list(map(float, line.split("\t"))) for line in read_lines(out / "test_results.tsv")]
    full = [list(map(float, line.split("\t"))) for line in read_lines(padded["test_results"])]
    assert len(cut) == len(test_rows)
    np.testing.assert_allclose(cut, full, rtol=0, atol=1e-6)


def test_albert_fine_tuning_clips_word_and_token_type_gradients_by_rows(tmp_path):
    """As the original's fine-tuning (tf.nn.embedding_lookup for both tables off TPU), the
    trainer counts ALBERT's word and token-type embedding gradients row by row in the global
    norm: one row per token occurrence, more than the norm of the summed gradient when rows
    repeat (every [CLS], every segment-0 token)."""
    import tensorflow as tf

    from albert_fixtures import write_checkpoint

    from bert_tf import families
    from bert_tf.tasks.classification import ClassificationTask
    from bert_tf.training.trainer import Trainer, TrainerOptions

    config_file, _ = write_checkpoint(tmp_path / "albert_base")
    trainer = Trainer(families.read_config(config_file),
                      ClassificationTask("custom", ["a", "b"], 8, dropout_rate=0.0),
                      TrainerOptions(output_dir=str(tmp_path / "out")))
    tables = ("bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings")
    assert trainer.row_norm_variables == tables
    features = {"input_ids": tf.constant([[2, 5, 6, 3, 0, 0], [2, 7, 3, 7, 9, 3]]),
                "input_mask": tf.constant([[1, 1, 1, 1, 0, 0], [1] * 6]),
                "segment_ids": tf.constant([[0] * 6, [0, 0, 0, 1, 1, 1]]),
                "label_ids": tf.constant([0, 1]), "is_real_example": tf.constant([1, 1])}
    _, grads, rows_squared = trainer._micro_batch_gradients_and_sparse_norm(
        features, tf.constant([2.0]))
    sparse = dict(zip(trainer.variable_names, trainer._sparse_gradients))
    assert [name for name, flag in sparse.items() if flag] == list(tables)
    # The same loss by hand: the tables' gradients as IndexedSlices, a row per occurrence.
    variables = [trainer.train_variables[trainer.variable_names.index(n)] for n in tables]
    with tf.GradientTape() as tape:
        outputs = trainer.model(features, training=True)
        loss = trainer.task.compute_loss(outputs, features, tf.constant([2.0]))["total_loss"]
    by_rows = tape.gradient(loss, variables)
    assert all(isinstance(g, tf.IndexedSlices) for g in by_rows)
    expected = sum(float(tf.reduce_sum(tf.square(g.values))) for g in by_rows)
    assert float(rows_squared) == pytest.approx(expected, rel=1e-5)
    summed = [g for name, g in zip(trainer.variable_names, grads) if name in tables]
    assert expected > sum(float(tf.reduce_sum(tf.square(g))) for g in summed) * (1 + 1e-3)
