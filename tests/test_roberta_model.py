"""RobertaModel: positions counted from the mask after pad_token_id (pad id 1 and 0, left
padding, holes), the same in cut batches, split batches, under XLA, mixed precision and
MirroredStrategy; the usable length and the segment range refused; variables under
`roberta/`; the registry, BertTaskModel and the pretraining model's masked-LM head on it.
(Its outputs against a NumPy forward of Transformers' RoBERTa: tests/test_roberta_hub_names.py.)"""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertModel, BertTaskModel, checkpoints, families
from bert_tf.bert.pretraining import BertPretrainingModel
from bert_tf.heads import CLASSIFIER
from bert_tf.layers.activations import gelu_exact
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.model import RobertaModel
from bert_tf.training import precision
from conftest import tiny_config_dict
from test_training_helpers import REPO, env


def config(**overrides):
    return RobertaConfig.from_dict(dict(dict(
        vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu_exact", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=12, type_vocab_size=2,
        initializer_range=0.5), **overrides))


def features(mask, seed=0, type_vocab_size=2):
    mask = np.asarray(mask, np.int32)
    rng = np.random.default_rng(seed)
    return {"input_ids": np.where(mask == 1, rng.integers(3, 40, mask.shape), 1).astype(np.int32),
            "input_mask": mask,
            "segment_ids": rng.integers(0, type_vocab_size, mask.shape).astype(np.int32)}


# Right padding, a full row, left padding and a hole (a row's mask is all that counts).
MASK = [[1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1],
        [1, 1, 0, 1, 1, 0, 0]]


def reference_embeddings(model, feats, pad_token_id):
    """LayerNorm(word + token type + position) in float64, positions by the rule
    cumsum(mask) * mask + pad_token_id, from the model's own tables."""
    table = {n.rpartition("/")[2]: np.asarray(v.numpy(), np.float64)
             for n, v in model.checkpoint_variables().items() if "/embeddings/" in n}
    mask = feats["input_mask"]
    positions = np.cumsum(mask, axis=1) * mask + pad_token_id
    x = (table["word_embeddings"][feats["input_ids"]]
         + table["token_type_embeddings"][feats["segment_ids"]]
         + table["position_embeddings"][positions])
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * table["gamma"] + table["beta"]


@pytest.mark.parametrize("pad_token_id", [1, 0])
def test_positions_from_the_mask(pad_token_id):
    """Real tokens take rows pad+1, pad+2, ... of the position table, padding row pad."""
    model = RobertaModel(config(pad_token_id=pad_token_id))
    feats = features(MASK)
    got = model(feats)["embedding_output"].numpy()
    np.testing.assert_allclose(got, reference_embeddings(model, feats, pad_token_id), atol=1e-5)
    # Not BERT's positions 0..S-1 (the rows differ: the test can tell).
    bert_rows = reference_embeddings(model, dict(feats, input_mask=np.ones_like(MASK)), -1)
    assert np.abs(got - bert_rows).max() > 0.1


def test_cut_and_split_batches_give_the_same_outputs():
    """Positions depend only on a row's mask up to each token: cutting the padding (dynamic
    padding) or computing rows apart (replicas) changes no output of a real token."""
    model = RobertaModel(config())
    mask = np.array(MASK)[[0, 3]]  # longest row: 5 tokens
    feats = features(mask)
    full = model(feats)
    cut = model({k: v[:, :5] for k, v in feats.items()})
    real = mask[:, :5].astype(bool)
    np.testing.assert_allclose(cut["sequence_output"].numpy()[real],
                               full["sequence_output"].numpy()[:, :5][real], atol=1e-5)
    np.testing.assert_allclose(cut["pooled_output"].numpy(), full["pooled_output"].numpy(),
                               atol=1e-5)
    for row in range(2):
        alone = model({k: v[row:row + 1] for k, v in feats.items()})
        np.testing.assert_allclose(alone["sequence_output"].numpy()[0][mask[row] == 1],
                                   full["sequence_output"].numpy()[row][mask[row] == 1],
                                   atol=1e-5)


def test_xla_and_dynamic_shapes():
    model = RobertaModel(config())
    feats = features(MASK)
    want = model(feats)["sequence_output"].numpy()
    xla = tf.function(lambda x: model(x)["sequence_output"], jit_compile=True)
    np.testing.assert_allclose(xla(feats).numpy(), want, atol=1e-5)
    spec = tf.TensorSpec([None, None], tf.int32)
    dynamic = tf.function(lambda x: model(x)["sequence_output"],
                          input_signature=[{k: spec for k in feats}])
    np.testing.assert_allclose(dynamic(feats).numpy(), want, atol=1e-5)
    # In a graph of unknown length, the usable length and the segment range are asserted.
    too_long = features(np.ones((1, 11)))  # 12 positions, pad id 1: 10 usable
    with pytest.raises(tf.errors.InvalidArgumentError, match="RoBERTa takes at most 10 tokens"):
        dynamic(too_long)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids must be in \[0, "
                                                             r"type_vocab_size=2\)"):
        dynamic(dict(feats, segment_ids=np.full_like(feats["segment_ids"], 2)))


def test_mixed_precision():
    """bf16: the embeddings (positions included) are computed in float32 and cast, the
    position rows the same."""
    model = RobertaModel(config())
    with precision.dtype_policy("bf16"):
        mixed = RobertaModel(config())
    for ours, theirs in zip(model.weights, mixed.weights):
        theirs.assign(ours)
    feats = features(MASK)
    out = mixed(feats)
    assert out["embedding_output"].dtype == tf.bfloat16
    np.testing.assert_array_equal(
        out["embedding_output"].numpy(),
        tf.cast(model(feats)["embedding_output"], tf.bfloat16).numpy())


