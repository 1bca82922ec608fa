"""bert_tf.albert.squad_v2_task.SquadV2Task on the trainer against google-research/albert's
v2_model_fn_builder, recorded by tests/data/albert_squad_v2/make_expected.py: 3 AdamW steps
from the same checkpoint on the original's training records in file order (losses, learning
rates, every weight and Adam moment after them, the checkpoint's variables), with batches cut
to their longest window (dynamic padding, the default) and padded (as the original); the loss
on fixed outputs; the records' features."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.squad_v2_task import SquadV2Task
from bert_tf.training.trainer import Trainer, TrainerOptions
from test_training_helpers import (assert_adam_steps_match, assert_checkpoint_variables,
                                   read_checkpoint)

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v2"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FLAGS = EXPECTED["flags"]
STEPS = len(EXPECTED["steps"])
# Variables whose gradient is zero in real arithmetic: the key biases (a softmax ignores a
# constant added to a query's scores), and the head's constants added to every position's start
# or end logit (start_logits/dense/bias, end_logits/dense_1/bias, end_logits/LayerNorm/beta
# through dense_1): the softmaxes over positions ignore them. Adam turns their rounding noise
# into moves; those are bounded instead of compared.
ZERO_GRADIENT = ("/key/bias", "start_logits/dense/bias", "end_logits/dense_1/bias",
                 "end_logits/LayerNorm/beta")


def config():
    return AlbertConfig.from_json_file(DATA / "albert_config.json")


def task():
    return SquadV2Task(FLAGS["max_seq_length"], FLAGS["start_n_top"], FLAGS["end_n_top"],
                       FLAGS["dropout_prob"])


def options(output_dir, **overrides):
    values = dict(output_dir=str(output_dir), init_checkpoint=str(DATA / "init.ckpt"),
                  train_batch_size=FLAGS["train_batch_size"],
                  learning_rate=FLAGS["learning_rate"],
                  num_train_steps=EXPECTED["num_train_steps"], num_warmup_steps=0,
                  save_checkpoints_steps=STEPS, iterations_per_loop=1, shuffle_buffer_size=0,
                  keep_checkpoint_max=0)
    values.update(overrides)
    return TrainerOptions(**values)


def train(output_dir, **overrides):
    trainer = Trainer(config(), task(), options(output_dir, **overrides))
    history = []
    prefix = trainer.train([str(DATA / "train.tf_record")],
                           step_callback=lambda step, values: history.append((step, values)))
    return history, prefix


@pytest.mark.slow  # two 3-step runs of a tiny model
@pytest.mark.parametrize("dynamic_padding", [True, False])
def test_three_steps_match_the_original(dynamic_padding, tmp_path):
    history, prefix = train(tmp_path, dynamic_padding=dynamic_padding)
    assert len(history) == STEPS
    for (step, ours), want in zip(history, EXPECTED["steps"], strict=True):
        assert step == want["step"]
        assert ours["total_loss"] == pytest.approx(want["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(want["learning_rate"], rel=1e-6), step
    assert_checkpoint_variables(prefix, EXPECTED["variables"])
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / "after_3_steps.npz"))
    assert int(ours["global_step"]) == int(original["global_step"]) == STEPS
    start = read_checkpoint(DATA / "init.ckpt")
    bounded = [n for n in start if any(part in n for part in ZERO_GRADIENT)]
    assert len(bounded) == 1 + 3  # the key bias of the one block both layers share; the head's
    assert_adam_steps_match(ours, original, start, EXPECTED["steps"], bounded)


def test_loss_is_the_originals_formula():
    """(start + end) / 2 + 0.5 * mean sigmoid cross-entropy, each over the global batch."""
    rng = np.random.default_rng(3)
    log_probs = {k: tf.nn.log_softmax(tf.constant(rng.normal(size=(3, 6)), tf.float32))
                 for k in ("start_log_probs", "end_log_probs")}
    outputs = dict(log_probs, cls_logits=tf.constant([2.0, -1.0, 0.5]))
    features = {"start_positions": tf.constant([0, 3, 5]), "end_positions": tf.constant([0, 4, 5]),
                "is_impossible": tf.constant([1, 0, 0])}
    losses = task().compute_loss(outputs, features, tf.constant([3.0]))
    start = -np.mean([log_probs["start_log_probs"][i, p] for i, p in enumerate([0, 3, 5])])
    end = -np.mean([log_probs["end_log_probs"][i, p] for i, p in enumerate([0, 4, 5])])
    x, z = np.array([2.0, -1.0, 0.5]), np.array([1.0, 0.0, 0.0])
    cls = np.mean(np.log1p(np.exp(-x)) + (1 - z) * x)
    assert float(losses["start_loss"]) == pytest.approx(start, rel=1e-6)
    assert float(losses["end_loss"]) == pytest.approx(end, rel=1e-6)
    assert float(losses["cls_loss"]) == pytest.approx(cls, rel=1e-6)
    assert float(losses["total_loss"]) == pytest.approx((start + end) / 2 + cls / 2, rel=1e-6)
    # shares of a global batch of 6 sum to the whole batch's loss
    half = task().compute_loss(outputs, features, tf.constant([6.0]))
    assert float(half["total_loss"]) * 2 == pytest.approx(float(losses["total_loss"]), rel=1e-6)


def test_feature_spec_reads_the_originals_records():
    spec = task().feature_spec(is_training=True)
    (batch,) = tf.data.TFRecordDataset(str(DATA / "train.tf_record")).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(1000)
    assert len(batch["unique_ids"]) == EXPECTED["counts"]["train_features"]
    assert set(batch) == {"unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask",
                          "start_positions", "end_positions", "is_impossible"}
    # impossible windows (and windows without the answer) point at [CLS]
    impossible = batch["is_impossible"].numpy() == 1
    assert impossible.any() and (~impossible).any()
    assert np.all(batch["start_positions"].numpy()[impossible] == 0)
    spec = task().feature_spec(is_training=False)
    (batch,) = tf.data.TFRecordDataset(str(DATA / "predict.tf_record")).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(1000)
    assert len(batch["unique_ids"]) == EXPECTED["counts"]["predict_features"]
