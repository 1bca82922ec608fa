import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig
from bert_tf.layers import activations
from bert_tf.layers import (
    BertEmbeddings, Pooler, SelfAttention, TransformerBlock, TransformerEncoder,
    gelu, get_activation,
)
from bert_tf.bert.pretraining import BertPretrainingModel
from conftest import shared_random_draws, tiny_config_dict

H, A, I = 16, 4, 24


def _random(shape, seed=0):
    return tf.constant(np.random.RandomState(seed).normal(size=shape).astype(np.float32))


def test_gelu_is_the_tanh_approximation():
    x = np.linspace(-6, 6, 101).astype(np.float32)
    expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(gelu(tf.constant(x)).numpy(), expected, atol=1e-6)
    # The erf form differs from the tanh form by up to ~5e-4: make sure we are not it.
    erf_form = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    assert np.abs(gelu(tf.constant(x)).numpy() - erf_form).max() > 1e-4


@pytest.mark.parametrize("dtype, tol", [("float32", 1e-5), ("bfloat16", 2e-2)])
def test_fused_gelu_matches_the_original_ops_and_their_gradient(dtype, tol):
    x = tf.cast(_random([4, 7, 33]) * 3.0, dtype)
    dy = tf.cast(_random([4, 7, 33], seed=1), dtype)

    def value_and_grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return y, tape.gradient(y, x, output_gradients=dy)

    # The tanh form and the exact (erf) form, each against its op-by-op reference.
    for fused, reference in ((gelu, activations.gelu_reference),
                             (activations.gelu_exact, activations.gelu_exact_reference)):
        y_ref, g_ref = value_and_grad(reference)
        # Eagerly, inside a graph, and inside an XLA-compiled graph (--use_xla).
        for run in (value_and_grad, tf.function(value_and_grad),
                    tf.function(value_and_grad, jit_compile=True)):
            y, g = run(fused)
            assert y.dtype == g.dtype == dtype
            for got, want in ((y, y_ref), (g, g_ref)):
                got, want = tf.cast(got, tf.float32).numpy(), tf.cast(want, tf.float32).numpy()
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_without_xla_the_same_arithmetic_as_plain_ops():
    """Inside `without_xla()` (what the exports build under) the GELUs are plain ops with the
    fused functions' arithmetic (float32 inside), and outside it the fused XLA ones again."""
    x = _random([3, 50]) * 3.0
    with activations.without_xla():
        plain = {name: get_activation(name) for name in ("gelu", "gelu_exact", "relu")}
        with activations.without_xla():
            assert get_activation("gelu") is plain["gelu"]
        assert get_activation("gelu") is plain["gelu"]
    assert get_activation("gelu") is gelu and get_activation("gelu_exact") is activations.gelu_exact
    assert plain["relu"] is tf.nn.relu
    for name, fused in (("gelu", gelu), ("gelu_exact", activations.gelu_exact)):
        assert plain[name] is not fused
        graph = tf.function(plain[name]).get_concrete_function(x).graph.as_graph_def()
        assert not [f for f in graph.library.function if "_XlaMustCompile" in f.attr], name
        for dtype in ("float32", "bfloat16"):
            got = tf.cast(plain[name](tf.cast(x, dtype)), tf.float32).numpy()
            want = tf.cast(fused(tf.cast(x, dtype)), tf.float32).numpy()
            # float32: the same formula; Eigen's and XLA's tanh/erf are each accurate to a
            # few float32 ulps (2**-24 relative), so 2e-6 (~2**-19, 32 ulps) is their sum with
            # room; bfloat16: both round the float32 result once to bfloat16 (2**-8 relative),
            # so they differ by at most one bfloat16 step where those bits straddle a rounding.
            rtol = 2e-6 if dtype == "float32" else 2.0 ** -7
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_activations_by_name():
    x = tf.constant([-2.0, 0.5])
    np.testing.assert_allclose(get_activation("relu")(x).numpy(), [0.0, 0.5])
    np.testing.assert_allclose(get_activation("tanh")(x).numpy(), np.tanh([-2.0, 0.5]), rtol=1e-6)
    np.testing.assert_allclose(get_activation("linear")(x).numpy(), [-2.0, 0.5])
    with pytest.raises(ValueError,
                       match="hidden_act must be one of gelu, gelu_exact, relu, tanh, linear, "
                             "got 'swish'"):
        get_activation("swish")


