"""`python -m bert_tf.albert.run_squad_v2` (bert_tf.albert.squad_v2_task.run) end to end against
google-research/albert's run_squad_v2, recorded by tests/data/albert_squad_v2/make_expected.py:
from the same checkpoint, 3 training steps on train.json (12 questions, batch 4, 1 epoch) with
the features of bert_tf.albert.squad_data, then prediction on predict.json (impossible
questions, contexts of several windows, a paragraph the alignment drops): the records, the
losses, the checkpoints its Estimator leaves (model.ckpt-0 and model.ckpt-3 with their .meta),
the eval_results.txt its prediction loop writes over them (model.ckpt-0's block first) and the
checkpoints it leaves, predictions.json, nbest_predictions.json and null_odds.json equal to the
original's (floats within float32 rounding of 3 steps); prediction without --train_file; the
original's checkpoint loop (eval_results.txt, model.ckpt-best, removals) on scripted scores;
bad input in one line."""

import dataclasses
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert import squad_v2_task
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.squad_v2_task import SquadV2Error, SquadV2Options, evaluate_checkpoints, run
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.training.trainer import TrainingError
from test_training_helpers import REPO

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v2"
SPM = Path(__file__).resolve().parent / "data" / "albert_spm" / "albert.model"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FLAGS = EXPECTED["flags"]
# The recorded prediction loop: the original's main() --do_predict over the checkpoints its
# Estimator leaves after the 3 steps.
LOOP = EXPECTED["loop"]
OUTPUTS = ("predictions", "nbest_predictions", "null_odds")


def config():
    return AlbertConfig.from_json_file(DATA / "albert_config.json")


def options(output_dir, **overrides):
    """The recording's run: its flags, records in file order, a checkpoint at the start and
    after step 3."""
    values = dict(
        output_dir=str(output_dir), spm_model_file=str(SPM), init_checkpoint=str(DATA / "init.ckpt"),
        train_file=str(DATA / "train.json"), predict_file=str(DATA / "predict.json"),
        predict_feature_file=str(Path(output_dir) / "predict.tf_record"),
        predict_feature_left_file=str(Path(output_dir) / "predict_left.jsonl"),
        shuffle_buffer_size=0, iterations_per_loop=1, **LOOP["flags"],
        **{k: FLAGS[k] for k in ("max_seq_length", "doc_stride", "max_query_length",
                                 "do_lower_case", "start_n_top", "end_n_top", "n_best_size",
                                 "max_answer_length", "train_batch_size", "num_train_epochs",
                                 "warmup_proportion", "learning_rate", "dropout_prob")})
    values.update(overrides)
    return SquadV2Options(**values)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(output_dir, run's result, history of the training steps)."""
    output_dir = tmp_path_factory.mktemp("run")
    history = []
    out = run(config(), options(output_dir), do_train=True, do_predict=True,
              step_callback=lambda step, values: history.append((step, values)))
    return output_dir, out, history


def read_records(path, is_training):
    spec = squad_v2_task.SquadV2Task(FLAGS["max_seq_length"]).feature_spec(is_training)
    (batch,) = tf.data.TFRecordDataset(str(path)).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(1000)
    return {k: v.numpy() for k, v in batch.items()}


def assert_outputs_match(output_dir, original_dir):
    """predictions.json byte for byte; the n-best texts in the original's order and null odds,
    their floats within 1e-5 (relative to the largest of the file) of the original's."""
    for name in OUTPUTS:
        ours = json.loads((Path(output_dir) / f"{name}.json").read_text())
        theirs = json.loads((Path(original_dir) / f"{name}.json").read_text())
        assert list(ours) == list(theirs), name
        if name == "predictions":
            assert (Path(output_dir) / f"{name}.json").read_bytes() == \
                (Path(original_dir) / f"{name}.json").read_bytes()
        elif name == "null_odds":
            values = np.array([[ours[k], theirs[k]] for k in ours])
            np.testing.assert_allclose(values[:, 0], values[:, 1], rtol=1e-5, atol=0)
        else:
            for qid in ours:
                assert [e["text"] for e in ours[qid]] == [e["text"] for e in theirs[qid]], qid
                for key in ("probability", "start_log_prob", "end_log_prob"):
                    a = np.array([e[key] for e in ours[qid]])
                    b = np.array([e[key] for e in theirs[qid]])
                    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * np.max(np.abs(b)),
                                               err_msg=f"{qid} {key}")


