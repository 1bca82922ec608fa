import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertPretrainingModel, load_original_checkpoint, pretraining_loss
from conftest import golden_path, tiny_config_dict
from rounding_bounds import RoundingErrorBounds, assert_within_bounds, rounded_ops

LOSS_KEYS = {
    "mlm_loss": "masked_lm_loss",
    "nsp_loss": "next_sentence_loss",
    "total_loss": "total_loss",
    "mlm_example_loss": "masked_lm_example_loss",
    "nsp_example_loss": "next_sentence_example_loss",
}


def _golden_model():
    config = BertConfig.from_json_file(golden_path("model", "bert_config.json"))
    model = BertPretrainingModel(config)
    load_original_checkpoint(model, golden_path("model", "bert_model.ckpt"))
    inputs = dict(np.load(golden_path("model", "inputs.npz")))
    return model, inputs


def _all_outputs(model, inputs, **call_kwargs):
    out = dict(model(inputs, **call_kwargs))
    out["all_encoder_layers"] = tf.stack(out["all_encoder_layers"])
    losses = pretraining_loss(out, inputs)
    out.update({ours: losses[ours] for ours in LOSS_KEYS.values()})
    return {k: np.asarray(v, np.float32) for k, v in out.items()}


def test_matches_the_original_on_golden_inputs():
    model, inputs = _golden_model()
    expected = np.load(golden_path("model", "expected.npz"))
    got = _all_outputs(model, inputs)
    compared = 0
    for key in expected.files:
        if key in inputs:
            continue
        ours = LOSS_KEYS.get(key, key)
        assert got[ours].shape == expected[key].shape, key
        np.testing.assert_allclose(got[ours], expected[key], atol=1e-5, rtol=0, err_msg=key)
        compared += 1
    assert compared == 11


@pytest.mark.slow  # 7 s on 2 shared cores: XLA compiles the whole model
def test_jit_compile_gives_the_same_outputs():
    model, inputs = _golden_model()
    compiled = tf.function(lambda x: model(x), jit_compile=True)
    eager = model(inputs)
    jitted = compiled(inputs)
    for key in ("sequence_output", "pooled_output", "mlm_log_probs", "nsp_log_probs"):
        np.testing.assert_allclose(jitted[key].numpy(), eager[key].numpy(), atol=1e-5, err_msg=key)


POLICY_DTYPES = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


def _golden_model_under(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        model, inputs = _golden_model()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return model, inputs


@pytest.mark.parametrize("policy", sorted(POLICY_DTYPES))
def test_mixed_precision_policies_keep_float32_where_pinned(policy):
    model, inputs = _golden_model_under(policy)
    assert all(w.dtype == "float32" for w in model.weights)
    raw = model(inputs)
    assert raw["mlm_log_probs"].dtype == tf.float32 and raw["nsp_log_probs"].dtype == tf.float32
    assert raw["sequence_output"].dtype == POLICY_DTYPES[policy]
    assert pretraining_loss(raw, inputs)["total_loss"].dtype == tf.float32
    assert np.isfinite(raw["mlm_log_probs"].numpy()).all()
    # What computes in 16 bits: the matmuls, their bias adds and activations (GELU is a call of
    # its fused kernel), nothing else: the bounds of the next tests assume it.
    graph = tf.function(lambda x: pretraining_loss(dict(model(x)), x)).get_concrete_function(
        {k: tf.constant(v) for k, v in inputs.items()}).graph
    computing = {op.type for op in rounded_ops(graph, POLICY_DTYPES[policy])}
    assert computing <= {"Cast", "MatMul", "BatchMatMulV2", "BiasAdd", "Tanh",
                         "PartitionedCall"}, computing


def test_16_bit_matmul_accumulates_in_float32():
    """The premise of tests/rounding_bounds.py: 1 + 1024 * 2**-9 is 3 when the sum runs in
    float32; summed in bfloat16 (ulp(1) = 2**-7) every 2**-9 would be rounded away, giving 1."""
    a = np.full([2, 1025], 2.0 ** -9, np.float32)
    a[:, 0] = 1.0
    for dtype in (tf.bfloat16, tf.float16):
        lhs, rhs = tf.cast(a, dtype), tf.ones([1025, 3], dtype)
        assert tf.matmul(lhs, rhs).numpy().astype(np.float32).tolist() == [[3.0] * 3] * 2
        batched = tf.matmul(tf.stack([lhs, lhs]), tf.stack([rhs, rhs]))  # attention's form
        assert (batched.numpy().astype(np.float32) == 3.0).all()


@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(POLICY_DTYPES))
def test_mixed_precision_outputs_within_rounding_bounds(policy):
    """Every compared value of the mixed model is within the rounding-error bound derived in
    tests/rounding_bounds.py (first-order propagation of each 16-bit rounding, Hoeffding at
    6 standard units) of the float32 model with the same weights. The bound comes from the unit
    roundoff and the model's own sensitivities, not from a run on some CPU. Measured on an AMD
    EPYC without AVX-512 (oneDNN leaves 16-bit ops to Eigen there, so on and off alike): worst
    |error| / bound 0.35 (bfloat16) and 0.22 (float16)."""
    reference, inputs = _golden_model()
    model, _ = _golden_model_under(policy)
    want = _all_outputs(reference, inputs)
    got = _all_outputs(model, inputs)

    def compute(x):
        outputs = dict(model(x))
        outputs.update(pretraining_loss(outputs, x))
        return outputs

    # masked_lm_example_loss is minus the log-probability of each label: the log-probs that
    # matter, where the old comparison of all 509 probabilities mostly compared zeros.
    names = ["pooled_output", "nsp_log_probs", "masked_lm_example_loss", "masked_lm_loss",
             "next_sentence_loss", "total_loss"]
    bounds = RoundingErrorBounds(compute, POLICY_DTYPES[policy])(inputs, names)
    for name in names:
        assert_within_bounds(got[name], want[name], bounds[name], label=f"{policy} {name}")
    # Not vacuous: the 16-bit model does differ from float32, by more than float32 rounding.
    assert np.abs(got["pooled_output"] - want["pooled_output"]).max() > 1e-4