@pytest.mark.parametrize("dtype, tol", [("float32", 1e-6), ("bfloat16", 2 ** -8)])
def test_gelu_exact_is_the_erf_form(dtype, tol):
    x = np.linspace(-6, 6, 101)
    expected = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    x_in = tf.cast(tf.constant(x, tf.float32), dtype)
    y = get_activation("gelu_exact")(x_in)
    assert y.dtype == dtype
    # float32: a few ulps; bfloat16: one rounding of the output (relative 2^-8) plus the
    # rounding of the input, whose effect is at most |d gelu / dx| <= 1.13 times it.
    x_rounded = tf.cast(x_in, tf.float64).numpy()
    expected = 0.5 * x_rounded * (1 + np.vectorize(math.erf)(x_rounded / math.sqrt(2)))
    np.testing.assert_allclose(tf.cast(y, tf.float64).numpy(), expected, rtol=tol, atol=1e-6)


def test_layer_norm_eps_reaches_every_layer_norm():
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining import BertPretrainingModel

    config = BertConfig(vocab_size=30, hidden_size=H, num_hidden_layers=2, num_attention_heads=A,
                        intermediate_size=I, max_position_embeddings=20, layer_norm_eps=1e-5)
    model = BertPretrainingModel(config)
    epsilons = [layer.epsilon for layer in model._flatten_layers()
                if isinstance(layer, keras.layers.LayerNormalization)]
    assert len(epsilons) == 1 + 2 * 2 + 1 and set(epsilons) == {1e-5}
    default = BertPretrainingModel(BertConfig(vocab_size=30, hidden_size=H, num_hidden_layers=1,
                                              num_attention_heads=A, intermediate_size=I))
    assert {layer.epsilon for layer in default._flatten_layers()
            if isinstance(layer, keras.layers.LayerNormalization)} == {1e-12}


def _layers():
    return [
        BertEmbeddings(37, H, 2, 20, 0.1, 0.02),
        SelfAttention(H, A, 0.1, 0.02),
        TransformerBlock(H, A, I, "relu", 0.1, 0.1, 0.02),
        TransformerBlock(H, A, I, "gelu_exact", 0.1, 0.1, 0.02, layer_norm_eps=1e-6),
        TransformerEncoder(2, hidden_size=H, num_attention_heads=A, intermediate_size=I, hidden_act="tanh"),
        Pooler(H, 0.02),
    ]


@pytest.mark.parametrize("layer", _layers(), ids=lambda layer: type(layer).__name__)
def test_get_config_round_trip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    layer.build()
    clone.build()
    assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in layer.weights]


def test_embeddings_sum_and_dropout():
    layer = BertEmbeddings(37, H, 2, 20, hidden_dropout_prob=0.5, initializer_range=0.02)
    layer.build()
    ids = tf.constant([[3, 5, 7]])
    segments = tf.constant([[0, 1, 1]])
    out = layer(ids, segments).numpy()
    x = (
        tf.gather(layer.word_embeddings, ids) + tf.gather(layer.token_type_embeddings, segments)
        + layer.position_embeddings[:3]
    ).numpy()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-12), atol=1e-5)
    np.testing.assert_array_equal(layer(ids, segments).numpy(), out)  # inference: no dropout
    assert not np.allclose(layer(ids, segments, training=True).numpy(), out)


def test_embeddings_reject_sequences_longer_than_max_position():
    layer = BertEmbeddings(37, H, 2, 4, 0.0, 0.02)
    with pytest.raises(ValueError, match="sequence length 5 is larger than max_position_embeddings \\(4\\)"):
        layer(tf.zeros([1, 5], tf.int32), tf.zeros([1, 5], tf.int32))


