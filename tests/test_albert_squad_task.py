"""ALBERT's SQuAD 1.1 task (bert_tf.albert.squad_task) against google-research/albert's
run_squad_v1.py, recorded by tests/data/albert_squad_v1/make_expected.py on a tiny ALBERT: the
records, the forward logits, 3 optimizer steps and the checkpoint's variables; the original's
prediction loop over checkpoints (eval_results.txt, model.ckpt-best, pruning) on stand-in
checkpoints; the feature files (ours read by the original and the original's by ours)."""

import gzip
import json
import os
import random
import sys
import types
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert import squad_data, squad_task
from bert_tf.albert.finetuning import AlbertFineTuningTrainer
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.training.trainer import TrainerOptions
from conftest import ALBERT_ORIGINAL_REPO, load_recorder
from test_training_helpers import (assert_adam_steps_match, assert_checkpoint_variables,
                                   assert_close, read_checkpoint)

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v1"
EXPECTED = json.load(gzip.open(DATA / "expected.json.gz", "rt", encoding="utf-8"))
recorder = load_recorder("albert_squad_v1")
SEQ = recorder.MAX_SEQ_LENGTH
STEPS = recorder.STEPS


def config():
    return AlbertConfig.from_json_file(DATA / "albert_config.json")


def tokenizer():
    return FullTokenizer(None, recorder.DO_LOWER_CASE, recorder.SPM_MODEL)


def parse(path, is_training, names=None):
    spec = squad_data.record_feature_spec(SEQ, is_training, is_v2=True)
    (batch,) = tf.data.TFRecordDataset(str(path)).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(10000)
    return {k: v.numpy() for k, v in batch.items() if names is None or k in names}


@pytest.mark.parametrize("is_training", [True, False])
def test_records_equal_the_originals(tmp_path, is_training):
    examples = squad_data.read_squad_examples(recorder.SQUAD_FILE, is_training)
    if is_training:
        random.Random(12345).shuffle(examples)
    path = tmp_path / "records.tf_record"
    with squad_data.FeatureWriter(path, is_training) as writer:
        squad_data.convert_examples_to_features(
            examples, tokenizer(), SEQ, recorder.DOC_STRIDE, recorder.MAX_QUERY_LENGTH,
            is_training, writer.process_feature, recorder.DO_LOWER_CASE)
    name = "train" if is_training else "predict"
    assert writer.num_features == EXPECTED["counts"][name]["features"]
    ours, theirs = parse(path, is_training), parse(DATA / f"{name}.tf_record", is_training)
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


def test_forward_matches_the_original():
    task = squad_task.AlbertSquadV1Task(SEQ)
    model = task.build_model(config())
    report = load_original_checkpoint(model, str(DATA / "model.ckpt"))
    assert not report.not_in_checkpoint and not report.unused_in_checkpoint
    features = {k: tf.constant(v, tf.int32) for k, v in parse(
        DATA / "predict.tf_record", False, ("input_ids", "input_mask", "segment_ids")).items()}
    outputs = model(features, training=False)
    expected = np.load(DATA / "forward.npz")
    for name in ("start_logits", "end_logits"):
        assert_close(outputs[name], expected[name], name)


def test_the_task_parses_v1s_features():
    spec = squad_task.AlbertSquadV1Task(SEQ).feature_spec(True)
    assert "p_mask" not in spec and "is_impossible" in spec
    assert squad_task.AlbertSquadV1Task(SEQ).describe() == {"task": "albert_squad_v1"}


def train_options(output_dir, **overrides):
    values = dict(output_dir=str(output_dir), init_checkpoint=str(DATA / "model.ckpt"),
                  train_batch_size=recorder.BATCH_SIZE, learning_rate=recorder.LEARNING_RATE,
                  num_train_steps=recorder.NUM_TRAIN_STEPS, num_warmup_steps=0,
                  save_checkpoints_steps=STEPS, iterations_per_loop=1, shuffle_buffer_size=0,
                  keep_checkpoint_max=0)
    values.update(overrides)
    return TrainerOptions(**values)


def zero_gradient_names(names, config):
    """The variables whose gradient is 0 in real arithmetic, whose moves are Adam's rounding
    noise: the key biases (softmax ignores a constant added to a query's scores),
    cls/squad/output_bias (a constant added to every position's logit) and the FFN LayerNorm
    beta of the group only the last layer runs (the same constant, through the span weights)."""
    groups = [int(layer / config.num_hidden_layers * config.num_hidden_groups)
              for layer in range(config.num_hidden_layers)]
    last_only = groups[-1] if groups.count(groups[-1]) == 1 else None
    beta = (f"bert/encoder/transformer/group_{last_only}/inner_group_"
            f"{config.inner_group_num - 1}/LayerNorm_1/beta")
    return {n for n in names if "/key/bias" in n or n == "cls/squad/output_bias" or n == beta}


