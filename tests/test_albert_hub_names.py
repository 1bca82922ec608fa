"""ALBERT's table of Hub names (bert_tf/albert/hub_names.py): its rows are exactly the variables
of our ALBERT models (names, and shapes with Transformers' [out, in] transposed), per group and
inner block; the layouts where Transformers runs another group than the original are found;
the tensors Transformers has and the original has not are named."""

import pytest

from bert_tf.albert import hub_names
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.pretraining import AlbertPretrainingModel
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.hf import names


def config(**overrides):
    return AlbertConfig.from_dict(dict(dict(
        vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=3,
        num_hidden_groups=2, inner_group_num=2, num_attention_heads=4, intermediate_size=24,
        max_position_embeddings=20), **overrides))


LAYOUTS = {
    "grouped": {},
    "e-equals-h": dict(embedding_size=16, num_hidden_groups=3, inner_group_num=1),
    "sparse": dict(num_hidden_layers=2, num_hidden_groups=4, inner_group_num=1),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_rows_are_the_variables_of_our_model(layout):
    cfg = config(**LAYOUTS[layout])
    model = AlbertPretrainingModel(cfg)
    ours = {name: tuple(v.shape) for name, v in model.checkpoint_variables().items()}
    table = names.HubTable(hub_names)
    rows = table.rows_for("AlbertForPreTraining", cfg)
    sizes = names.sizes_of(cfg)
    from_rows = {}
    for hub, original, transposed, letters in rows:
        shape = names.hub_shape(letters, sizes)
        from_rows[original] = shape[::-1] if transposed else shape
    assert from_rows == ours
    assert len({hub for hub, *_ in rows}) == len(rows)


def test_hub_names_of_a_grouped_model():
    rows = names.HubTable(hub_names).rows_for("AlbertForPreTraining", config())
    by_hub = {hub: original for hub, original, _, _ in rows}
    assert by_hub["albert.encoder.albert_layer_groups.1.albert_layers.1.ffn_output.weight"] == (
        "bert/encoder/transformer/group_1/inner_group_1/ffn_1/intermediate/output/dense/kernel")
    assert by_hub["albert.encoder.albert_layer_groups.0.albert_layers.0.attention.LayerNorm.bias"] \
        == "bert/encoder/transformer/group_0/inner_group_0/LayerNorm/beta"
    assert by_hub["albert.encoder.albert_layer_groups.0.albert_layers.1.full_layer_layer_norm."
                  "weight"] == "bert/encoder/transformer/group_0/inner_group_1/LayerNorm_1/gamma"
    assert by_hub["albert.encoder.embedding_hidden_mapping_in.weight"] == (
        "bert/encoder/embedding_hidden_mapping_in/kernel")
    assert by_hub["albert.pooler.weight"] == "bert/pooler/dense/kernel"
    assert by_hub["predictions.dense.weight"] == "cls/predictions/transform/dense/kernel"
    assert by_hub["sop_classifier.classifier.weight"] == "cls/seq_relationship/output_weights"
    # 5 embeddings + 2 mapping + 2 groups x 2 inner x 16 + 2 pooler + 5 masked LM + 2 SOP
    assert len(rows) == 5 + 2 + 64 + 2 + 5 + 2


def test_architectures_are_transformers_albert_classes():
    assert sorted(hub_names.ARCHITECTURES) == sorted([
        "AlbertModel", "AlbertForPreTraining", "AlbertForMaskedLM",
        "AlbertForSequenceClassification", "AlbertForQuestionAnswering",
        "AlbertForTokenClassification"])
    assert set(hub_names.HEADS) == {"mlm", "sop", *FINE_TUNING_HEADS}
    assert hub_names.HEADS["classifier"][0] == ("classifier.weight", "output_weights", False, "CH")


@pytest.mark.parametrize("layers,groups", [(12, 1), (24, 1), (12, 12), (3, 2), (4, 2), (6, 3),
                                           (12, 4), (2, 4)])
def test_released_and_common_layouts_convert(layers, groups):
    cfg = config(num_hidden_layers=layers, num_hidden_groups=groups, inner_group_num=1)
    assert hub_names.config_problem(cfg) is None
    assert [hub_names.transformers_group_of_layer(i, layers, groups) for i in range(layers)] == [
        cfg.group_of_layer(i) for i in range(layers)]


@pytest.mark.parametrize("layers,groups,layer,original,transformers", [
    (18, 14, 9, 7, 6), (22, 22, 15, 14, 15), (47, 47, 3, 2, 3), (49, 49, 1, 0, 1)])
def test_layouts_where_the_float_expressions_disagree(layers, groups, layer, original,
                                                      transformers):
    """int(l / L * G) and int(l / (L / G)) round differently: e.g. 15 / 22 * 22 is
    14.999999999999998 while 15 / (22 / 22) is 15.0."""
    cfg = config(num_hidden_layers=layers, num_hidden_groups=groups, inner_group_num=1)
    assert cfg.group_of_layer(layer) == original
    assert hub_names.transformers_group_of_layer(layer, layers, groups) == transformers
    problem = hub_names.config_problem(cfg)
    assert problem.startswith(f"num_hidden_layers={layers}, num_hidden_groups={groups}: layer "
                              f"{layer} runs group {original} in the original")


def test_disagreements_up_to_24_layers():
    """Of the layouts with up to 24 layers and 24 groups, the bridge refuses three (none of them
    a released model's): 18 over 14, and 22 and 23 unshared layers."""
    refused = [(layers, groups) for layers in range(1, 25) for groups in range(1, 25)
               if hub_names.config_problem(config(num_hidden_layers=layers,
                                                  num_hidden_groups=groups,
                                                  inner_group_num=1)) is not None]
    assert refused == [(18, 14), (22, 22), (23, 23)]


def test_implied_tensors():
    assert hub_names.implied_rows(config()) == []
    same = hub_names.implied_rows(config(embedding_size=16))
    assert [(hub, letters, fill, checked) for hub, letters, fill, checked, _ in same] == [
        ("encoder.embedding_hidden_mapping_in.weight", "HE", "identity", True),
        ("encoder.embedding_hidden_mapping_in.bias", "H", "zeros", True)]
    sparse = hub_names.implied_rows(config(num_hidden_layers=2, num_hidden_groups=4,
                                           inner_group_num=1))
    assert {hub.split(".")[2] for hub, *_ in sparse} == {"1", "3"}
    assert all(fill == "zeros" and not checked for _, _, fill, checked, _ in sparse)
    assert len(sparse) == 2 * 16


def test_the_tanh_gelu_is_transformers_albert_default():
    assert hub_names.DEFAULT_HIDDEN_ACT == "gelu_new"
    assert names.ACTIVATION_FROM_HUB[hub_names.DEFAULT_HIDDEN_ACT] == "gelu"