def _numpy_attention(layer, x, mask):
    """Reference: head h uses columns h*d..(h+1)*d of the [H, H] query/key/value kernels."""
    d = H // A
    q, k, v = (x @ dense.kernel.numpy() + dense.bias.numpy() for dense in (layer.query, layer.key, layer.value))
    out = np.zeros_like(x)
    for h in range(A):
        cols = slice(h * d, (h + 1) * d)
        scores = q[..., cols] @ np.swapaxes(k[..., cols], 1, 2) / math.sqrt(d)
        scores = scores + (1.0 - mask[:, None, :]) * -10000.0
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out[..., cols] = probs @ v[..., cols]
    return out


def test_attention_heads_are_contiguous_column_slices():
    layer = SelfAttention(H, A, 0.0, 0.5)
    layer.build()
    for dense in (layer.query, layer.key, layer.value):
        assert tuple(dense.kernel.shape) == (H, H)
    x = _random([2, 5, H])
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
    out = layer(x, tf.constant(mask, tf.int32)).numpy()
    np.testing.assert_allclose(out, _numpy_attention(layer, x.numpy(), mask), atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: SelfAttention(H, A, 0.1, 0.2),
    lambda: TransformerBlock(H, A, I, "gelu", 0.1, 0.1, 0.2),
], ids=["attention", "block"])
def test_padding_does_not_change_real_positions(make):
    layer = make()
    layer.build()
    mask = np.array([[1, 1, 1, 0, 0, 0]], np.float32)
    x = _random([1, 6, H], seed=1).numpy()
    y = x.copy()
    y[:, 3:] = _random([1, 3, H], seed=2).numpy() * 10  # garbage at padded positions
    out_x = layer(tf.constant(x), tf.constant(mask, tf.int32)).numpy()
    out_y = layer(tf.constant(y), tf.constant(mask, tf.int32)).numpy()
    np.testing.assert_allclose(out_x[:, :3], out_y[:, :3], atol=1e-6)
    assert not np.allclose(out_x[:, 3:], out_y[:, 3:])


def test_block_is_post_layer_norm_with_dropout_only_in_training():
    block = TransformerBlock(H, A, I, "gelu", 0.3, 0.3, 0.2)
    block.build()
    x = _random([2, 4, H])
    adder = tf.ones([2, 4], tf.int32)
    out = block(x, adder).numpy()
    # Post-LN: every output row is normalised (gamma 1, beta 0 at initialisation).
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(out.std(-1), 1, atol=1e-3)
    np.testing.assert_array_equal(block(x, adder, training=False).numpy(), out)
    assert not np.allclose(block(x, adder, training=True).numpy(), out)


def test_encoder_returns_every_layer():
    encoder = TransformerEncoder(3, hidden_size=H, num_attention_heads=A, intermediate_size=I)
    outputs = encoder(_random([2, 5, H]), tf.ones([2, 5], tf.int32))
    assert len(outputs) == 3 and all(tuple(o.shape) == (2, 5, H) for o in outputs)
    assert [b.name for b in encoder.blocks] == ["layer_0", "layer_1", "layer_2"]


def test_pooler_uses_first_position():
    pooler = Pooler(H, 0.2)
    x = _random([2, 5, H]).numpy()
    out = pooler(tf.constant(x)).numpy()
    expected = np.tanh(x[:, 0] @ pooler.dense.kernel.numpy() + pooler.dense.bias.numpy())
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_layer_norm_and_softmax_stay_float32_under_mixed_precision():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        block = TransformerBlock(H, A, I)
        block.build()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert block.attention_layer_norm.compute_dtype == "float32"
    assert block.output_layer_norm.compute_dtype == "float32"
    assert block.intermediate.compute_dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in block.weights)
    out = block(_random([1, 3, H]), tf.ones([1, 3], tf.int32))
    assert out.dtype == tf.bfloat16


def test_every_random_weight_is_drawn_independently():
    """A Keras initializer instance repeats its draws, so one shared by several weights made
    query = key = value and the embedding tables prefixes of one another: no two weights of
    a fresh model may share their initial values."""
    keras.utils.set_random_seed(1)
    model = BertPretrainingModel(BertConfig.from_dict(tiny_config_dict()))
    random_weights = [w for w in model.weights if np.ptp(w.numpy()) > 0]
    assert len(random_weights) == 3 + 2 * 6 + 1 + 2  # embeddings, blocks, pooler, heads
    assert shared_random_draws(model.weights) == []