@pytest.mark.slow  # 3 steps of a tiny model
def test_three_steps_match_the_original(tmp_path):
    trainer = AlbertFineTuningTrainer(config(), squad_task.AlbertSquadV1Task(SEQ),
                                      train_options(tmp_path / "out"))
    history = []
    trainer.train([str(DATA / "train.tf_record")],
                  step_callback=lambda step, values: history.append((step, values)))
    for (step, ours), want in zip(history, EXPECTED["steps"]):
        assert step == want["step"]
        assert ours["total_loss"] == pytest.approx(want["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(want["learning_rate"], rel=1e-6), step
    prefix = tmp_path / "out" / f"model.ckpt-{STEPS}"
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / "after_3_steps.npz"))
    # Every variable of the original's training graph, with its dtype (no Adam slots for
    # bert/pooler: the span head does not use it).
    assert_checkpoint_variables(prefix, EXPECTED["variables"])
    assert "bert/pooler/dense/kernel" in ours and "bert/pooler/dense/kernel/adam_m" not in ours
    assert int(ours["global_step"]) == int(original["global_step"]) == STEPS
    start = read_checkpoint(DATA / "model.ckpt")
    noise = zero_gradient_names(start, config())
    assert len(noise) == 4  # 2 groups' key biases, the output bias, one beta
    assert_adam_steps_match(ours, original, start, EXPECTED["steps"], noise)
    # The Estimator's checkpoints: model.ckpt-0 before the first step, a .meta beside each.
    assert (tmp_path / "out" / "model.ckpt-0.index").exists()
    for step in (0, STEPS):
        assert (tmp_path / "out" / f"model.ckpt-{step}.meta").exists()


# -- the prediction loop ---------------------------------------------------------------------
def _stand_in_checkpoints(directory, steps):
    directory.mkdir(parents=True, exist_ok=True)
    for step in steps:
        for ext in ("meta", "data-00000-of-00001", "index"):
            (directory / f"model.ckpt-{step}.{ext}").write_text(f"{step}")


def _scores(directory, f1_of_step):
    calls = []

    def get_result(prefix):
        step = int((Path(prefix + ".index")).read_text())
        calls.append(os.path.basename(prefix))
        return {"exact_match": f1_of_step[step] / 2, "f1": f1_of_step[step]}, step

    return get_result, calls


def test_prediction_loop_writes_the_originals_eval_results(tmp_path):
    out = tmp_path / "out"
    _stand_in_checkpoints(out, [0, 1000, 2000, 3000, 3500])
    f1 = {0: 10.0, 1000: 50.0, 2000: 40.0, 3000: 60.0, 3500: 55.5}
    get_result, calls = _scores(out, f1)
    result = squad_task.evaluate_checkpoints(str(out), get_result, num_train_steps=3500)
    assert calls == ["model.ckpt-0", "model.ckpt-1000", "model.ckpt-2000", "model.ckpt-3000",
                     "model.ckpt-3500", "model.ckpt-best"]
    assert result == {"exact_match": 30.0, "f1": 60.0}

    def block(step, saved, best):
        lines = [f"exact_match = {f1[step] / 2}", f"f1 = {f1[step]}"]
        lines += [f"saved {out}/model.ckpt-{step}.{ext} to {out}/model.ckpt-best.{ext}"
                  for ext in ("meta", "data-00000-of-00001", "index")] if saved else []
        return lines + [f"best f1 = {best}", "=" * 50]

    expected = (block(0, True, 10.0) + block(1000, True, 50.0) + block(2000, False, 50.0) +
                block(3000, True, 60.0) + block(3500, False, 60.0) +
                ["exact_match = 30.0", "f1 = 60.0", "best perf happened at step: 3000"])
    assert (out / "eval_results.txt").read_text() == "\n".join(expected)
    # A checkpoint with more than two newer ones is removed after its score.
    remaining = sorted(p.name for p in out.glob("model.ckpt-*.index"))
    assert remaining == ["model.ckpt-2000.index", "model.ckpt-3000.index",
                         "model.ckpt-3500.index", "model.ckpt-best.index"]
    assert (out / "model.ckpt-best.index").read_text() == "3000"

    # Again on the same directory: model.ckpt-best first (step 3000), then what is newer; a
    # passed-over checkpoint with more than one newer is removed.
    get_result, calls = _scores(out, f1)
    squad_task.evaluate_checkpoints(str(out), get_result)
    assert calls == ["model.ckpt-best", "model.ckpt-3500", "model.ckpt-best"]
    assert sorted(p.name for p in out.glob("model.ckpt-*.index")) == [
        "model.ckpt-3000.index", "model.ckpt-3500.index", "model.ckpt-best.index"]
    assert (out / "eval_results.txt").read_text() == "\n".join(
        block(3500, False, 60.0) +
        ["exact_match = 30.0", "f1 = 60.0", "best perf happened at step: 3000"])


