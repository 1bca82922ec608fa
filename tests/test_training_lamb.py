"""LAMB against a NumPy transcription of You et al. (2019), Algorithm 2 with decoupled weight
decay and BERT's exclusions; checkpoint slot names."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.lamb import Lamb

NAMES = (
    "bert/encoder/layer_0/attention/self/query/kernel",  # decay + trust ratio
    "bert/encoder/layer_0/attention/self/query/bias",    # excluded: neither
    "bert/encoder/layer_0/attention/output/LayerNorm/gamma",  # excluded
    "cls/predictions/transform/dense/kernel",             # starts at zero: ratio 1
)


def numpy_lamb(w, m, v, g, lr, t, excluded, beta_1=0.9, beta_2=0.999, eps=1e-6, wd=0.01):
    m = beta_1 * m + (1 - beta_1) * g
    v = beta_2 * v + (1 - beta_2) * g * g
    m_hat = m / (1 - beta_1 ** t)
    v_hat = v / (1 - beta_2 ** t)
    r = m_hat / (np.sqrt(v_hat) + eps)
    if not excluded:
        r = r + wd * w
        w_norm, r_norm = np.linalg.norm(w), np.linalg.norm(r)
        ratio = w_norm / r_norm if w_norm > 0 and r_norm > 0 else 1.0
    else:
        ratio = 1.0
    return w - lr * ratio * r, m, v


def _setup(seed=0):
    rng = np.random.RandomState(seed)
    shapes = [(4, 3), (3,), (3,), (3, 2)]
    values = [rng.normal(size=s).astype(np.float32) for s in shapes]
    values[3][:] = 0.0
    values[2] = 1.0 + 0.1 * values[2]
    variables = {n: tf.Variable(v) for n, v in zip(NAMES, values)}
    return rng, shapes, values, variables


def test_two_steps_match_the_papers_update():
    rng, shapes, values, variables = _setup()
    opt = Lamb(weight_decay_rate=0.01)
    opt.build(variables)
    expected = [(w.astype(np.float64), np.zeros(w.shape), np.zeros(w.shape)) for w in values]
    for t, lr in ((1, 0.01), (2, 0.005)):
        grads = [rng.normal(scale=10.0 ** -k, size=s).astype(np.float32)
                 for k, s in zip((1, 2, 3, 2), shapes)]
        if t == 1:
            first_grads = grads
        opt.apply_gradients([tf.constant(g) for g in grads], tf.constant(lr),
                            step=tf.constant(t, tf.int64))
        expected = [numpy_lamb(w, m, v, g.astype(np.float64), lr, t, excluded=i in (1, 2))
                    for i, ((w, m, v), g) in enumerate(zip(expected, grads))]
        state = opt.get_state()
        for name, (w, m, v) in zip(NAMES, expected):
            np.testing.assert_allclose(variables[name].numpy(), w, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name} step {t}")
            np.testing.assert_allclose(state["lamb_m"][name], m, rtol=1e-5, atol=1e-9)
            np.testing.assert_allclose(state["lamb_v"][name], v, rtol=1e-5, atol=1e-12)
    # The trust ratio matters here (else the comparison could not tell LAMB from Adam): at
    # step 1, r = sign(g) + wd * w.
    w0 = values[0].astype(np.float64)
    ratio = np.linalg.norm(w0) / np.linalg.norm(np.sign(first_grads[0]) + 0.01 * w0)
    assert abs(ratio - 1.0) > 0.1, ratio
    assert sorted(state) == ["lamb_m", "lamb_v"]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_skipped_step_changes_nothing_and_fused_matches(jit_compile):
    _, shapes, values, variables = _setup(1)
    opt = Lamb(jit_compile=jit_compile)
    opt.build(variables)
    grads = [tf.ones(s) for s in shapes]
    opt.apply_gradients(grads, tf.constant(0.01), step=tf.constant(1, tf.int64),
                        should_apply=tf.constant(False))
    for name, value in zip(NAMES, values):
        np.testing.assert_array_equal(variables[name].numpy(), value)
    assert all(not np.any(s) for slot in opt.get_state().values() for s in slot.values())
    opt.apply_gradients(grads, tf.constant(0.01), step=tf.constant(1, tf.int64),
                        should_apply=tf.constant(True))
    expected = numpy_lamb(values[0].astype(np.float64), 0, 0, np.ones(shapes[0]), 0.01, 1, False)[0]
    np.testing.assert_allclose(variables[NAMES[0]].numpy(), expected, rtol=1e-5)


def test_checkpoint_roundtrip_with_lamb_slot_names(tmp_path):
    from bert_tf import checkpoints
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining import BertPretrainingModel

    from test_training_helpers import TINY_CONFIG

    model = BertPretrainingModel(BertConfig.from_dict(TINY_CONFIG))
    table = checkpoints.original_variable_map(model)
    opt = Lamb()
    opt.build({n: v for n, v in table.items() if v.trainable})
    state = {slot: {n: np.full(v.shape, i + 1.0, np.float32) for n, v in values.items()}
             for i, (slot, values) in enumerate(opt.slot_variables().items())}
    opt.set_state(state)
    prefix = str(tmp_path / "model.ckpt-3")
    checkpoints.save_original_checkpoint(model, prefix, optimizer_state=opt.get_state(),
                                         global_step=3)
    report = checkpoints.load_original_checkpoint(model, prefix)
    assert sorted(report.slots) == ["lamb_m", "lamb_v"] and report.global_step == 3
    name = "bert/embeddings/word_embeddings"
    np.testing.assert_array_equal(report.slots["lamb_v"][name], state["lamb_v"][name])
    again = Lamb()
    again.build({n: v for n, v in table.items() if v.trainable})
    again.set_state(report.slots)
    with pytest.raises(ValueError, match="adam_m.*AdamWeightDecay|AdamWeightDecay"):
        from bert_tf.training.optimizer import AdamWeightDecay
        adam = AdamWeightDecay()
        adam.build({n: v for n, v in table.items() if v.trainable})
        adam.set_state(report.slots, source=prefix)
