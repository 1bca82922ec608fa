import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel
from conftest import tiny_config_dict


def _inputs(batch=2, seq=6, seed=0):
    rng = np.random.RandomState(seed)
    mask = np.ones([batch, seq], np.int32)
    mask[1, 4:] = 0
    return {
        "input_ids": rng.randint(0, 37, [batch, seq]).astype(np.int32),
        "input_mask": mask,
        "segment_ids": (np.arange(seq)[None] >= seq // 2).astype(np.int32).repeat(batch, 0),
    }


def test_outputs_and_shapes():
    model = BertModel(BertConfig.from_dict(tiny_config_dict()))
    out = model(_inputs())
    assert tuple(out["embedding_output"].shape) == (2, 6, 16)
    assert len(out["all_encoder_layers"]) == 2
    np.testing.assert_array_equal(out["sequence_output"].numpy(), out["all_encoder_layers"][-1].numpy())
    assert tuple(out["pooled_output"].shape) == (2, 16)
    assert model.embedding_table.shape == (37, 16)


def test_variables_exist_after_construction():
    model = BertModel(tiny_config_dict())
    # 5 embedding variables, 16 per layer, 2 pooler.
    assert len(model.weights) == 5 + 16 * 2 + 2
    assert all(w.dtype == "float32" for w in model.weights)


def test_padding_does_not_change_real_positions():
    model = BertModel(tiny_config_dict())
    a = _inputs()
    b = {k: v.copy() for k, v in a.items()}
    b["input_ids"][1, 4:] = [1, 2]
    b["segment_ids"][1, 4:] = 0
    out_a, out_b = model(a), model(b)
    np.testing.assert_allclose(
        out_a["sequence_output"][1, :4], out_b["sequence_output"][1, :4], atol=1e-6
    )
    np.testing.assert_allclose(out_a["pooled_output"], out_b["pooled_output"], atol=1e-6)


def test_dropout_only_when_training():
    model = BertModel(tiny_config_dict(hidden_dropout_prob=0.3))
    x = _inputs()
    first = model(x)["sequence_output"].numpy()
    np.testing.assert_array_equal(model(x)["sequence_output"].numpy(), first)
    np.testing.assert_array_equal(model(x, training=False)["sequence_output"].numpy(), first)
    assert not np.allclose(model(x, training=True)["sequence_output"].numpy(), first)


def test_config_round_trip():
    model = BertModel(tiny_config_dict(), name="my_bert")
    clone = BertModel.from_config(model.get_config())
    assert clone.config == model.config and clone.name == "my_bert"


def test_missing_input_is_named():
    model = BertModel(tiny_config_dict())
    x = _inputs()
    del x["segment_ids"]
    with pytest.raises(KeyError, match="input dict lacks segment_ids"):
        model(x)


def test_too_long_sequence_is_an_error():
    model = BertModel(tiny_config_dict(max_position_embeddings=4))
    with pytest.raises(ValueError, match="larger than max_position_embeddings"):
        model(_inputs(seq=6))


def test_works_inside_tf_function_with_dynamic_shapes():
    model = BertModel(tiny_config_dict())
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[{"input_ids": spec, "input_mask": spec, "segment_ids": spec}])
    def encode(features):
        return model(features)["pooled_output"]

    x = _inputs()
    np.testing.assert_allclose(encode(x).numpy(), model(x)["pooled_output"].numpy(), atol=1e-6)
    assert tuple(encode(_inputs(batch=3, seq=5)).shape) == (3, 16)


def test_electra_variant():
    """model_type electra: the registry builds ElectraModel (BertModel refuses the config); no
    pooler, the pooled output is the [CLS] vector; embedding_size E: embeddings E wide, then
    embeddings_project [E, H] (Glorot uniform, bias 0)."""
    from bert_tf import families
    from bert_tf.checkpoints import original_variable_map
    from bert_tf.electra.model import ElectraModel

    config = BertConfig.from_dict(tiny_config_dict(embedding_size=8, model_type="electra"))
    with pytest.raises(ValueError, match="BertModel takes a config of model_type 'bert', got "
                                         "'electra'"):
        BertModel(config)
    model = families.build_encoder(config)
    assert type(model) is ElectraModel
    out = model(_inputs())
    np.testing.assert_array_equal(out["pooled_output"].numpy(),
                                  out["sequence_output"].numpy()[:, 0])
    assert model.pooler is None and model.embedding_table.shape == (37, 8)
    table = original_variable_map(model)
    assert not [n for n in table if not n.startswith("electra/") or "pooler" in n]
    assert table["electra/embeddings_project/kernel"].shape == (8, 16)
    assert not np.any(table["electra/embeddings_project/bias"].numpy())
    limit = np.sqrt(6.0 / (8 + 16))  # glorot_uniform, what tf.layers.dense defaults to
    kernel = table["electra/embeddings_project/kernel"].numpy()
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.5 * limit
    projected = tf.matmul(model.embeddings(tf.constant(_inputs()["input_ids"]),
                                           tf.constant(_inputs()["segment_ids"])), kernel)
    np.testing.assert_allclose(out["embedding_output"].numpy(), projected.numpy(), atol=1e-6)
    # embedding_size = hidden_size: no projection.
    model = ElectraModel(BertConfig.from_dict(tiny_config_dict(model_type="electra")))
    assert model.embeddings_project is None
    assert len(model.weights) == 5 + 16 * 2


def test_gathered_tables_are_the_word_embeddings():
    """Fine-tuning clips the word embeddings' gradient by rows (the original's
    tf.nn.embedding_lookup); token types go through a one-hot matmul."""
    model = BertModel(tiny_config_dict())
    names = {id(v): n for n, v in model.checkpoint_variables().items()}
    assert [names[id(t)] for t in model.gathered_tables] == ["bert/embeddings/word_embeddings"]
