"""--use_xla: the jit-compiled training and eval passes compute what the op-by-op ones do."""

import numpy as np
import pytest
import tensorflow as tf

from rounding_bounds import ZeroGradientBounds
from test_training_accumulation import FixedStream, make_batch, trainer, weights
from test_training_helpers import key_bias_noise, largest_noise, trainer_state


def train_alike(trainers, batch, steps, atol):
    """Trains each of `trainers` (the same initial weights) `steps` steps on `batch`: their
    weights equal those of the first to `atol`, training moved them, and the key biases
    (gradient 0 in real arithmetic: rounding noise that Adam amplifies) and their moments are
    within the bounds of tests/rounding_bounds.py. Returns the training functions' values."""
    starts = [trainer_state(t) for t in trainers]
    noise = [key_bias_noise(trainers[0].model, trainers[0].task, [batch] * steps)]
    values = [t.make_train_function(FixedStream(batch))(tf.constant(steps)) for t in trainers]
    noise += [key_bias_noise(t.model, t.task, [batch] * steps) for t in trainers]
    bounds = ZeroGradientBounds(largest_noise(*noise), values[0]["learning_rate"].numpy(),
                                starts[0])
    want = weights(trainers[0])
    for other, start in zip(trainers[1:], starts[1:]):
        got = weights(other)
        for name, value in want.items():
            if name not in bounds.names():
                np.testing.assert_allclose(got[name], value, rtol=0, atol=atol, err_msg=name)
            np.testing.assert_array_equal(start[name], starts[0][name])
        name = "bert/encoder/layer_1/output/dense/kernel"
        assert not np.allclose(got[name], start[name])
        bounds.check(trainer_state(trainers[0]), trainer_state(other))
    return values


@pytest.mark.slow
def test_xla_gives_the_same_weights_and_eval_metrics(tmp_path):
    batch = make_batch(batch=8)
    plain = trainer(tmp_path, train_batch_size=8)
    xla = trainer(tmp_path, train_batch_size=8, use_xla=True)
    values = train_alike([plain, xla], batch, 3, atol=1e-4)
    for key in ("total_loss", "grad_norm"):
        np.testing.assert_allclose(values[1][key].numpy(), values[0][key].numpy(), rtol=1e-4)
    sums = [t.make_eval_function(FixedStream(batch))() for t in (plain, xla)]
    for key in sums[0]:
        np.testing.assert_allclose(sums[1][key].numpy(), sums[0][key].numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=key)


@pytest.mark.slow  # 20 s on 2 shared cores: two trainers, one XLA-compiled update
def test_fused_optimizer_gives_the_same_weights(tmp_path):
    batch = make_batch(batch=8)
    plain = trainer(tmp_path, train_batch_size=8)
    fused = trainer(tmp_path, train_batch_size=8, fused_optimizer=True)
    assert fused.optimizer.jit_compile and not plain.optimizer.jit_compile
    assert trainer(tmp_path, train_batch_size=8, use_xla=True).optimizer.jit_compile
    train_alike([plain, fused], batch, 3, atol=1e-6)


@pytest.mark.slow
def test_xla_composes_with_bf16_lamb_and_accumulation(tmp_path):
    batch = make_batch(batch=8)
    t = trainer(tmp_path, train_batch_size=8, use_xla=True, mixed_precision="bf16",
                optimizer="lamb", gradient_accumulation_steps=2)
    reference = trainer(tmp_path, train_batch_size=8, optimizer="lamb")
    got = t.make_train_function(FixedStream(batch))(tf.constant(2))
    want = reference.make_train_function(FixedStream(batch))(tf.constant(2))
    np.testing.assert_allclose(got["total_loss"].numpy(), want["total_loss"].numpy(), atol=5e-2)
    assert t.model.bert.compute_dtype == "bfloat16"
