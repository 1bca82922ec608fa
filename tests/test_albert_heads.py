"""bert_tf.albert.heads.SquadV2Head (in bert_tf.albert.squad_v2_task.SquadV2Model) against
google-research/albert's create_v2_model, recorded by tests/data/albert_squad_v2/make_expected.py
on the same weights (init.ckpt) and records: the inference beam on every predict window, the
training graph's outputs (end conditioned on the gold start) on a training batch, the
variables' names and shapes; and what the recording does not reach: a cut batch, float32
under mixed precision, the config round trip."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.heads import SquadV2Head
from bert_tf.albert.squad_v2_task import SquadV2Model
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.training import precision
from test_training_helpers import assert_close

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v2"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FLAGS = EXPECTED["flags"]


def config():
    return AlbertConfig.from_json_file(DATA / "albert_config.json")


@pytest.fixture(scope="module")
def model():
    model = SquadV2Model(config(), FLAGS["start_n_top"], FLAGS["end_n_top"],
                         FLAGS["dropout_prob"])
    report = load_original_checkpoint(model, str(DATA / "init.ckpt"))
    assert report.not_in_checkpoint == [] and report.unused_in_checkpoint == []
    return model


def recorded(prefix):
    values = np.load(DATA / "forward.npz")
    return {k[len(prefix):]: values[k] for k in values.files if k.startswith(prefix)}


def features(prefix):
    return {k: tf.constant(v) for k, v in recorded(prefix).items()}


def test_variables_are_the_originals(model):
    ours = {name: list(v.shape) for name, v in model.checkpoint_variables().items()}
    assert ours == {name: shape for name, shape in EXPECTED["model_variables"]}
    head = {n for n in ours if not n.startswith("bert/")}
    assert head == {"start_logits/dense/kernel", "start_logits/dense/bias",
                    "end_logits/dense_0/kernel", "end_logits/dense_0/bias",
                    "end_logits/LayerNorm/gamma", "end_logits/LayerNorm/beta",
                    "end_logits/dense_1/kernel", "end_logits/dense_1/bias",
                    "answer_class/dense_0/kernel", "answer_class/dense_0/bias",
                    "answer_class/dense_1/kernel"}


def test_inference_beam_matches_the_original(model):
    outputs = model(features("predict_"), training=False)
    want = recorded("inference_")
    assert want["start_top_index"].shape == (EXPECTED["counts"]["predict_features"],
                                             FLAGS["start_n_top"])
    for name in ("start_top_index", "end_top_index"):
        np.testing.assert_array_equal(outputs[name].numpy(), want[name], err_msg=name)
    for name in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        assert_close(outputs[name], want[name], name)


def test_training_outputs_match_the_original(model):
    """start/end log-probs (the end conditioned on the gold start) and cls_logits; the
    positions p_mask excludes hold -1e30 (minus the log-sum-exp: the same float32)."""
    batch = features("train_")
    outputs = model(batch, training=True)
    want = recorded("training_")
    masked = recorded("train_")["p_mask"] == 1
    for name in ("start_log_probs", "end_log_probs"):
        ours = outputs[name].numpy()
        np.testing.assert_array_equal(ours[masked], want[name][masked], err_msg=name)
        assert np.all(want[name][masked] <= -1e29)
        assert_close(ours[~masked], want[name][~masked], name)
    assert_close(outputs["cls_logits"], want["cls_logits"], "cls_logits")


def test_a_cut_batch_gives_the_same_outputs(model):
    """Positions past the longest input_mask (p_mask 1) change nothing: the dynamic padding
    of prediction and training."""
    batch = features("predict_")
    lengths = tf.reduce_sum(batch["input_mask"], axis=1).numpy()
    rows = np.flatnonzero(lengths < FLAGS["max_seq_length"])  # the windows of short contexts
    assert len(rows) >= 5
    batch = {k: tf.gather(v, rows) for k, v in batch.items()}
    length = int(lengths[rows].max())
    # gold starts for the training graph: [CLS] or the context's second-to-last piece
    batch["start_positions"] = tf.constant(
        [0 if i % 2 else int(lengths[r]) - 3 for i, r in enumerate(rows)], tf.int32)
    for training in (False, True):
        cut = {k: v[:, :length] if len(v.shape) == 2 else v for k, v in batch.items()}
        full, short = model(batch, training=training), model(cut, training=training)
        keys = (("start_top_index", "end_top_index", "start_top_log_probs", "end_top_log_probs")
                if not training else ())
        for name in keys + ("cls_logits",):
            np.testing.assert_allclose(short[name], full[name], rtol=1e-6, atol=1e-6,
                                       err_msg=name)
        if training:
            for name in ("start_log_probs", "end_log_probs"):
                real = batch["p_mask"].numpy()[:, :length] == 0
                np.testing.assert_allclose(short[name].numpy()[real],
                                           full[name].numpy()[:, :length][real], rtol=1e-6,
                                           atol=1e-6, err_msg=name)


def test_float32_under_mixed_precision():
    with precision.dtype_policy("bf16"):
        model = SquadV2Model(config())
    load_original_checkpoint(model, str(DATA / "init.ckpt"))
    assert model.bert.compute_dtype == "bfloat16"
    for layer in (model.head.start_dense, model.head.end_layer_norm, model.head.answer_dense_1):
        assert layer.compute_dtype == "float32"
    outputs = model(features("predict_"), training=False)
    for name in ("start_top_log_probs", "end_top_log_probs", "cls_logits"):
        assert outputs[name].dtype == tf.float32
    outputs = model(features("train_"), training=True)
    assert outputs["end_log_probs"].dtype == tf.float32


def test_config_round_trip():
    head = SquadV2Head(16, 0.1, start_n_top=3, end_n_top=2, dropout_rate=0.2,
                       layer_norm_eps=1e-6)
    copy = SquadV2Head.from_config(head.get_config())
    assert copy.get_config() == head.get_config()
    copy.build()
    assert {n: list(v.shape) for n, v in copy.checkpoint_variables("x/").items()} == {
        "x/start_logits/dense/kernel": [16, 1], "x/start_logits/dense/bias": [1],
        "x/end_logits/dense_0/kernel": [32, 16], "x/end_logits/dense_0/bias": [16],
        "x/end_logits/LayerNorm/gamma": [16], "x/end_logits/LayerNorm/beta": [16],
        "x/end_logits/dense_1/kernel": [16, 1], "x/end_logits/dense_1/bias": [1],
        "x/answer_class/dense_0/kernel": [32, 16], "x/answer_class/dense_0/bias": [16],
        "x/answer_class/dense_1/kernel": [16, 1]}
    model = SquadV2Model(config(), 3, 2, 0.0)
    again = SquadV2Model.from_config(model.get_config())
    assert (again.head.start_n_top, again.head.end_n_top) == (3, 2)
    assert isinstance(again, keras.Model)


def test_training_needs_the_gold_starts(model):
    batch = features("predict_")
    with pytest.raises(KeyError, match="start_positions"):
        model(batch, training=True)
