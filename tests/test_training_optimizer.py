"""AdamWeightDecay and the learning-rate schedule against a NumPy transcription of the
original's update rule (REFERENCE.md §5)."""

import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.optimizer import AdamWeightDecay, clip_by_global_norm
from bert_tf.training.schedule import WarmupLinearDecay


def numpy_lr(step, init_lr, total, warmup):
    lr = np.float32(init_lr) * (np.float32(1.0) - np.float32(min(step, total)) / np.float32(total))
    if warmup and step < warmup:
        lr = np.float32(init_lr) * (np.float32(step) / np.float32(warmup))
    return lr


@pytest.mark.parametrize("warmup", [0, 4])
def test_schedule_warmup_then_linear_decay(warmup):
    schedule = WarmupLinearDecay(2e-3, num_train_steps=10, num_warmup_steps=warmup)
    for step in range(14):
        assert float(schedule(step)) == pytest.approx(float(numpy_lr(step, 2e-3, 10, warmup)),
                                                      rel=1e-6, abs=1e-12)
    assert float(schedule(10)) == 0.0 and float(schedule(13)) == 0.0  # clamped at the end
    if warmup:
        assert float(schedule(0)) == 0.0
        assert float(schedule(2)) == pytest.approx(1e-3)


def test_schedule_rejects_bad_settings():
    with pytest.raises(ValueError, match="num_train_steps"):
        WarmupLinearDecay(1e-3, 0)
    with pytest.raises(ValueError, match="num_warmup_steps"):
        WarmupLinearDecay(1e-3, 10, -1)


def test_decay_exclusion_uses_the_original_names():
    opt = AdamWeightDecay()
    assert opt.do_use_weight_decay("bert/embeddings/word_embeddings")
    assert opt.do_use_weight_decay("cls/seq_relationship/output_weights")
    assert opt.do_use_weight_decay("bert/encoder/layer_0/attention/self/query/kernel")
    assert not opt.do_use_weight_decay("cls/predictions/output_bias")
    assert not opt.do_use_weight_decay("bert/encoder/layer_0/output/LayerNorm/gamma")
    assert not opt.do_use_weight_decay("bert/pooler/dense/bias")
    assert not opt.do_use_weight_decay("some/layer_norm/beta")
    assert not AdamWeightDecay(weight_decay_rate=0.0).do_use_weight_decay("x/kernel")


@pytest.mark.parametrize("jit_compile", [False, True])
def test_update_matches_numpy_over_several_steps_with_clipping(jit_compile):
    rng = np.random.RandomState(0)
    names = ["dense/kernel", "dense/bias", "LayerNorm/gamma"]
    init = {n: rng.randn(*s).astype(np.float32)
            for n, s in zip(names, [(3, 4), (4,), (4,)])}
    variables = {n: tf.Variable(v) for n, v in init.items()}
    opt = AdamWeightDecay(jit_compile=jit_compile)
    opt.build(variables)
    schedule = WarmupLinearDecay(1e-2, 5, 1)

    params = {n: v.copy() for n, v in init.items()}
    m = {n: np.zeros_like(v) for n, v in init.items()}
    v_ = {n: np.zeros_like(v) for n, v in init.items()}
    for step in range(4):
        # Large gradients so clipping at 1.0 is active.
        grads = {n: (rng.randn(*p.shape) * 3).astype(np.float32) for n, p in params.items()}
        norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads.values()))
        assert norm > 1.0
        clipped_np = {n: g * np.float32(1.0 / norm) for n, g in grads.items()}
        lr = numpy_lr(step, 1e-2, 5, 1)
        for n in names:
            g = clipped_np[n]
            m[n] = np.float32(0.9) * m[n] + np.float32(0.1) * g
            v_[n] = np.float32(0.999) * v_[n] + np.float32(0.001) * g * g
            update = m[n] / (np.sqrt(v_[n]) + np.float32(1e-6))
            if not re.search("LayerNorm|layer_norm|bias", n):
                update = update + np.float32(0.01) * params[n]
            params[n] = params[n] - lr * update
        clipped, tf_norm = clip_by_global_norm([tf.constant(grads[n]) for n in names], 1.0)
        assert float(tf_norm) == pytest.approx(norm, rel=1e-5)
        opt.apply_gradients(clipped, schedule(step))

    state = opt.get_state()
    for n in names:
        np.testing.assert_allclose(variables[n].numpy(), params[n], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(state["adam_m"][n], m[n], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(state["adam_v"][n], v_[n], rtol=1e-5, atol=1e-10)


def test_state_round_trip_and_errors():
    variables = {"a/kernel": tf.Variable(np.ones((2, 2), np.float32))}
    opt = AdamWeightDecay()
    opt.build(variables)
    state = {"adam_m": {"a/kernel": np.full((2, 2), 3.0)},
             "adam_v": {"a/kernel": np.full((2, 2), 4.0)}}
    opt.set_state(state)
    assert opt.get_state()["adam_v"]["a/kernel"][0, 0] == 4.0
    with pytest.raises(ValueError, match=r"a/kernel/adam_v"):
        opt.set_state({"adam_m": state["adam_m"]}, source="ckpt")
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        opt.set_state({"adam_m": {"a/kernel": np.zeros(3)}, "adam_v": state["adam_v"]})
    with pytest.raises(RuntimeError, match="build"):
        AdamWeightDecay().apply_gradients([tf.zeros((2, 2))], 0.1)
