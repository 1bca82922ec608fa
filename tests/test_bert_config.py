import json

import pytest

from bert_tf.bert.config import BertConfig, BertConfigError
from conftest import golden_path, tiny_config_dict


def test_json_round_trip_keeps_every_key_and_unknown_ones(tmp_path):
    data = tiny_config_dict(directionality="bidi", pooler_type="first_token_transform")
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(data))
    config = BertConfig.from_json_file(path)
    assert config.hidden_size == 16 and config.attention_head_size == 4
    assert config.directionality == "bidi"
    assert config.to_dict() == data
    config.to_json_file(tmp_path / "again.json")
    assert BertConfig.from_json_file(tmp_path / "again.json") == config
    assert json.loads(config.to_json_string()) == data


def test_reads_golden_config():
    config = BertConfig.from_json_file(golden_path("model", "bert_config.json"))
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (3, 48, 4)
    assert config.vocab_size == 509


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(hidden_size=0), "hidden_size must be a positive integer"),
        (dict(num_hidden_layers=-1), "num_hidden_layers must be a positive integer"),
        (dict(vocab_size=3.5), "vocab_size must be a positive integer"),
        (dict(hidden_size=18), "hidden_size (18) must be divisible by num_attention_heads (4)"),
        (dict(hidden_act="swish"), "hidden_act must be one of"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob must be a number in [0, 1)"),
        (dict(initializer_range=0), "initializer_range must be a positive number"),
        (dict(layer_norm_eps=0), "layer_norm_eps must be a number in (0, 1)"),
        (dict(layer_norm_eps="1e-12"), "layer_norm_eps must be a number in (0, 1)"),
    ],
)
def test_invalid_values_are_named(tmp_path, overrides, message):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(tiny_config_dict(**overrides)))
    with pytest.raises(BertConfigError) as err:
        BertConfig.from_json_file(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_missing_keys_are_named(tmp_path):
    data = tiny_config_dict()
    del data["intermediate_size"], data["type_vocab_size"]
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BertConfigError, match="missing key.*intermediate_size, type_vocab_size"):
        BertConfig.from_json_file(path)


def test_unreadable_files(tmp_path):
    with pytest.raises(BertConfigError, match="cannot read bert config file .*nope.json"):
        BertConfig.from_json_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(BertConfigError, match="bad.json: not valid JSON"):
        BertConfig.from_json_file(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(BertConfigError, match="expected a JSON object"):
        BertConfig.from_json_file(bad)


def test_layer_norm_eps_and_gelu_exact(tmp_path):
    config = BertConfig.from_dict(tiny_config_dict())
    assert config.layer_norm_eps == 1e-12
    assert "layer_norm_eps" not in config.to_dict()  # a Google config is written back as it was
    config = BertConfig.from_dict(tiny_config_dict(layer_norm_eps=1e-7, hidden_act="gelu_exact"))
    assert config.layer_norm_eps == 1e-7 and config.hidden_act == "gelu_exact"
    path = tmp_path / "bert_config.json"
    config.to_json_file(path)
    assert json.loads(path.read_text())["layer_norm_eps"] == 1e-7
    assert BertConfig.from_json_file(path) == config


def test_electra_keys(tmp_path):
    """embedding_size (default hidden_size) and model_type (default bert) are ELECTRA's
    optional keys: validated, written back only when given, a BERT config unchanged."""
    config = BertConfig.from_dict(tiny_config_dict())
    assert config.embedding_size == 16 and config.model_type == "bert"
    assert sorted(config.to_dict()) == sorted(tiny_config_dict())
    config = BertConfig.from_dict(tiny_config_dict(embedding_size=8, model_type="electra"))
    assert config.embedding_size == 8 and config.model_type == "electra"
    path = tmp_path / "bert_config.json"
    config.to_json_file(path)
    data = json.loads(path.read_text())
    assert data["embedding_size"] == 8 and data["model_type"] == "electra"
    assert BertConfig.from_json_file(path) == config
    assert BertConfig.from_dict(tiny_config_dict(embedding_size=None)).embedding_size == 16
    for overrides, message in ((dict(embedding_size=0), "embedding_size must be a positive"),
                               (dict(embedding_size=8.0), "embedding_size must be a positive"),
                               (dict(model_type="albert"), "model_type must be one of")):
        with pytest.raises(BertConfigError, match=message):
            BertConfig.from_dict(tiny_config_dict(**overrides))