def test_prediction_loop_without_checkpoints(tmp_path):
    with pytest.raises(squad_task.AlbertSquadError, match="no checkpoint"):
        squad_task.evaluate_checkpoints(str(tmp_path), lambda prefix: None)
    result = squad_task.evaluate_checkpoints(
        str(tmp_path), lambda prefix: None,
        init_result=lambda: ({"exact_match": 1.0, "f1": 2.0}, 0))
    assert result == {"exact_match": 1.0, "f1": 2.0}
    assert (tmp_path / "eval_results.txt").read_text() == (
        "exact_match = 1.0\nf1 = 2.0\nbest perf happened at step: 0")


# -- the feature files -----------------------------------------------------------------------
def _predict_features():
    examples = squad_data.read_squad_examples(recorder.SQUAD_FILE, False)
    features = []
    squad_data.convert_examples_to_features(
        examples, tokenizer(), SEQ, recorder.DOC_STRIDE, recorder.MAX_QUERY_LENGTH, False,
        features.append, recorder.DO_LOWER_CASE)
    return features


def _attributes(feature):
    return {name: getattr(feature, name) for name in squad_data.FEATURE_ATTRIBUTES}


def test_feature_file_round_trip(tmp_path):
    features = _predict_features()
    path = tmp_path / "features.pkl"
    squad_data.save_features(path, features)
    loaded = squad_data.load_features(path)
    assert [_attributes(f) for f in loaded] == [_attributes(f) for f in features]


@pytest.mark.parametrize("content", [b"not a pickle", b"\x80\x04\x95"])
def test_bad_feature_file_is_named(tmp_path, content):
    path = tmp_path / "features.pkl"
    path.write_bytes(content)
    with pytest.raises(squad_data.SquadDataError, match="features.pkl: not a file of SQuAD"):
        squad_data.load_features(path)


def test_feature_file_loads_no_other_class(tmp_path):
    import pickle

    path = tmp_path / "features.pkl"
    path.write_bytes(pickle.dumps([os.system]))
    with pytest.raises(squad_data.SquadDataError, match="posix.system"):
        squad_data.load_features(path)


def test_feature_files_interoperate_with_the_original(tmp_path):
    """Ours unpickles in the original's module as its InputFeatures; its pickle loads here."""
    if not (ALBERT_ORIGINAL_REPO / "squad_utils.py").exists():
        pytest.skip(f"no copy of google-research/albert at {ALBERT_ORIGINAL_REPO}")
    import pickle

    from tools.original import load_albert_module

    original = load_albert_module(ALBERT_ORIGINAL_REPO, "squad_utils")
    # What `python -m albert.run_squad_v1` has: the package albert and its squad_utils.
    package = types.ModuleType("albert")
    package.squad_utils = original
    modules = {"albert": package, "albert.squad_utils": original}
    features = _predict_features()
    ours = tmp_path / "ours.pkl"
    squad_data.save_features(ours, features)
    with mock.patch.dict(sys.modules, modules):
        with open(ours, "rb") as f:
            theirs_view = pickle.load(f)
    assert all(type(f) is original.InputFeatures for f in theirs_view)
    assert [_attributes(f) for f in theirs_view] == [_attributes(f) for f in features]

    original_features = []
    original.convert_examples_to_features(
        original.read_squad_examples(recorder.SQUAD_FILE, False),
        original.tokenization.FullTokenizer(None, recorder.DO_LOWER_CASE, recorder.SPM_MODEL),
        SEQ, recorder.DOC_STRIDE, recorder.MAX_QUERY_LENGTH, False, original_features.append,
        recorder.DO_LOWER_CASE)
    theirs = tmp_path / "theirs.pkl"
    assert original.InputFeatures.__module__ == "albert.squad_utils"
    with mock.patch.dict(sys.modules, modules):
        with open(theirs, "wb") as f:
            pickle.dump(original_features, f)
    loaded = squad_data.load_features(theirs)
    assert [_attributes(f) for f in loaded] == [_attributes(f) for f in features]
