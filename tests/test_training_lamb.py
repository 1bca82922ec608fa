"""LAMB against a NumPy transcription of You et al. (2019), Algorithm 2 with decoupled weight
decay and BERT's exclusions; checkpoint slot names. ALBERT's LAMB (`AlbertLamb`) and
AdamWeightDecay against google-research/albert's optimizers, recorded by
tests/data/albert_optimizer/make_expected.py."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.lamb import AlbertLamb, Lamb
from bert_tf.training.optimizer import AdamWeightDecay

ALBERT = json.loads((Path(__file__).resolve().parent / "data" / "albert_optimizer"
                     / "optimizer.json").read_text())
UNIT_ROUNDOFF = 2.0 ** -24

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


def albert_bounds(kind, recorded):
    """Per step, {name: per-element bound} of how far a float32 implementation of the same
    arithmetic may be from the original's values (its `<name>`, `<name>/adam_m`, `/adam_v`).

    Each step adds to a weight's bound the rounding of its update: a few ulps (16 u) of the
    weight and of the step it took, and for LAMB's trust ratio the two norms' sums over the n
    elements (n u more on the step). A moment rounds by a few ulps of the terms it adds: 4 u of
    (1 - beta) |g| or g**2 per step, on top of the earlier steps' bounds (which the betas
    shrink; not shrunk here)."""
    names = list(recorded["init"])
    before = {n: np.asarray(v) for n, v in recorded["init"].items()}
    bounds = {n: np.zeros_like(v) for n, v in before.items()}
    bounds.update({f"{n}/{slot}": np.zeros_like(before[n]) for n in names
                   for slot in ("adam_m", "adam_v")})
    out = []
    for step, want in zip(recorded["steps"], recorded[kind]):
        for n in names:
            after = np.asarray(want[n])
            ulps_of_step = 16 + (after.size if kind == "lamb" else 0)
            bounds[n] = bounds[n] + UNIT_ROUNDOFF * (
                16 * np.abs(after) + ulps_of_step * np.abs(after - before[n]))
            g = np.abs(np.asarray(step["grads"][n]))
            bounds[f"{n}/adam_m"] = bounds[f"{n}/adam_m"] + 4 * UNIT_ROUNDOFF * 0.1 * g
            bounds[f"{n}/adam_v"] = bounds[f"{n}/adam_v"] + 4 * UNIT_ROUNDOFF * 0.001 * g * g
            before[n] = after
        out.append(dict(bounds))
    return out


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("kind, optimizer_class", [("lamb", AlbertLamb),
                                                   ("adamw", AdamWeightDecay)])
def test_albert_optimizers_match_the_originals(kind, optimizer_class, jit_compile):
    """Three steps of fed gradients on variables named to hit every exclusion (LayerNorm,
    layer_norm, bias: no decay, no trust ratio), one starting at zero and one with zero
    gradients: every weight and slot within the rounding bounds of the original's."""
    names = list(ALBERT["init"])
    variables = {n: tf.Variable(np.asarray(v, np.float32)) for n, v in ALBERT["init"].items()}
    opt = optimizer_class(jit_compile=jit_compile)  # create_optimizer's arguments: the defaults
    opt.build(variables)
    assert opt.slot_names == ("adam_m", "adam_v")
    for t, (step, want, bound) in enumerate(zip(ALBERT["steps"], ALBERT[kind],
                                                albert_bounds(kind, ALBERT)), start=1):
        opt.apply_gradients([tf.constant(np.asarray(step["grads"][n], np.float32))
                             for n in names], tf.constant(step["learning_rate"], tf.float32),
                            step=tf.constant(t, tf.int64))
        state = opt.get_state()
        got = {n: variables[n].numpy() for n in names}
        got.update({f"{n}/{slot}": state[slot][n] for slot in state for n in names})
        assert sorted(got) == sorted(want)  # the original's graph: weights and adam_m/adam_v
        for key, value in got.items():
            error = np.abs(value - np.asarray(want[key], np.float32))
            assert np.all(error <= bound[key]), (kind, t, key, np.max(error - bound[key]))
    # LAMB's trust ratio acted: the zero-gradient variable moved by lr * w (ratio 1 / 0.01),
    # 100 times AdamW's decay step; a variable starting at zero took an Adam-sized step.
    name = "cls/seq_relationship/output_weights"
    first = np.asarray(ALBERT[kind][0][name])
    w0 = np.asarray(ALBERT["init"][name])
    factor = 1.0 if kind == "lamb" else 0.01
    np.testing.assert_allclose(first, w0 - ALBERT["steps"][0]["learning_rate"] * factor * w0,
                               rtol=1e-6)


def test_the_papers_lamb_is_not_albert_s():
    """The bias-corrected LAMB (BERT's --optimizer=lamb) moves the excluded variables ~3x
    further at step 1 (m_hat / sqrt(v_hat) = sign(g), not 0.1 g / sqrt(0.001 g**2)) and names
    its slots lamb_m / lamb_v."""
    name = "cls/predictions/output_bias"
    variables = {name: tf.Variable(np.asarray(ALBERT["init"][name], np.float32))}
    opt = Lamb()
    opt.build(variables)
    step = ALBERT["steps"][0]
    opt.apply_gradients([tf.constant(np.asarray(step["grads"][name], np.float32))],
                        tf.constant(step["learning_rate"], tf.float32), step=tf.constant(1))
    w0 = np.asarray(ALBERT["init"][name])
    ours = np.abs(variables[name].numpy() - w0)
    original = np.abs(np.asarray(ALBERT["lamb"][0][name]) - w0)
    # sqrt(1000) * 0.1 = 3.16, less where epsilon is not negligible next to 0.03 |g|
    assert np.all((original / ours > 3.1) & (original / ours < 3.17)), original / ours
    assert sorted(opt.get_state()) == ["lamb_m", "lamb_v"]
