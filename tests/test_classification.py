"""The classifier's model side (ClassificationTask through the Trainer) against the original
run_classifier.py, recorded by tests/data/classifier_model/make_expected.py on the golden tiny
model: forward pass, optimizer steps with and without warmup, eval_results.txt,
test_results.tsv, checkpoints both ways; and mirrored = default, SIGKILL + resume = uninterrupted.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import golden_path

from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.tasks.classification import ClassificationTask, ClassifierOptions, run
from bert_tf.training.trainer import Trainer, TrainerOptions
from test_training_helpers import (
    assert_close, assert_matches_golden, assert_mirrored_equals_default,
    assert_eval_results_equal, assert_sigkill_and_resume_is_uninterrupted,
    finetune_driver_args, read_checkpoint, write_config, zero_gradient_bounds,
)

DATA = Path(__file__).resolve().parent / "data" / "classifier_model"
EXPECTED = json.loads((DATA / "expected.json").read_text())
LABELS = EXPECTED["labels"]
MAX_SEQ_LENGTH = EXPECTED["max_seq_length"]
BATCH_SIZE = EXPECTED["batch_size"]
TRAIN, EVAL, PREDICT = (str(DATA / n) for n in
                        ("train.tf_record", "eval.tf_record", "predict.tf_record"))
RECORDED_STEPS = len(EXPECTED["steps"]["0"])


def make_task(dropout_rate=0.0):
    # The recording is dropout-free (the original's head dropout is fixed at 0.1 in training).
    return ClassificationTask("mrpc", LABELS, MAX_SEQ_LENGTH, dropout_rate=dropout_rate)


def golden_config():
    return BertConfig.from_json_file(golden_path("train", "bert_config.json"))


def options(output_dir, **overrides):
    """The recording's run: batch 4 in file order, learning rate 1e-3 over 10 steps."""
    values = dict(output_dir=str(output_dir), train_batch_size=BATCH_SIZE,
                  eval_batch_size=BATCH_SIZE, learning_rate=EXPECTED["learning_rate"],
                  num_train_steps=EXPECTED["num_train_steps"], num_warmup_steps=0,
                  save_checkpoints_steps=RECORDED_STEPS, iterations_per_loop=RECORDED_STEPS,
                  shuffle_buffer_size=0, keep_checkpoint_max=0)
    values.update(overrides)
    return TrainerOptions(**values)


def read_features(path):
    spec = make_task().feature_spec(is_training=False)
    records = list(tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(1000))
    (batch,) = records
    return {k: tf.cast(v, tf.int32) for k, v in batch.items()}


def padded_batches():
    """The recording's global batches (file order, padded to max_seq_length)."""
    features = read_features(TRAIN)
    return [{k: v[BATCH_SIZE * t:BATCH_SIZE * (t + 1)] for k, v in features.items()}
            for t in range(RECORDED_STEPS)]


@pytest.fixture(scope="module")
def init_checkpoint(tmp_path_factory):
    """The golden init.ckpt with the recording's classifier head (head_init.npz)."""
    model = make_task().build_model(golden_config())
    report = load_original_checkpoint(model, golden_path("train", "init.ckpt"))
    assert sorted(report.not_in_checkpoint) == ["output_bias", "output_weights"]
    head = np.load(DATA / "head_init.npz")
    model.head.output_weights.assign(head["output_weights"])
    model.head.output_bias.assign(head["output_bias"])
    return save_original_checkpoint(
        model, tmp_path_factory.mktemp("init") / "bert_model.ckpt")


_TRAINED = {}


def trained(tmp_path_factory, init_checkpoint, warmup):
    """Our run of the recording's 10 steps from init_checkpoint (checkpoints every 3 steps);
    returns (output_dir, history). Cached per warmup for the module."""
    if warmup not in _TRAINED:
        output_dir = tmp_path_factory.mktemp(f"warmup{warmup}")
        trainer = Trainer(golden_config(), make_task(),
                          options(output_dir, init_checkpoint=init_checkpoint,
                                  num_warmup_steps=warmup))
        history = []
        trainer.train([TRAIN], step_callback=lambda step, values: history.append((step, values)))
        _TRAINED[warmup] = output_dir, history
    return _TRAINED[warmup]


