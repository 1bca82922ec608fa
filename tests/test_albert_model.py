"""ALBERT's encoder and pretraining heads against google-research/albert, recorded by
tests/data/albert_model/make_expected.py: the variable names and shapes, the original's
checkpoint loaded as it is, the forward outputs (embeddings, every block, pooled, masked-LM and
sentence-order log-probabilities) within 1e-5, for a grouped model (L=4 over 2 groups of 2 inner
blocks, E != H), a float-division assignment (L=3, G=2, E == H) and more groups than layers."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, families
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel, AlbertTransformer
from bert_tf.albert.pretraining import AlbertPretrainingModel, pretraining_loss
from conftest import ALBERT_ORIGINAL_REPO, shared_random_draws
from test_training_helpers import assert_close

DATA = Path(__file__).resolve().parent / "data" / "albert_model"
CASES = ("grouped", "uneven", "sparse_groups")


def config_of(case):
    return AlbertConfig.from_json_file(DATA / case / "albert_config.json")


def recorded(case):
    return dict(np.load(DATA / case / "forward.npz"))


def inputs(want):
    return {k: tf.constant(want[k]) for k in ("input_ids", "input_mask", "segment_ids",
                                              "masked_lm_positions")}


@pytest.mark.parametrize("case", CASES)
def test_variable_names_and_shapes_are_the_originals(case):
    model = AlbertPretrainingModel(config_of(case))
    ours = {name: list(v.shape) for name, v in model.checkpoint_variables().items()}
    original = dict(json.loads((DATA / case / "variables.json").read_text()))
    assert len(original) == len(ours)
    assert ours == original


def test_gathered_tables_are_the_word_and_token_type_embeddings():
    """The original looks both up with tf.nn.embedding_lookup off TPU, so fine-tuning clips
    both gradients by rows (the trainer's default row_norm_variables)."""
    model = AlbertModel(config_of("grouped"))
    names = {id(v): n for n, v in model.checkpoint_variables().items()}
    assert [names[id(t)] for t in model.gathered_tables] == [
        "bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings"]


def test_the_registry_builds_albert_from_a_google_config_file():
    """Google's albert_config.json has no model_type: the registry knows it by its keys."""
    config = families.read_config(DATA / "grouped" / "albert_config.json")
    assert isinstance(config, AlbertConfig) and config.model_type == "albert"
    assert isinstance(families.build_encoder(config), AlbertModel)


@pytest.mark.parametrize("case", CASES)
def test_forward_matches_the_original(case):
    want = recorded(case)
    model = AlbertPretrainingModel(config_of(case))
    report = checkpoints.load_original_checkpoint(model, DATA / case / "model.ckpt")
    assert report is not None
    outputs = model(inputs(want), training=False)
    assert len(outputs["all_encoder_layers"]) == len(want["all_encoder_layers"])
    for name in ("embedding_output", "sequence_output", "pooled_output", "mlm_log_probs"):
        assert_close(outputs[name].numpy(), want[name], name)
    assert_close(np.stack([t.numpy() for t in outputs["all_encoder_layers"]]),
                 want["all_encoder_layers"], "all_encoder_layers")
    assert_close(outputs["nsp_log_probs"].numpy(), want["sop_log_probs"], "sop_log_probs")


def test_layers_share_their_group_blocks():
    """L=4 over 2 groups of 2: 8 outputs from 4 distinct blocks, layer l on group int(l/4*2)."""
    config = config_of("grouped")
    model = AlbertModel(config)
    assert [config.group_of_layer(i) for i in range(4)] == [0, 0, 1, 1]
    assert sorted(model.encoder.groups) == [0, 1]
    blocks = [b for g in model.encoder.groups.values() for b in g]
    assert len(blocks) == 4 and len({id(b) for b in blocks}) == 4
    want = recorded("grouped")
    checkpoints.load_original_checkpoint(model, DATA / "grouped" / "model.ckpt")
    layers = model(inputs(want))["all_encoder_layers"]
    # Layer 0 runs group 0's blocks (outputs 0, 1), layer 1 runs them again: output 2 is group
    # 0's first block applied to output 1.
    block = model.encoder.groups[0][0]
    np.testing.assert_allclose(
        block(layers[1], tf.constant(want["input_mask"])).numpy(), layers[2].numpy(),
        rtol=0, atol=1e-5 * float(np.abs(layers[2]).max()))


def test_uneven_assignment_uses_the_float_division():
    config = config_of("uneven")
    assert [config.group_of_layer(i) for i in range(3)] == [0, 0, 1]
    assert AlbertModel(config).encoder.embedding_hidden_mapping_in is None
    sparse = config_of("sparse_groups")
    assert sparse.groups == [0, 1]


def test_every_random_weight_is_drawn_independently():
    model = AlbertPretrainingModel(config_of("grouped"))
    assert shared_random_draws(model.weights) == []


def test_loss_is_masked_lm_plus_sentence_order():
    want = recorded("grouped")
    model = AlbertPretrainingModel(config_of("grouped"))
    outputs = model(inputs(want))
    features = {"masked_lm_ids": tf.constant([[5, 6, 7, 8], [9, 10, 11, 0], [12, 13, 0, 0]]),
                "masked_lm_weights": tf.constant([[1., 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]),
                "next_sentence_labels": tf.constant([[0], [1], [1]])}
    losses = pretraining_loss(outputs, features)
    log_probs = outputs["mlm_log_probs"].numpy()
    ids = features["masked_lm_ids"].numpy().reshape(-1)
    weights = features["masked_lm_weights"].numpy().reshape(-1)
    mlm = -(weights * log_probs[np.arange(len(ids)), ids]).sum() / (weights.sum() + 1e-5)
    sop = -outputs["nsp_log_probs"].numpy()[[0, 1, 2], [0, 1, 1]].mean()
    assert float(losses["total_loss"]) == pytest.approx(mlm + sop, rel=1e-6)


def test_keras_config_round_trip():
    model = AlbertModel(config_of("grouped"))
    again = AlbertModel.from_config(model.get_config())
    assert again.config == model.config
    layer = AlbertTransformer.from_config(model.encoder.get_config())
    assert layer.config == model.config


def test_a_bert_config_is_refused():
    bert = families.config_from_dict({"vocab_size": 40, "hidden_size": 16,
                                      "num_hidden_layers": 1, "num_attention_heads": 2,
                                      "intermediate_size": 24, "hidden_act": "gelu",
                                      "hidden_dropout_prob": 0.0,
                                      "attention_probs_dropout_prob": 0.0,
                                      "max_position_embeddings": 16, "type_vocab_size": 2,
                                      "initializer_range": 0.02})
    with pytest.raises(ValueError, match="model_type 'albert'"):
        AlbertModel(bert)
    with pytest.raises(TypeError, match="AlbertConfig"):
        AlbertPretrainingModel(bert)


ORIGINAL_REPO = ALBERT_ORIGINAL_REPO


def test_the_original_initialises_from_our_checkpoint(tmp_path):
    """What the original's run_pretraining.py and run_classifier.py do with --init_checkpoint
    (`get_assignment_map_from_checkpoint`, then `tf.train.init_from_checkpoint`) on a checkpoint
    bert_tf wrote: every variable of its AlbertModel is matched and its outputs are ours."""
    if not (ORIGINAL_REPO / "modeling.py").is_file():
        pytest.skip(f"no copy of google-research/albert at {ORIGINAL_REPO}")
    from tools.original import load_albert_module

    modeling = load_albert_module(ORIGINAL_REPO, "modeling")
    want = recorded("grouped")
    config = config_of("grouped")
    model = AlbertPretrainingModel(config)  # fresh random weights, not the recorded ones
    prefix = checkpoints.save_original_checkpoint(model, tmp_path / "model.ckpt-0",
                                                  global_step=0)
    ours = model.bert(inputs(want))
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        original = modeling.AlbertModel(
            config=modeling.AlbertConfig.from_dict(json.loads(
                (DATA / "grouped" / "albert_config.json").read_text())),
            is_training=False, input_ids=tf.constant(want["input_ids"]),
            input_mask=tf.constant(want["input_mask"]),
            token_type_ids=tf.constant(want["segment_ids"]))
        tvars = v1.trainable_variables()
        assignment, initialized = modeling.get_assignment_map_from_checkpoint(tvars, str(prefix))
        assert sorted(initialized) == sorted(
            [v.op.name for v in tvars] + [v.name for v in tvars])
        v1.train.init_from_checkpoint(str(prefix), assignment)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sequence, pooled = sess.run([original.get_sequence_output(),
                                         original.get_pooled_output()])
    assert_close(sequence, ours["sequence_output"].numpy(), "sequence_output")
    assert_close(pooled, ours["pooled_output"].numpy(), "pooled_output")