@pytest.mark.slow  # 3 steps and 2 predictions of a tiny model
def test_train_and_predict_equal_the_original(trained):
    output_dir, out, history = trained
    assert [step for step, _ in history] == [s["step"] for s in EXPECTED["steps"]]
    for (_, ours), want in zip(history, EXPECTED["steps"]):
        assert ours["total_loss"] == pytest.approx(want["loss"], rel=1e-5)
    # the records of bert_tf.albert.squad_data are the original's
    for name, is_training in (("train.tf_record", True), ("predict.tf_record", False)):
        ours, theirs = (read_records(d / name, is_training) for d in (output_dir, DATA))
        assert sorted(ours) == sorted(theirs)
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=f"{name} {key}")
    # The prediction loop over model.ckpt-0 (the starting weights) and model.ckpt-3: the
    # original's eval_results.txt (its blocks, the copies to model.ckpt-best with the .meta
    # files), its checkpoints left and the prediction files of its best, model.ckpt-3.
    original_loop = DATA / "original_loop"
    assert (output_dir / "eval_results.txt").read_text() == (
        (original_loop / "eval_results.txt").read_text().replace(LOOP["output_dir"],
                                                                 str(output_dir)))
    assert out["eval_results"] == EXPECTED["eval"]
    assert_outputs_match(output_dir, original_loop)
    left = sorted(path.name for path in output_dir.iterdir() if re.fullmatch(
        r"model\.ckpt-(\d+|best)\.(meta|index|data-00000-of-00001)", path.name))
    assert left == LOOP["files"]
    for ext in ("meta", "index", "data-00000-of-00001"):
        assert (output_dir / f"model.ckpt-best.{ext}").read_bytes() == \
            (output_dir / f"model.ckpt-3.{ext}").read_bytes()


@pytest.mark.slow  # shares the training above
def test_predict_without_train_file_works(trained, tmp_path, caplog):
    """The original reads --train_file even to predict (and fails without one); ours scores
    the checkpoints present, here model.ckpt-best and model.ckpt-3 of the run above, and says
    so. The cached features (--predict_feature_file, --predict_feature_left_file) are read."""
    source, _, _ = trained
    output_dir = tmp_path / "out"
    shutil.copytree(source, output_dir)
    for name in OUTPUTS:
        (output_dir / f"{name}.json").unlink()
    mtime = (output_dir / "predict.tf_record").stat().st_mtime_ns
    caplog.set_level("INFO", logger="absl")  # whatever verbosity an earlier test left
    out = run(config(), options(output_dir, train_file=None), do_predict=True)
    assert out["eval_results"] == EXPECTED["eval"]
    assert_outputs_match(output_dir, DATA / "original")
    assert "No --train_file" in caplog.text
    assert "Loading eval features from" in caplog.text
    assert (output_dir / "predict.tf_record").stat().st_mtime_ns == mtime
    assert (output_dir / "eval_results.txt").read_text().endswith("best perf happened at step: 3")


@pytest.mark.slow
def test_predict_with_init_checkpoint_when_output_dir_has_none(tmp_path):
    """No checkpoint to score: the original waits forever; ours predicts with
    --init_checkpoint when it holds the SQuAD 2.0 head, else says it has none."""
    out = run(config(), options(tmp_path / "a", train_file=None), do_predict=True)
    assert set(out["eval_results"]) == {"exact", "f1", "total", "null_score_diff_threshold"}
    assert (tmp_path / "a" / "eval_results.txt").read_text().endswith(
        f"predicted with --init_checkpoint={DATA / 'init.ckpt'}\n")
    for name in OUTPUTS:
        assert (tmp_path / "a" / f"{name}.json").exists()
    model = squad_v2_task.SquadV2Model(config())
    load_original_checkpoint(model, str(DATA / "init.ckpt"))
    encoder_only = save_original_checkpoint(model.bert, tmp_path / "encoder" / "model.ckpt")
    with pytest.raises(SquadV2Error, match=r"--init_checkpoint=.*encoder/model.ckpt has no "
                                           r"SQuAD 2.0 head \(start_logits/dense/kernel"):
        run(config(), options(tmp_path / "b", train_file=None, init_checkpoint=encoder_only),
            do_predict=True)
    with pytest.raises(SquadV2Error, match="has no checkpoint .* and there is no "
                                           "--init_checkpoint"):
        run(config(), options(tmp_path / "c", train_file=None, init_checkpoint=None),
            do_predict=True)