def test_usable_length_and_segments_refused_in_one_line():
    model = RobertaModel(config(pad_token_id=0))  # 12 positions: 11 usable
    model(features(np.ones((1, 11))))
    with pytest.raises(ValueError) as e:
        model(features(np.ones((1, 12))))
    assert ("sequence length 12 is too long: RoBERTa takes at most 11 tokens "
            "(max_position_embeddings 12 - pad_token_id 0 - 1 of the roberta config)") in str(e.value)
    with pytest.raises(ValueError, match=r"segment_ids must be in \[0, type_vocab_size=1\) of "
                                         r"the roberta config \(RoBERTa's inputs are all segment "
                                         r"0\), got 0\.\.1"):
        RobertaModel(config(type_vocab_size=1))(features(MASK))


def test_variables_scope_and_tables():
    model = RobertaModel(config())
    table = model.checkpoint_variables()
    assert all(name.startswith("roberta/") for name in table)
    assert tuple(table["roberta/embeddings/position_embeddings"].shape) == (12, 16)
    assert tuple(table["roberta/embeddings/token_type_embeddings"].shape) == (2, 16)
    assert "roberta/pooler/dense/kernel" in table
    assert model.required_checkpoint_scopes() == ("roberta/",)
    assert model.gathered_tables == ()  # dense gradients, clipped as a whole (fairseq's)
    copy = RobertaModel.from_config(model.get_config())
    assert copy.config == model.config


def test_bert_and_roberta_checkpoints_do_not_load_into_each_other(tmp_path):
    bert = BertModel(tiny_config_dict())
    checkpoints.save_original_checkpoint(bert, tmp_path / "bert/bert_model.ckpt")
    with pytest.raises(checkpoints.CheckpointError, match="roberta/embeddings/word_embeddings"):
        checkpoints.load_original_checkpoint(RobertaModel(config()), tmp_path / "bert")
    with pytest.raises(ValueError, match="BertModel takes a config of model_type 'bert', got "
                                         "'roberta'"):
        BertModel(config())


def test_the_registry_the_task_model_and_the_masked_lm_head(tmp_path):
    cfg = config(hidden_act="relu")
    (tmp_path / "bert_config.json").write_text(cfg.to_json_string())
    assert families.read_config(tmp_path / "bert_config.json") == cfg
    assert type(families.build_encoder(cfg)) is RobertaModel
    feats = features(MASK)
    task = BertTaskModel(cfg, CLASSIFIER.build(cfg, 3))
    assert type(task.bert) is RobertaModel
    out = task(feats)
    # The classifier reads the pooler on <s>, the first token.
    pooled = task.bert(feats)["pooled_output"].numpy()
    np.testing.assert_array_equal(out["pooled_output"].numpy(), pooled)
    assert all(n.startswith(("roberta/", "output_")) for n in task.checkpoint_variables())
    pretraining = BertPretrainingModel(cfg)
    assert type(pretraining.bert) is RobertaModel
    assert pretraining.masked_lm.hidden_act == "gelu_exact"  # not hidden_act (relu)
    positions = np.tile(np.arange(3), (4, 1))
    out = pretraining(dict(feats, masked_lm_positions=positions))
    head = pretraining.masked_lm
    x = out["sequence_output"].numpy()[:, :3].reshape(-1, 16)
    y = gelu_exact(x @ head.dense.kernel.numpy() + head.dense.bias.numpy())
    y = head.layer_norm(y).numpy()
    logits = y @ pretraining.bert.embedding_table.numpy().T + head.output_bias.numpy()
    logits -= logits.max(-1, keepdims=True)
    want = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(out["mlm_log_probs"].numpy(), want, atol=1e-5)
    assert head.layer_norm.epsilon == 1e-5


MIRRORED_DRIVER = """\
import json, sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.model import RobertaModel
config = RobertaConfig.from_dict(json.loads(sys.argv[1]))
feats = {k: np.array(v, np.int32) for k, v in json.loads(sys.argv[2]).items()}
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    model = RobertaModel(config)
single = model(feats)["sequence_output"].numpy()
dataset = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices(feats).batch(len(feats["input_ids"])))
step = tf.function(lambda x: strategy.run(lambda y: model(y)["sequence_output"], args=(x,)))
parts = strategy.experimental_local_results(step(next(iter(dataset))))
mask = feats["input_mask"].astype(bool)
print(json.dumps({"replicas": len(parts), "shapes": [list(p.shape) for p in parts],
                  "max_difference": float(np.abs(np.concatenate([p.numpy() for p in parts])[mask]
                                                 - single[mask]).max())}))
"""


@pytest.mark.slow  # a fresh process with 2 logical CPUs
def test_mirrored_strategy_replicas_compute_their_rows_positions():
    """Each replica gets half the batch and computes its rows' positions from their masks."""
    feats = {k: v.tolist() for k, v in features(MASK).items()}
    proc = subprocess.run(
        [sys.executable, "-c", MIRRORED_DRIVER, json.dumps(config().to_dict()),
         json.dumps(feats)], capture_output=True, text=True, env=env(), cwd=str(REPO),
        timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["replicas"] == 2 and result["shapes"] == [[2, 7, 16], [2, 7, 16]]
    assert result["max_difference"] < 1e-5
