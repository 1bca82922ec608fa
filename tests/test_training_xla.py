"""--use_xla: the jit-compiled training and eval passes compute what the op-by-op ones do."""

import numpy as np
import pytest
import tensorflow as tf

from test_training_accumulation import FixedStream, make_batch, trainer, weights


def assert_trained_alike(initial, want, got, atol):
    """`got` equals `want` (weights by original name) to `atol`, and training moved them."""
    for name, value in want.items():
        if "/key/bias" in name:
            continue  # gradient 0 in real arithmetic: Adam amplifies rounding noise to +-lr
        np.testing.assert_allclose(got[name], value, rtol=0, atol=atol, err_msg=name)
    name = "bert/encoder/layer_1/output/dense/kernel"
    assert not np.allclose(got[name], initial[name])


@pytest.mark.slow
def test_xla_gives_the_same_weights_and_eval_metrics(tmp_path):
    batch = make_batch(batch=8)
    plain = trainer(tmp_path, train_batch_size=8)
    xla = trainer(tmp_path, train_batch_size=8, use_xla=True)
    initial = weights(plain)
    values = [t.make_train_function(FixedStream(batch))(tf.constant(3)) for t in (plain, xla)]
    for key in ("total_loss", "grad_norm"):
        np.testing.assert_allclose(values[1][key].numpy(), values[0][key].numpy(), rtol=1e-4)
    assert_trained_alike(initial, weights(plain), weights(xla), atol=1e-4)
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
    initial = weights(plain)
    for t in (plain, fused):
        t.make_train_function(FixedStream(batch))(tf.constant(3))
    assert_trained_alike(initial, weights(plain), weights(fused), atol=1e-6)


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
