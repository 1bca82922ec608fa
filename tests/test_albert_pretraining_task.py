"""ALBERT pretraining on the trainer against google-research/albert's run_pretraining.py,
recorded by tests/data/albert_pretraining/make_expected.py: 3 LAMB and 3 AdamW steps from the
same checkpoint (records read in file order, --shuffle_buffer_size=0), the eval metrics,
--init_from_group0; the original's Saver restoring our checkpoint (live, with a copy of the
original); the .meta files; eval_results.txt and model.ckpt-best."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.estimator import copy_to_best
from bert_tf.albert.pretraining_task import (
    AlbertPretrainer, AlbertPretrainingOptions, eval_results_text, load_from_group0,
)
from bert_tf.training.trainer import TrainingError
from rounding_bounds import adam_step_bound
from test_training_helpers import REPO, env, read_checkpoint
from conftest import ALBERT_ORIGINAL_REPO

DATA = Path(__file__).resolve().parent / "data" / "albert_pretraining"
MODEL = Path(__file__).resolve().parent / "data" / "albert_model" / "grouped"
EXPECTED = json.loads((DATA / "expected.json").read_text())
ORIGINAL = ALBERT_ORIGINAL_REPO
STEPS = 3


def options(tmp_path, optimizer="lamb", **overrides):
    run = {k: v for k, v in EXPECTED["runs"][optimizer].items()
           if k not in ("steps", "variables")}
    args = dict(run, output_dir=str(tmp_path / optimizer), input_files=[str(DATA / "records.tfrecord")],
                init_checkpoint=str(MODEL / "model.ckpt"), optimizer=optimizer,
                max_seq_length=16, max_predictions_per_seq=3, train_batch_size=4,
                eval_batch_size=4, max_eval_steps=2, shuffle_buffer_size=0,
                save_checkpoints_steps=1000, iterations_per_loop=1, keep_checkpoint_max=0)
    args.update(overrides)
    return AlbertPretrainingOptions(**args)


def config():
    return AlbertConfig.from_json_file(MODEL / "albert_config.json")


def train_steps(trainer, steps):
    """`steps` steps of the trainer's own training function and input stream; returns each
    step's values and the checkpoint saved after them."""
    assert trainer.restore() is None  # init_checkpoint's weights, fresh slots, step 0
    stream = trainer.input_stream(trainer.options.input_files, 4, is_training=True)
    train = trainer.make_train_function(stream)
    history = []
    for _ in range(steps):
        values = train(tf.constant(1, tf.int32))
        history.append({k: float(v.numpy()[0]) for k, v in values.items()})
    return history, trainer.save(stream)


@pytest.fixture(scope="module")
def lamb_run(tmp_path_factory):
    trainer = AlbertPretrainer(config(), options(tmp_path_factory.mktemp("lamb")))
    return trainer, *train_steps(trainer, STEPS)


def zero_gradient_names(names):
    # The key biases: their gradient is 0 in real arithmetic (softmax ignores a constant added
    # to a query's scores), so Adam turns rounding noise into their moves.
    return {n for n in names if "/key/bias" in n}


@pytest.mark.slow  # two 3-step runs of a tiny model
@pytest.mark.parametrize("optimizer", ["lamb", "adamw"])
def test_three_steps_match_the_original(optimizer, tmp_path, lamb_run):
    if optimizer == "lamb":
        trainer, history, prefix = lamb_run
    else:
        trainer = AlbertPretrainer(config(), options(tmp_path, optimizer))
        history, prefix = train_steps(trainer, STEPS)
    want = EXPECTED["runs"][optimizer]
    for ours, step in zip(history, want["steps"], strict=True):
        assert ours["total_loss"] == pytest.approx(step["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(step["learning_rate"], rel=1e-6), step
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / f"{optimizer}_after_3_steps.npz"))
    # Every variable of the original's training graph (slots adam_m/adam_v, int64 global_step).
    reader = tf.train.load_checkpoint(prefix)
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    assert {n: (list(shapes[n]), dtypes[n].name) for n in shapes} == {
        v["name"]: (v["shape"], v["dtype"]) for v in want["variables"]}
    assert int(ours["global_step"]) == int(original["global_step"]) == STEPS
    start = read_checkpoint(MODEL / "model.ckpt")
    noise = zero_gradient_names(start)
    # Adam's largest move over the steps, whatever its gradients (Cauchy-Schwarz; excluded
    # from decay and, in LAMB, from the trust ratio).
    largest_move = sum(s["learning_rate"] * adam_step_bound(t + 1)
                       for t, s in enumerate(want["steps"]))
    for name, expected in original.items():
        if name == "global_step":
            continue
        base = name.rsplit("/adam_", 1)[0]
        if base in noise:
            if name == base:
                for values in (ours[name], expected):
                    assert np.all(np.abs(values - start[name]) <= largest_move * (1 + 1e-6))
            continue
        actual = ours[name]
        if name.endswith("/adam_v"):
            # v sums squared gradients, so its rounding error is twice the gradients' relative
            # error; compare it in the gradients' units (sqrt v, what the update divides by).
            actual, expected = np.sqrt(actual), np.sqrt(expected)
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5 * scale, err_msg=name)


