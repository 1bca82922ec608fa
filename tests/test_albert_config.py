"""AlbertConfig: Google's albert_config.json read as the original reads it (missing keys take
the original AlbertConfig's defaults), checked, and written back with model_type."""

import json
import os

import pytest

from bert_tf import families
from bert_tf.albert.config import DEFAULTS, AlbertConfig, AlbertConfigError
from bert_tf.bert.config import BertConfigError
from conftest import ALBERT_ORIGINAL_REPO

ORIGINAL_REPO = ALBERT_ORIGINAL_REPO

# albert_base_v2's albert_config.json (the keys and values of Google's release).
BASE_V2 = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
    "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0,
    "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2,
    "vocab_size": 30000,
}


def test_google_base_v2_file(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(BASE_V2))
    config = families.read_config(path)
    assert isinstance(config, AlbertConfig)
    assert (config.embedding_size, config.hidden_size, config.num_hidden_groups,
            config.inner_group_num, config.layer_norm_eps) == (128, 768, 1, 1, 1e-12)
    written = config.to_dict()
    assert written.pop("model_type") == "albert"
    assert written == BASE_V2
    config.to_json_file(tmp_path / "again.json")
    assert families.read_config(tmp_path / "again.json") == config


def test_missing_keys_take_the_originals_defaults():
    config = AlbertConfig.from_dict({"vocab_size": 100})
    got = {key: getattr(config, key) for key in DEFAULTS}
    assert got == DEFAULTS
    assert (config.hidden_size, config.num_attention_heads) == (4096, 64)


def test_defaults_are_the_originals():
    if not os.path.isdir(ORIGINAL_REPO):
        pytest.skip(f"no copy of google-research/albert at {ORIGINAL_REPO}")
    from tools.original import load_albert_module

    modeling = load_albert_module(ORIGINAL_REPO, "modeling")
    original = modeling.AlbertConfig(vocab_size=100).to_dict()
    original.pop("vocab_size")
    assert original == DEFAULTS


@pytest.mark.parametrize("change, message", [
    ({"vocab_size": None}, "vocab_size must be a positive integer"),
    ({"num_hidden_groups": 0}, "num_hidden_groups must be a positive integer"),
    ({"inner_group_num": 1.5}, "inner_group_num must be a positive integer"),
    ({"hidden_size": 100, "num_attention_heads": 64}, "divisible"),
    ({"model_type": "bert"}, "model_type must be one of albert, got 'bert'"),
    ({"hidden_act": "swish"}, "hidden_act must be one of"),
])
def test_bad_values_are_named(change, message):
    with pytest.raises(AlbertConfigError, match=message) as e:
        AlbertConfig.from_dict({**BASE_V2, **change}, source="my_config.json")
    assert str(e.value).startswith("my_config.json: ")
    assert isinstance(e.value, (BertConfigError, families.ConfigError))


def test_vocab_size_is_required(tmp_path):
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps({"hidden_size": 768, "num_hidden_groups": 1}))
    with pytest.raises(AlbertConfigError, match=f"{path}: missing key vocab_size"):
        families.read_config(path)


def test_groups_used():
    config = AlbertConfig(vocab_size=10, hidden_size=16, num_attention_heads=2,
                          num_hidden_layers=12, num_hidden_groups=4)
    assert [config.group_of_layer(i) for i in range(12)] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert AlbertConfig(vocab_size=10, hidden_size=16, num_attention_heads=2,
                        num_hidden_layers=2, num_hidden_groups=5).groups == [0, 2]
