"""RobertaConfig: BERT's bert_config.json keys plus pad_token_id and the epsilon (fairseq's
defaults 1 and 1e-5), written back with model_type roberta; the usable length; bad values named
in one line."""

import json

import pytest

from bert_tf import families
from bert_tf.bert.config import BertConfig, BertConfigError
from bert_tf.roberta.config import RobertaConfig, RobertaConfigError

# roberta-base as an import writes it (Transformers' config.json keys in bert_config.json).
BASE = {
    "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "hidden_act": "gelu_exact", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 514, "type_vocab_size": 1,
    "initializer_range": 0.02, "model_type": "roberta", "pad_token_id": 1,
    "layer_norm_eps": 1e-5,
}


def test_roberta_base_file(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(BASE))
    config = families.read_config(path)
    assert isinstance(config, RobertaConfig) and isinstance(config, BertConfig)
    assert (config.pad_token_id, config.layer_norm_eps, config.max_sequence_length) == (
        1, 1e-5, 512)
    assert config.to_dict() == BASE
    config.to_json_file(tmp_path / "again.json")
    assert families.read_config(tmp_path / "again.json") == config


def test_pad_token_id_and_epsilon_default_to_fairseqs_and_are_written():
    given = {k: v for k, v in BASE.items() if k not in ("pad_token_id", "layer_norm_eps")}
    config = RobertaConfig.from_dict(given)
    assert (config.pad_token_id, config.layer_norm_eps) == (1, 1e-5)
    assert config.to_dict() == BASE


def test_built_in_python_it_is_fairseqs_roberta_base():
    config = RobertaConfig(vocab_size=50265)
    assert config.to_dict() == BASE


def test_usable_length_and_head_activation():
    config = RobertaConfig(vocab_size=10, hidden_size=8, num_attention_heads=2,
                           max_position_embeddings=20, pad_token_id=0, hidden_act="relu")
    assert config.max_sequence_length == 19
    assert config.mlm_hidden_act == "gelu_exact"  # fairseq's lm_head, whatever hidden_act
    bert = BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2,
                      max_position_embeddings=20, hidden_act="relu")
    assert (bert.max_sequence_length, bert.mlm_hidden_act) == (20, "relu")


@pytest.mark.parametrize("change, message", [
    ({"pad_token_id": None}, r"pad_token_id must be an integer in \[0, vocab_size=50265\), got "
                             "None"),
    ({"pad_token_id": 50265}, "pad_token_id must be an integer"),
    ({"pad_token_id": True}, "pad_token_id must be an integer"),
    ({"max_position_embeddings": 2}, r"max_position_embeddings \(2\) must be larger than "
                                     r"pad_token_id \+ 1 \(2\)"),
    ({"layer_norm_eps": 0}, r"layer_norm_eps must be a number in \(0, 1\)"),
    ({"model_type": "bert"}, "model_type must be one of roberta, got 'bert'"),
    ({"hidden_act": "swish"}, "hidden_act must be one of"),
    ({"hidden_size": 100}, "divisible"),
])
def test_bad_values_are_named(tmp_path, change, message):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**BASE, **change}))
    with pytest.raises(RobertaConfigError, match=message) as e:
        RobertaConfig.from_json_file(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)
    assert isinstance(e.value, (BertConfigError, families.ConfigError))


def test_missing_keys_are_named(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"model_type": "roberta", "vocab_size": 10}))
    with pytest.raises(RobertaConfigError, match=f"{path}: missing key"):
        families.read_config(path)