# -- the checkpoint loop -------------------------------------------------------------------

def fake_checkpoints(directory, steps):
    """model.ckpt-N files whose index holds N (copied with them to model.ckpt-best)."""
    directory.mkdir(parents=True, exist_ok=True)
    for step in steps:
        (directory / f"model.ckpt-{step}.index").write_text(str(step))
        (directory / f"model.ckpt-{step}.data-00000-of-00001").write_text("data")
        (directory / f"model.ckpt-{step}.input-0-of-1.index").write_text("input")


def scorer(f1_of_step, calls):
    def score(prefix, flag=None):
        step = int(Path(prefix + ".index").read_text())
        calls.append(os.path.basename(prefix))
        return {"exact": 1.0, "f1": f1_of_step[step], "total": 7,
                "null_score_diff_threshold": -0.5}, step
    return score


def block(f1, copied=None, best=None, directory=None):
    lines = ["exact = 1.0\n", f"f1 = {f1}\n", "null_score_diff_threshold = -0.5\n",
             "total = 7\n"]
    if copied is not None:
        lines += [f"saved {directory}/model.ckpt-{copied}.{ext} to "
                  f"{directory}/model.ckpt-best.{ext}\n"
                  for ext in ("data-00000-of-00001", "index")]
    if best is not None:
        lines += [f"best f1 = {best}\n", "=" * 50 + "\n"]
    return "".join(lines)


def test_checkpoint_loop_follows_the_original(tmp_path):
    """Steps 0-4 scored in order; a better F1 is copied to model.ckpt-best; a scored checkpoint
    with more than two newer ones is removed (its input position too); the final scores are
    the best's, scored again since the last one scored is another."""
    directory = tmp_path / "out"
    fake_checkpoints(directory, range(5))
    f1 = {0: 10.0, 1: 30.0, 2: 20.0, 3: 30.0, 4: 25.0}
    calls = []
    scores = evaluate_checkpoints(str(directory), scorer(f1, calls), num_train_steps=4)
    assert calls == ["model.ckpt-0", "model.ckpt-1", "model.ckpt-2", "model.ckpt-3",
                     "model.ckpt-4", "model.ckpt-best"]
    assert scores["f1"] == 30.0
    assert (directory / "eval_results.txt").read_text() == "".join([
        block(10.0, 0, 10.0, directory), block(30.0, 1, 30.0, directory),
        block(20.0, None, 30.0), block(30.0, None, 30.0), block(25.0, None, 30.0),
        block(30.0), "best perf happened at step: 1"])
    left = sorted(p.name for p in directory.iterdir())
    assert not [n for n in left if n.startswith(("model.ckpt-0.", "model.ckpt-1."))]
    assert "model.ckpt-2.index" in left and "model.ckpt-best.index" in left


def test_checkpoint_loop_resumes_from_an_earlier_best(tmp_path):
    """model.ckpt-best of an earlier run is scored first; checkpoints not newer than it are
    skipped (removed when more than one newer exists); the best scored last is not scored
    again."""
    directory = tmp_path / "out"
    fake_checkpoints(directory, [1, 2, 3, 4, 5])
    shutil.copy(directory / "model.ckpt-3.index", directory / "model.ckpt-best.index")
    f1 = {1: 5.0, 2: 5.0, 3: 40.0, 4: 50.0, 5: 45.0}
    calls = []
    evaluate_checkpoints(str(directory), scorer(f1, calls), num_train_steps=None)
    assert calls == ["model.ckpt-best", "model.ckpt-4", "model.ckpt-5", "model.ckpt-best"]
    left = {p.name for p in directory.iterdir()}
    assert not {"model.ckpt-1.index", "model.ckpt-2.index", "model.ckpt-3.index"} & left
    assert {"model.ckpt-4.index", "model.ckpt-5.index"} <= left
    calls.clear()
    fake_checkpoints(directory, [6])
    f1[6] = 60.0
    evaluate_checkpoints(str(directory), scorer(f1, calls), num_train_steps=6)
    # best (4's), then 5 (newer than 4) again and 6, the new best: not scored again
    assert calls == ["model.ckpt-best", "model.ckpt-5", "model.ckpt-6"]