def copy_checkpoint(source_prefix, output_dir):
    """output_dir holding only `source_prefix`'s files, as the latest checkpoint."""
    output_dir.mkdir()
    source_prefix = Path(source_prefix)
    for path in source_prefix.parent.glob(source_prefix.name + ".*"):
        shutil.copy(path, output_dir / path.name)
    (output_dir / "checkpoint").write_text(f'model_checkpoint_path: "{source_prefix.name}"\n')
    return output_dir


def test_forward_matches_the_original(init_checkpoint):
    task = make_task()
    model = task.build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    features = read_features(EVAL)
    outputs = model(features, training=False)
    expected = EXPECTED["forward"]
    assert len(expected["logits"]) == EXPECTED["counts"]["dev"]
    assert_close(outputs["logits"], expected["logits"], "logits")
    assert_close(outputs["probabilities"], expected["probabilities"], "probabilities")
    assert_close(task.per_example_loss(outputs, features), expected["per_example_loss"],
                 "per_example_loss")


@pytest.mark.slow
@pytest.mark.parametrize("warmup", [0, 3])
def test_three_steps_match_the_original(tmp_path_factory, init_checkpoint, warmup):
    output_dir, history = trained(tmp_path_factory, init_checkpoint, warmup)
    for (step, ours), expected in zip(history, EXPECTED["steps"][str(warmup)]):
        assert step == expected["step"]
        assert ours["total_loss"] == pytest.approx(expected["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(expected["learning_rate"], rel=1e-6,
                                                      abs=1e-12), step
    prefix = output_dir / f"model.ckpt-{RECORDED_STEPS}"
    ours = read_checkpoint(prefix)
    original = read_checkpoint(DATA / f"warmup{warmup}" / f"model.ckpt-{RECORDED_STEPS}")
    bounds = zero_gradient_bounds(make_task(), golden_config(), [init_checkpoint, prefix],
                                  padded_batches(), [s["learning_rate"] for s in
                                                     EXPECTED["steps"][str(warmup)]])
    assert_matches_golden(ours, original, zero_gradients=bounds)


@pytest.mark.slow
def test_our_checkpoint_holds_what_the_originals_saver_restores(tmp_path_factory,
                                                                init_checkpoint):
    """The variables (with adam_m/adam_v and global_step) the original's training graph
    creates, by name, shape and dtype: what its tf.compat.v1.train.Saver needs to restore."""
    output_dir, _ = trained(tmp_path_factory, init_checkpoint, 0)
    reader = tf.train.load_checkpoint(str(output_dir / f"model.ckpt-{RECORDED_STEPS}"))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    ours = {name: (list(shapes[name]), dtypes[name].name) for name in shapes}
    variables = json.loads((DATA / "original_variables.json").read_text())
    original = {v["name"]: (v["shape"], v["dtype"]) for v in variables}
    assert ours == original


@pytest.mark.slow
def test_eval_and_predict_after_three_steps_match_the_original(tmp_path_factory, tmp_path,
                                                               init_checkpoint):
    trained_dir, _ = trained(tmp_path_factory, init_checkpoint, 0)
    output_dir = copy_checkpoint(trained_dir / f"model.ckpt-{RECORDED_STEPS}", tmp_path / "eval")
    trainer = Trainer(golden_config(), make_task(), options(output_dir))
    assert trainer.restore(weights_only=True)
    trainer.evaluate([EVAL], pad_final_batch=True)

    ours = (output_dir / "eval_results.txt").read_text().splitlines()
    original = (DATA / "eval_results.txt").read_text().splitlines()
    # Ours adds the metric MRPC is reported with (eval_f1, checked in test_classifier_metrics);
    # every other line is the original's.
    assert [line for line in ours if line.startswith("eval_f1 = ")]
    ours = [line for line in ours if not line.startswith("eval_f1 = ")]
    assert len(ours) == len(original)
    for line, expected in zip(ours, original):
        key, value = line.split(" = ")
        expected_key, expected_value = expected.split(" = ")
        assert key == expected_key
        if key == "global_step":
            assert value == expected_value
        else:
            assert float(value) == pytest.approx(float(expected_value), rel=1e-5), key

    rows = []
    for batch in trainer.predict([PREDICT], BATCH_SIZE):
        real = batch["is_real_example"] > 0
        rows.extend(batch["probabilities"][real])
    ours = ["\t".join(str(p) for p in row) for row in rows]
    original = (DATA / "test_results.tsv").read_text().splitlines()
    assert len(ours) == len(original) == EXPECTED["counts"]["test"]
    assert_close([[float(x) for x in line.split("\t")] for line in ours],
                 [[float(x) for x in line.split("\t")] for line in original], "probabilities")


@pytest.mark.slow
def test_training_resumes_from_the_originals_checkpoint(tmp_path, init_checkpoint):
    """A new run on an output_dir holding the original's model.ckpt-3 (warmup 3) continues as
    a new Estimator.train of the original does: from its weights, Adam moments and
    global_step, with the input read again from the first record."""
    output_dir = copy_checkpoint(DATA / "warmup3" / f"model.ckpt-{RECORDED_STEPS}",
                                 tmp_path / "resumed")
    trainer = Trainer(golden_config(), make_task(),
                      options(output_dir, init_checkpoint=init_checkpoint, num_warmup_steps=3))
    history = []
    trainer.train([TRAIN], step_callback=lambda step, values: history.append((step, values)))
    expected = EXPECTED["resume"]
    assert [s for s, _ in history] == [s["step"] for s in expected["steps"]]
    for (step, ours), original in zip(history, expected["steps"]):
        assert ours["total_loss"] == pytest.approx(original["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(original["learning_rate"], rel=1e-6), step
    final = read_checkpoint(output_dir / f"model.ckpt-{EXPECTED['num_train_steps']}")
    assert int(final["global_step"]) == expected["global_step"]
    for name, value in expected["head"].items():
        assert_close(final[name], value, name)


def driver_args(bert_config_file, dropout_rate=0.0, **common):
    """FINETUNE_DRIVER's arguments for the classifier on the recording's records, as a
    function of the output_dir (and overrides)."""
    task = {"task_name": "mrpc", "label_list": LABELS, "max_seq_length": MAX_SEQ_LENGTH,
            "dropout_rate": dropout_rate}
    return lambda output_dir, **overrides: finetune_driver_args(
        output_dir, bert_config_file, task, [TRAIN], BATCH_SIZE, eval_files=[EVAL],
        **common, **overrides)


# --- dynamic padding ------------------------------------------------------------------------------
# The recording's records are 17 to 32 pieces long; with a padding width of 4 the first two
# batches (file order, 4 records) are cut to 28 and 24 positions.
CUT_WIDTH = 4


@pytest.mark.slow
@pytest.mark.parametrize("accumulation", [1, 2])
def test_three_steps_on_cut_batches_match_the_original(tmp_path, init_checkpoint, accumulation):
    """Cut batches (and their gradient-accumulation micro-batches, which share the cut)
    give the original's padded steps."""
    trainer = Trainer(golden_config(), make_task(),
                      options(tmp_path, init_checkpoint=init_checkpoint,
                              padding_width=CUT_WIDTH,
                              gradient_accumulation_steps=accumulation))
    stream = trainer.input_stream([TRAIN], BATCH_SIZE, is_training=True)
    lengths = [stream.get_next()["input_ids"].shape[1] for _ in range(RECORDED_STEPS)]
    assert lengths == [28, 24, 32]
    history = []
    trainer.train([TRAIN], step_callback=lambda step, values: history.append((step, values)))
    for (step, ours), expected in zip(history, EXPECTED["steps"]["0"]):
        assert ours["total_loss"] == pytest.approx(expected["loss"], rel=1e-5), step
    prefix = tmp_path / f"model.ckpt-{RECORDED_STEPS}"
    ours = read_checkpoint(prefix)
    original = read_checkpoint(DATA / "warmup0" / f"model.ckpt-{RECORDED_STEPS}")
    # The key biases' noise bound of the padded batches covers the cut ones: cutting removes
    # rounding events (padded keys have softmax weight 0) and adds none.
    assert_matches_golden(ours, original, zero_gradients=zero_gradient_bounds(
        make_task(), golden_config(), [init_checkpoint, prefix], padded_batches(),
        [s["learning_rate"] for s in EXPECTED["steps"]["0"]],
        extra_additions=accumulation - 1))


@pytest.mark.slow
def test_eval_and_test_results_in_length_order_equal_the_padded_run(tmp_path_factory,
                                                                    tmp_path, init_checkpoint):
    """run_classifier's eval_results.txt and test_results.tsv with dynamic padding (records in
    length order, cut batches) equal those of batches padded to max_seq_length."""
    trained_dir, _ = trained(tmp_path_factory, init_checkpoint, 0)
    prefix = trained_dir / f"model.ckpt-{RECORDED_STEPS}"
    out = {}
    for name, overrides in {"padded": dict(dynamic_padding=False),
                            "cut": dict(padding_width=CUT_WIDTH)}.items():
        output_dir = copy_checkpoint(prefix, tmp_path / name)
        run(golden_config(), ClassifierOptions(
            data_dir=str(DATA), task_name="mrpc", vocab_file=str(golden_path("train",
                                                                             "vocab.txt")),
            output_dir=str(output_dir), max_seq_length=MAX_SEQ_LENGTH,
            eval_batch_size=BATCH_SIZE, predict_batch_size=BATCH_SIZE, **overrides),
            do_eval=True, do_predict=True)
        out[name] = output_dir
    assert_eval_results_equal(out["padded"] / "eval_results.txt",
                              out["cut"] / "eval_results.txt")
    rows = {name: [[float(x) for x in line.split("\t")]
                   for line in (path / "test_results.tsv").read_text().splitlines()]
            for name, path in out.items()}
    assert len(rows["cut"]) == len(rows["padded"]) == EXPECTED["counts"]["test"]
    np.testing.assert_allclose(rows["cut"], rows["padded"], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_mirrored_on_two_cpus_with_cut_batches_equals_default(tmp_path, init_checkpoint):
    """Two replicas share one cut length (the longest of the global batch); eval in length
    order gathers the per-example outputs of both, and the 11 eval records' padded last batch
    is split between them. (The only mirrored fine-tuning run: the padded batches' mirrored
    step is tested by tests/test_training_loop.py and tests/test_training_composition.py,
    the SQuAD and tagging losses' replica shares by unit tests in their test files.)"""
    config_file = golden_path("train", "bert_config.json")  # dropout 0.0, as the head here
    single, mirrored = assert_mirrored_equals_default(tmp_path, driver_args(
        config_file, init_checkpoint=str(init_checkpoint), do_eval=True,
        padding_width=CUT_WIDTH))
    assert sorted(mirrored["results"]) == sorted(single["results"]) == [
        "eval_accuracy", "eval_f1", "eval_loss", "global_step", "loss"]
    for key, value in single["results"].items():
        assert mirrored["results"][key] == pytest.approx(value, rel=1e-5), key


@pytest.mark.slow
def test_group_by_length_sigkill_and_resume_gives_the_uninterrupted_weights(tmp_path):
    """With the head's dropout (0.1) and the encoder's, a shuffled input and --group_by_length:
    a run killed after its step-4 checkpoint (in another process) and resumed continues the
    input position (inside a window of sorted records) and the dropout draws exactly as the
    uninterrupted run. (The only fine-tuning SIGKILL run: the plain shuffled input's resume
    is also tested by tests/test_training_loop.py and tests/test_electra_pretraining.py.)"""
    config_file = write_config(tmp_path / "bert_config.json", vocab_size=509)
    total = 12
    assert_sigkill_and_resume_is_uninterrupted(tmp_path, driver_args(
        config_file, dropout_rate=0.1, num_train_steps=total, save_checkpoints_steps=2,
        num_warmup_steps=3, keep_checkpoint_max=3, shuffle_buffer_size=100, seed=7,
        group_by_length=True, padding_width=CUT_WIDTH), total)