def test_eval_matches_the_original(tmp_path):
    trainer = AlbertPretrainer(config(), options(tmp_path))
    assert trainer.restore_weights() is None
    results = trainer.evaluate()
    want = EXPECTED["eval"]
    assert sorted(results) == sorted(want)
    for key, value in want.items():
        assert results[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key
    text = (tmp_path / "lamb" / "eval_results.txt").read_text()
    assert [line.split(" = ")[0] for line in text.splitlines()] == sorted(want)
    assert not list((tmp_path / "lamb").glob("model.ckpt-best*"))  # nothing evaluated of its own


def test_init_from_group0_starts_every_group_from_group_0():
    """--init_from_group0 with a checkpoint holding only group 0: the original's initial
    values, except for group 0's attention and FFN, which the original leaves random (its
    assignment map loses them, see make_expected.py) and ours loads from the checkpoint."""
    from bert_tf.albert.pretraining import AlbertPretrainingModel

    model = AlbertPretrainingModel(config())
    sources = load_from_group0(model, str(DATA / "group0.ckpt"))
    ours = {n: v.numpy() for n, v in checkpoints.original_variable_map(model).items()}
    original = dict(np.load(DATA / "group0_init.npz"))
    group0 = read_checkpoint(DATA / "group0.ckpt")
    assert sorted(ours) == sorted(original)
    lost = [n for n in ours if "/group_0/" in n and ("/attention_1/" in n or "/ffn_1/" in n)]
    assert len(lost) == 24
    for name, value in ours.items():
        if name in lost:
            np.testing.assert_array_equal(value, group0[name])
            assert not np.array_equal(original[name], group0[name])
        else:
            np.testing.assert_array_equal(value, original[name], err_msg=name)
    assert sources["bert/encoder/transformer/group_1/inner_group_1/LayerNorm/gamma"] == (
        "bert/encoder/transformer/group_0/inner_group_1/LayerNorm/gamma")
    # Without the option, a checkpoint lacking group 1 does not fit: one line naming it.
    trainer = AlbertPretrainer(config(), AlbertPretrainingOptions(
        output_dir="/nonexistent/out", input_files=[], init_checkpoint=str(DATA / "group0.ckpt"),
        max_seq_length=16, max_predictions_per_seq=3))
    with pytest.raises(TrainingError, match="group_1"):
        trainer.restore()


def test_the_original_restores_our_checkpoint(lamb_run, tmp_path):
    """The original's Saver restores every variable of its LAMB training graph from our
    checkpoint after 3 steps, and computes our loss of batch 0 there."""
    if not (ORIGINAL / "run_pretraining.py").is_file():
        pytest.skip(f"no copy of google-research/albert at {ORIGINAL} (set ALBERT_ORIGINAL_REPO)")
    trainer, _, prefix = lamb_run
    proc = subprocess.run(
        [sys.executable, str(DATA / "make_expected.py"), f"--original_repo={ORIGINAL}",
         f"--restore={prefix}", "--optimizer=lamb"],
        capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    restored = json.loads(proc.stdout.strip().splitlines()[-1])
    batch = next(iter(tf.data.TFRecordDataset(str(DATA / "records.tfrecord")).map(
        lambda r: tf.io.parse_single_example(r, trainer.task.feature_spec(False))).batch(4)))
    batch = {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in batch.items()}
    outputs = trainer.model(batch, training=False)
    loss = float(trainer.task.compute_loss(outputs, batch, trainer.task.local_normalizers(batch))
                 ["total_loss"])
    assert restored["global_step"] == STEPS
    assert restored["loss"] == pytest.approx(loss, rel=1e-5)


def test_meta_files_restore_the_checkpoint_in_a_tf1_graph(lamb_run):
    """model.ckpt-N.meta (the original's eval loop copies it): a MetaGraphDef whose Saver
    restores every tensor of the checkpoint."""
    _, _, prefix = lamb_run
    graph = tf.Graph()
    with graph.as_default():
        saver = tf.compat.v1.train.import_meta_graph(prefix + ".meta")
        names = {v.op.name for v in tf.compat.v1.global_variables()}
        with tf.compat.v1.Session(graph=graph) as session:
            saver.restore(session, prefix)
            step = session.run(tf.compat.v1.train.get_global_step())
    assert names == set(read_checkpoint(prefix)) and step == STEPS


def test_best_checkpoint_copy_and_eval_results_text(lamb_run, tmp_path):
    trainer, _, prefix = lamb_run
    copied = copy_to_best(prefix)
    best = os.path.join(os.path.dirname(prefix), "model.ckpt-best")
    assert [t for _, t in copied] == [f"{best}.{e}" for e in
                                     ("meta", "data-00000-of-00001", "index")]
    assert read_checkpoint(best).keys() == read_checkpoint(prefix).keys()
    assert not [p for p in os.listdir(os.path.dirname(prefix)) if ".tmp-" in p]
    results = {"global_step": 3, "loss": np.float32(4.5), "masked_lm_accuracy": np.float32(0.25)}
    assert eval_results_text(results, copied).splitlines() == [
        "global_step = 3", *(f"saved {s} to {t}" for s, t in copied), "loss = 4.5",
        "masked_lm_accuracy = 0.25"]


def test_masked_lm_budget_is_refused_with_the_reason(tmp_path):
    with pytest.raises(TrainingError, match="masked_lm_budget=0.3.*KeyError"):
        options(tmp_path, masked_lm_budget=0.3).validate(config())
