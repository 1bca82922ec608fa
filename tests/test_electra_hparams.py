"""bert_tf.electra.hparams and bert_tf.electra.config against the original's configure_pretraining.py.

tests/data/electra_hparams/expected.json was recorded from google-research/electra by
tests/data/electra_hparams/make_expected.py: per case of hparams, the original's
`PretrainingConfig.__dict__`, its discriminator and generator BertConfigs, or its error.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bert_tf.bert.config import BertConfig
from bert_tf.electra import config as electra_config
from bert_tf.electra.hparams import HparamsError, PretrainingHparams, parse_hparams

REPO = Path(__file__).resolve().parents[1]
EXPECTED = json.loads((REPO / "tests/data/electra_hparams/expected.json").read_text())


def _ours_from_original(original, embedding_size):
    """The bert_tf config dict that stands for the original's BertConfig dict."""
    out = dict(original, model_type="electra")
    out["hidden_act"] = "gelu_exact" if out["hidden_act"] == "gelu" else out["hidden_act"]
    if embedding_size != out["hidden_size"]:
        out["embedding_size"] = embedding_size
    return out


@pytest.mark.parametrize("case", EXPECTED, ids=[json.dumps(c["hparams"]) for c in EXPECTED])
def test_hparams_and_configs_equal_the_original(case):
    if "error" in case:
        with pytest.raises(HparamsError) as info:
            PretrainingHparams.from_args("D", "m", case["hparams"])
        assert str(info.value).startswith(case["error"])
        return
    hp = PretrainingHparams.from_args("D", "m", json.dumps(case["hparams"]))
    assert hp.to_dict() == case["config"]
    disc = electra_config.discriminator_config(hp)
    assert disc.to_dict() == _ours_from_original(case["discriminator"], case["embedding_size"])
    gen = electra_config.generator_config(hp)
    gen_embedding = case["embedding_size"]
    if hp.untied_generator_embeddings:
        gen_embedding = case["generator"]["hidden_size"]
    assert gen.to_dict() == _ours_from_original(case["generator"], gen_embedding)


def test_derived_values_follow_the_formulas():
    hp = PretrainingHparams("m", "D", mask_prob=0.2, max_seq_length=256)
    assert hp.max_predictions_per_seq == int((0.2 + 0.005) * 256) == 52
    assert PretrainingHparams("m", "D").max_predictions_per_seq == 19
    assert PretrainingHparams("m", "D", model_size="base").embedding_size is None
    assert PretrainingHparams("m", "D", model_size="small").embedding_size == 128
    assert PretrainingHparams("m", "D", electric_objective=True).two_tower_generator is True
    large = electra_config.discriminator_config(PretrainingHparams("m", "D", model_size="large"))
    assert (large.hidden_size, large.num_hidden_layers, large.num_attention_heads,
            large.intermediate_size) == (1024, 24, 16, 4096)
    # embedding_size = hidden_size: not written to the config, no projection.
    assert large.embedding_size == 1024 and "embedding_size" not in large.to_dict()


def test_generator_config_variants():
    tied = PretrainingHparams("m", "D", untied_generator=False)
    assert electra_config.generator_config(tied) == electra_config.discriminator_config(tied)
    mlm = PretrainingHparams("m", "D", electra_objective=False)
    assert electra_config.generator_config(mlm) == electra_config.discriminator_config(mlm)
    assert electra_config.generator_config(PretrainingHparams("m", "D", uniform_generator=True)) is None
    one = electra_config.generator_config(PretrainingHparams("m", "D", generator_hidden_size=0.1))
    assert (one.hidden_size, one.num_attention_heads, one.intermediate_size) == (26, 1, 104)


def test_hparams_from_a_json_file_and_layout(tmp_path):
    path = tmp_path / "h.json"
    path.write_text('{"debug": true, "num_train_steps": 5}')
    hp = PretrainingHparams.from_args(str(tmp_path / "data"), "mine", str(path))
    assert hp.debug and hp.num_train_steps == 5 and hp.train_batch_size == 8
    data = str(tmp_path / "data")
    assert hp.pretrain_tfrecords == f"{data}/pretrain_tfrecords/pretrain_data.tfrecord*"
    assert hp.vocab_file == f"{data}/vocab.txt"
    assert hp.model_dir == f"{data}/models/mine"
    assert hp.results_txt == f"{data}/models/mine/results/unsup_results.txt"
    assert parse_hparams(None) == parse_hparams("") == parse_hparams("{}") == {}


@pytest.mark.parametrize(
    "hparams, message",
    [
        ('{"learning_rte": 1e-4}', "Unknown hparam learning_rte (did you mean learning_rate?)"),
        ('{"max_predictions_per_seq": 20}', "Unknown hparam max_predictions_per_seq"),
        ('{"learning_rate": "fast"}', "hparam learning_rate must be a number, got 'fast'"),
        ('{"num_train_steps": 2.5}', "hparam num_train_steps must be an integer, got 2.5"),
        ('{"train_batch_size": 0}', "hparam train_batch_size must be a positive integer, got 0"),
        ('{"debug": "yes"}', "hparam debug must be true or false, got 'yes'"),
        ('{"model_size": "medium"}', "hparam model_size must be one of small, base, large"),
        ('{"mask_prob": 1.5}', "hparam mask_prob must be in (0, 1)"),
        ('{"model_hparam_overrides": 3}', "hparam model_hparam_overrides must be a JSON object"),
        ('{"model_hparam_overrides": {"hidden_size": 100, "num_attention_heads": 3}}',
         "hidden_size (100) must be divisible by num_attention_heads (3)"),
        ("[1, 2]", "--hparams: expected a JSON object of hparams, got list"),
        ("{'debug': 1}", "--hparams: not valid JSON"),
        ("/no/such/file.json", "--hparams: cannot read /no/such/file.json"),
    ],
)
def test_bad_hparams_give_one_line_errors(hparams, message):
    with pytest.raises(HparamsError) as info:
        hp = PretrainingHparams.from_args("D", "m", hparams)
        electra_config.discriminator_config(hp)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_lenient_json_numbers():
    hp = PretrainingHparams.from_args("D", "m", '{"num_train_steps": 1e6, "learning_rate": 1, "do_eval": 1}')
    assert hp.num_train_steps == 1000000 and isinstance(hp.num_train_steps, int)
    assert hp.learning_rate == 1.0 and hp.do_eval is True


def test_config_command_line(tmp_path):
    out = tmp_path / "bert_config.json"
    env_python = [sys.executable, "-m", "bert_tf.electra.config"]
    done = subprocess.run(env_python + ["--hparams", '{"model_size": "base", "vocab_size": 1000}',
                                        "--output", str(out)],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    config = BertConfig.from_json_file(out)
    assert (config.hidden_size, config.vocab_size, config.hidden_act, config.model_type) == (
        768, 1000, "gelu_exact", "electra")
    bad = subprocess.run(env_python + ["--hparams", '{"modelsize": "base"}', "--output", str(out)],
                         cwd=REPO, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: Unknown hparam modelsize (did you mean model_size?)"