# -- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, message", [
    (dict(predict_feature_left_file=None),
     "If `do_predict` is True, then `predict_feature_left_file` must be specified."),
    (dict(max_seq_length=80), "Cannot use sequence length 80 because the ALBERT model was "
                              "only trained up to sequence length 64"),
    (dict(max_query_length=61), r"The max_seq_length \(64\) must be greater than "
                                r"max_query_length \(61\) \+ 3"),
    (dict(start_n_top=20), r"--start_n_top=20 is more than the --padding_width=16"),
    (dict(end_n_top=0), "--end_n_top must be positive"),
])
def test_bad_flags_are_one_clear_error(tmp_path, overrides, message):
    with pytest.raises(TrainingError, match=message):
        run(config(), options(tmp_path, **overrides), do_predict=True)


def test_bad_files_are_one_clear_error(tmp_path):
    dataset = json.loads((DATA / "predict.json").read_text())
    del dataset["data"][1]["paragraphs"][0]["qas"][2]["answers"]
    no_answers = tmp_path / "no_answers.json"
    no_answers.write_text(json.dumps(dataset))
    with pytest.raises(SquadV2Error, match=r"--predict_file=.*no_answers.json: question 'p5' "
                                           r"has no 'answers' list"):
        run(config(), options(tmp_path / "a", predict_file=str(no_answers)), do_predict=True)
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [')
    with pytest.raises(SquadV2Error, match=r"--predict_file=.*broken.json: cannot read"):
        run(config(), options(tmp_path / "b", predict_file=str(broken)), do_predict=True)
    # a --predict_feature_left_file that is not the original's pickle of its features
    left = tmp_path / "c" / "left.pkl"
    left.parent.mkdir()
    left.write_bytes(pickle.dumps([{"unique_id": 1}]))
    (tmp_path / "c" / "predict.tf_record").write_bytes(b"")
    with pytest.raises(SquadV2Error, match=r"--predict_feature_left_file=.*left.pkl: not a list "
                                           r"of SQuAD features .*delete it and "
                                           r"--predict_feature_file"):
        run(config(), options(tmp_path / "c", predict_feature_left_file=str(left),
                              predict_feature_file=str(tmp_path / "c" / "predict.tf_record")),
            do_predict=True)


@pytest.mark.slow  # two processes importing TensorFlow
def test_script_refuses_bad_flags_in_one_line(tmp_path):
    def script(*args):
        return subprocess.run(
            [sys.executable, "-m", "bert_tf.albert.run_squad_v2", *args], cwd=str(REPO),
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO)))

    required = [f"--albert_config_file={DATA / 'albert_config.json'}",
                f"--spm_model_file={SPM}", f"--output_dir={tmp_path / 'out'}"]
    proc = script(*required, "--do_predict", "--bogus_flag=1")
    assert proc.returncode != 0 and "Unknown command line flag 'bogus_flag'" in proc.stderr
    proc = script(*required, "--do_predict", f"--predict_file={DATA / 'predict.json'}")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("run_squad_v2.py")]
    assert errors == ["run_squad_v2.py: error: If `do_predict` is True, then "
                      "`predict_feature_file` must be specified."], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_options_defaults_are_the_originals():
    defaults = {f.name: f.default for f in dataclasses.fields(SquadV2Options)}
    assert {k: defaults[k] for k in (
        "max_seq_length", "doc_stride", "max_query_length", "n_best_size",
        "max_answer_length", "start_n_top", "end_n_top", "dropout_prob", "do_lower_case",
        "predict_batch_size", "num_train_epochs", "warmup_proportion", "learning_rate",
        "keep_checkpoint_max")} == {
        "max_seq_length": 384, "doc_stride": 128, "max_query_length": 64, "n_best_size": 20,
        "max_answer_length": 30, "start_n_top": 5, "end_n_top": 5, "dropout_prob": 0.1,
        "do_lower_case": True, "predict_batch_size": 8, "num_train_epochs": 3.0,
        "warmup_proportion": 0.1, "learning_rate": 5e-5, "keep_checkpoint_max": 0}
