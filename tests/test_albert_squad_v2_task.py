"""bert_tf.albert.squad_v2_task.SquadV2Task on run_squad_v2's trainer (AlbertFineTuningTrainer)
against google-research/albert's v2_model_fn_builder, recorded by
tests/data/albert_squad_v2/make_expected.py: 3 AdamW steps from the same checkpoint on the
original's training records in file order (losses, learning rates, every weight and Adam
moment after them, the checkpoint's variables), with batches cut to their longest window
(dynamic padding, the default) and padded (as the original); the same steps and the
prediction's beam with --use_xla; the loss on fixed outputs; the records' features."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.finetuning import AlbertFineTuningTrainer
from bert_tf.albert.squad_v2_task import PREDICTION_KEYS, SquadV2Task
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.training.trainer import TrainerOptions
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
    """(history of the steps, last checkpoint, trainer) of the 3 steps from init.ckpt."""
    trainer = AlbertFineTuningTrainer(config(), task(), options(output_dir, **overrides))
    history = []
    prefix = trainer.train([str(DATA / "train.tf_record")],
                           step_callback=lambda step, values: history.append((step, values)))
    return history, prefix, trainer


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """f(**overrides) -> `train`'s result, each setting trained once per module (the XLA test
    compares with the conformance test's run)."""
    runs = {}

    def run(**overrides):
        key = tuple(sorted(overrides.items()))
        if key not in runs:
            runs[key] = train(tmp_path_factory.mktemp("run"), **overrides)
        return runs[key]

    return run


@pytest.mark.slow  # two 3-step runs of a tiny model
@pytest.mark.parametrize("dynamic_padding", [True, False])
def test_three_steps_match_the_original(dynamic_padding, trained):
    history, prefix, _ = trained(dynamic_padding=dynamic_padding)
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


def predict(trainer):
    """{key: array over the predict records in file order} of PREDICTION_KEYS."""
    batches = list(trainer.predict([str(DATA / "predict.tf_record")], 8))
    out = {key: np.concatenate([b[key] for b in batches]) for key in PREDICTION_KEYS}
    real = out["unique_ids"] != 0  # the last batch's padding
    return {key: value[real] for key, value in out.items()}


@pytest.mark.slow  # XLA compiles the training step and the prediction
def test_xla_gives_the_same_steps_and_predictions(trained):
    """--use_xla: the forward and backward passes (ALBERT's shared block run by both layers,
    the row-by-row norms of the gathered embedding tables' gradients), each variable's update
    and the prediction (the beam's top-k under jit_compile) compiled by XLA; batches padded to
    --max_seq_length, so that each is compiled once (cut batches compile once per length: the
    trainer's, as for BERT).

    Against the op-by-op run, with the bounds of BERT's XLA test (tests/test_training_xla.py:
    the same learning rate, 1e-3, and number of steps, 3): the losses within 1e-4 relative,
    every weight within 1e-4 (XLA only reorders and fuses float32 arithmetic; each Adam step
    moves a weight by at most lr * adam_step_bound, 3.2e-3 at the first step, so 1e-4 leaves
    the updates a few percent of their size to differ by), but the variables whose gradient is
    zero in real arithmetic (ZERO_GRADIENT: their moves are Adam's rounding noise), which stay
    within Adam's largest move of the start; and, as the op-by-op run, every weight and Adam
    moment within the bound of the comparison with the original (`assert_adam_steps_match`).
    The beam of the same weights predicted both ways: the same indexes, the log-probabilities
    and cls_logits within 1e-4 relative and 1e-5 absolute (BERT's eval sums' bounds)."""
    plain_history, plain_prefix, plain = trained(dynamic_padding=False)
    xla_history, xla_prefix, xla = trained(dynamic_padding=False, use_xla=True)
    assert xla.optimizer.jit_compile and not plain.optimizer.jit_compile
    for (step, want), (_, got) in zip(plain_history, xla_history, strict=True):
        for key in ("total_loss", "grad_norm"):
            assert got[key] == pytest.approx(want[key], rel=1e-4), (step, key)
    want, got = read_checkpoint(plain_prefix), read_checkpoint(xla_prefix)
    assert got["global_step"] == want["global_step"] == STEPS
    start = read_checkpoint(DATA / "init.ckpt")
    bounded = [n for n in start if any(part in n for part in ZERO_GRADIENT)]
    compared = [n for n in start if n not in bounded]
    for name in compared:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-4, err_msg=name)
    # training moved most weights compared by more than the bound
    assert sum(not np.allclose(got[n], start[n], rtol=0, atol=1e-4) for n in compared) > \
        len(compared) // 2
    # the bounded ones within Adam's largest move of the start, the rest as the original's
    assert_adam_steps_match(got, dict(np.load(DATA / "after_3_steps.npz")), start,
                            EXPECTED["steps"], bounded)

    load_original_checkpoint(xla.model, plain_prefix)
    want, got = predict(plain), predict(xla)
    for key in ("unique_ids", "start_top_index", "end_top_index"):
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    for key in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5, err_msg=key)


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