def _tiny_batch(batch=4, seq=8, preds=3, seed=0):
    rng = np.random.RandomState(seed)
    weights = (rng.rand(batch, preds) < 0.7).astype(np.float32)
    weights[0] = 1.0
    return {
        "input_ids": rng.randint(0, 37, [batch, seq]),
        "input_mask": np.ones([batch, seq], np.int64),
        "segment_ids": np.zeros([batch, seq], np.int64),
        "masked_lm_positions": rng.randint(1, seq, [batch, preds]),
        "masked_lm_ids": rng.randint(0, 37, [batch, preds]),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.randint(0, 2, [batch, 1]),
    }


def test_loss_formula():
    model = BertPretrainingModel(tiny_config_dict())
    batch = _tiny_batch()
    out = model(batch)
    loss = pretraining_loss(out, batch)
    log_probs = out["mlm_log_probs"].numpy()
    per_example = -log_probs[np.arange(12), batch["masked_lm_ids"].reshape(-1)]
    weights = batch["masked_lm_weights"].reshape(-1)
    np.testing.assert_allclose(loss["masked_lm_example_loss"], per_example, rtol=1e-6)
    expected_mlm = (weights * per_example).sum() / (weights.sum() + 1e-5)
    nsp = -out["nsp_log_probs"].numpy()[np.arange(4), batch["next_sentence_labels"].reshape(-1)]
    np.testing.assert_allclose(loss["masked_lm_loss"], expected_mlm, rtol=1e-6)
    np.testing.assert_allclose(loss["next_sentence_loss"], nsp.mean(), rtol=1e-6)
    np.testing.assert_allclose(loss["total_loss"], expected_mlm + nsp.mean(), rtol=1e-6)


def test_loss_shares_sum_to_the_whole_batch_loss():
    model = BertPretrainingModel(tiny_config_dict())
    batch = _tiny_batch()
    batch["masked_lm_weights"][2:] = 0.0  # the halves have different numbers of predictions
    whole = pretraining_loss(model(batch), batch)
    weight_sum = batch["masked_lm_weights"].sum()
    shares = []
    for half in (slice(0, 2), slice(2, 4)):
        part = {k: v[half] for k, v in batch.items()}
        shares.append(pretraining_loss(model(part), part, masked_lm_weight_sum=weight_sum, global_batch_size=4))
    for key in ("total_loss", "masked_lm_loss", "next_sentence_loss"):
        np.testing.assert_allclose(shares[0][key] + shares[1][key], whole[key], rtol=1e-6, err_msg=key)
    with pytest.raises(ValueError, match="give both"):
        pretraining_loss(model(batch), batch, masked_lm_weight_sum=weight_sum)


def test_all_padding_predictions_give_zero_mlm_loss():
    model = BertPretrainingModel(tiny_config_dict())
    batch = _tiny_batch()
    batch["masked_lm_weights"][:] = 0.0
    assert float(pretraining_loss(model(batch), batch)["masked_lm_loss"]) == 0.0


def test_missing_feature_is_named():
    model = BertPretrainingModel(tiny_config_dict())
    batch = _tiny_batch()
    out = model(batch)
    del batch["masked_lm_weights"]
    with pytest.raises(KeyError, match="pretraining_loss: input dict lacks masked_lm_weights"):
        pretraining_loss(out, batch)
    del batch["masked_lm_positions"]
    with pytest.raises(KeyError, match="BertPretrainingModel: input dict lacks masked_lm_positions"):
        model(batch)


def test_masked_lm_output_is_tied_to_word_embeddings():
    model = BertPretrainingModel(tiny_config_dict())
    batch = _tiny_batch()
    before = model(batch)["mlm_log_probs"].numpy()
    table = model.bert.embedding_table
    table.assign(table.numpy() * 2.0)
    after = model(batch)["mlm_log_probs"].numpy()
    assert not np.allclose(before, after)
    assert len(model.weights) == 5 + 16 * 2 + 2 + 5 + 2  # no separate output matrix


def test_config_round_trip():
    model = BertPretrainingModel(tiny_config_dict())
    clone = BertPretrainingModel.from_config(model.get_config())
    assert clone.config == model.config
