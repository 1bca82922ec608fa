"""python -m bert_tf.albert.run_race (bert_tf.albert.race_task) against google-research/albert's
run_race.py run unmodified (recorded by tests/data/albert_race/make_expected.py): 3 training
steps from the same checkpoint, the eval loop's eval_results.txt, model.ckpt-best and the files
it leaves, predict_results.txt, the records; dynamic padding; bad flags and files."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.race_task import (MultipleChoiceModel, RaceError, RaceOptions, RaceTask,
                                      evaluate_checkpoints, run)
from bert_tf.training.trainer import Trainer
from test_training_helpers import assert_adam_steps_match, assert_steps_match, read_checkpoint

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "albert_race"
SPM = REPO / "tests" / "data" / "albert_spm" / "albert.model"
CONFIG = DATA / "model" / "albert_config.json"
INIT = DATA / "model" / "model.ckpt"
RUN = DATA / "runs" / "train_eval"
EXPECTED = json.loads((RUN / "expected.json").read_text())
FLAGS = EXPECTED["flags"]
# Variables whose gradient is zero in real arithmetic: the key biases (a softmax ignores a
# constant added to a query's scores) and output_bias (one constant added to the 4 choices'
# logits, which the softmax over the choices ignores). Adam turns their rounding noise into
# moves; those are bounded instead of compared.
ZERO_GRADIENT = ("/key/bias", "output_bias")


def options(output_dir, **overrides):
    values = dict(output_dir=str(output_dir), data_dir=str(DATA), spm_model_file=str(SPM),
                  init_checkpoint=str(INIT), max_seq_length=FLAGS["max_seq_length"],
                  max_qa_length=FLAGS["max_qa_length"], num_train_steps=FLAGS["train_step"],
                  num_warmup_steps=FLAGS["warmup_step"],
                  save_checkpoints_steps=FLAGS["save_checkpoints_steps"],
                  train_batch_size=FLAGS["train_batch_size"],
                  eval_batch_size=FLAGS["eval_batch_size"],
                  predict_batch_size=FLAGS["predict_batch_size"],
                  learning_rate=FLAGS["learning_rate"], dropout_prob=FLAGS["dropout_prob"],
                  # The original's shuffle(100) is the identity in the recording: file order.
                  shuffle_buffer_size=0)
    values.update(overrides)
    return RaceOptions(**values)


def config():
    return AlbertConfig.from_json_file(CONFIG)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Our run of the recorded flags (--do_train --do_eval --do_predict, dynamic padding on):
    (output_dir, per-step values, run()'s result); then predict_results.txt of a predict-only
    run on the same output_dir, kept as predict_only.txt."""
    output_dir = tmp_path_factory.mktemp("race")
    steps = []
    out = run(config(), options(output_dir), do_train=True, do_eval=True, do_predict=True,
              step_callback=lambda step, values: steps.append((step, values)))
    shutil.copy(output_dir / "predict_results.txt", output_dir / "predict_with_eval.txt")
    run(config(), options(output_dir), do_train=False, do_eval=False, do_predict=True)
    os.replace(output_dir / "predict_results.txt", output_dir / "predict_only.txt")
    os.replace(output_dir / "predict_with_eval.txt", output_dir / "predict_results.txt")
    return output_dir, steps, out


def normalized_lines(text, output_dir):
    return text.replace(str(output_dir), "OUT").splitlines()


def assert_results_equal(ours, original, what):
    """Result files line by line: the same lines, `eval_loss` and `loss` (float32 means of a
    forward pass) to 1e-5 relative, everything else (accuracies, steps, best) exactly."""
    assert len(ours) == len(original), (what, ours, original)
    for a, b in zip(ours, original):
        key = a.split(" = ")[0]
        if key in ("eval_loss", "loss") and " = " in a:
            assert key == b.split(" = ")[0], (what, a, b)
            assert float(a.split(" = ")[1]) == pytest.approx(float(b.split(" = ")[1]),
                                                             rel=1e-5), (what, a, b)
        else:
            assert a == b, what


@pytest.mark.slow  # a run: 3 steps, 4 checkpoints evaluated, 2 predictions of a tiny model
def test_three_steps_match_the_original(outputs):
    output_dir, steps, _ = outputs
    assert_steps_match(steps, EXPECTED["steps"])
    ours = read_checkpoint(output_dir / "model.ckpt-3")
    original = dict(np.load(RUN / "after_3_steps.npz"))
    assert sorted(ours) == sorted(original)
    assert int(ours["global_step"]) == int(original["global_step"]) == 3
    start = read_checkpoint(INIT)
    bounded = [n for n in start if any(part in n for part in ZERO_GRADIENT)]
    assert len(bounded) == 4 + 1  # the key biases of 2 groups x 2 inner blocks; the head's
    assert_adam_steps_match(ours, original, start, EXPECTED["steps"], bounded,
                            v_as_gradients=True)


@pytest.mark.slow
def test_eval_results_and_model_ckpt_best_match_the_original(outputs):
    output_dir, _, out = outputs
    ours = normalized_lines((output_dir / "eval_results.txt").read_text(), output_dir)
    original = normalized_lines((RUN / "eval_results.txt").read_text(), EXPECTED["output_dir"])
    assert_results_equal(ours, original, "eval_results.txt")
    # The best (by eval_accuracy) is a later checkpoint than the first: it was copied twice.
    assert sum(line.startswith("saved OUT/model.ckpt-") for line in ours) == 6
    assert out["best"] == max(float(line.split(" = ")[1]) for line in original
                              if line.startswith("eval_accuracy"))
    best = read_checkpoint(output_dir / "model.ckpt-best")
    kept = read_checkpoint(output_dir / "model.ckpt-2")
    assert int(best["global_step"]) == 2
    assert all(np.array_equal(best[name], kept[name]) for name in kept)


@pytest.mark.slow
def test_predict_results_match_the_original(outputs):
    """The original's --do_predict fails on CPU (its error is recorded); predict_results.txt
    is what its do_predict block writes past that: model.ckpt-best on the test set."""
    output_dir, _, out = outputs
    recorded = DATA / "runs" / "predict"
    assert "predict_steps" in json.loads((recorded / "expected.json").read_text())["error"]
    original = (recorded / "predict_results.txt").read_text().splitlines()
    ours = (output_dir / "predict_results.txt").read_text().splitlines()
    assert_results_equal(ours, original, "predict_results.txt")
    assert out["predict_results"]["global_step"] == 2
    # Without --do_eval in the run there is no best eval_accuracy: no `best` line.
    alone = (output_dir / "predict_only.txt").read_text().splitlines()
    assert_results_equal(alone, original[:-1], "predict_results.txt without --do_eval")


@pytest.mark.slow
def test_files_left_and_records_match_the_original(outputs):
    output_dir, _, _ = outputs
    ours = sorted(name for name in os.listdir(output_dir)
                  if name.startswith("model.ckpt") and ".input-" not in name)
    original = [name for name in EXPECTED["files"] if name.startswith("model.ckpt")]
    assert ours == original
    for name in ("train.tf_record", "eval.tf_record"):
        assert parsed(output_dir / name) == parsed(RUN / name), name
    assert parsed(output_dir / "predict.tf_record") == parsed(
        DATA / "runs" / "predict" / "predict.tf_record")
    # The checkpoint state file lists only checkpoints that exist.
    state = tf.train.get_checkpoint_state(str(output_dir))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-2", "model.ckpt-3"]


def parsed(path):
    out = []
    for raw in tf.data.TFRecordDataset(str(path)):
        example = tf.train.Example.FromString(raw.numpy())
        out.append({k: list(f.int64_list.value) for k, f in example.features.feature.items()})
    return out


@pytest.mark.slow
def test_dynamic_padding_cuts_the_batches_and_predicts_as_the_padded_run(outputs):
    """The run above trained on cut batches (the training set's sequences are shorter than
    max_seq_length) and matched the original's padded ones; eval and predict cut too: the
    probabilities of every test example equal those of batches at max_seq_length."""
    output_dir, _, _ = outputs
    length = FLAGS["max_seq_length"]
    train = parsed(output_dir / "train.tf_record")
    longest = max(sum(r["input_mask"][c * length:(c + 1) * length]) for r in train
                  for c in range(4))
    assert longest < length
    task = RaceTask(length, 0.0)
    probabilities = {}
    for dynamic in (True, False):
        trainer = Trainer(config(), task, options(output_dir / f"p{dynamic}",
                                                  dynamic_padding=dynamic))
        checkpoints.load_original_checkpoint(trainer.model, str(output_dir / "model.ckpt-best"))
        rows = [b["probabilities"] for b in trainer.predict(
            [str(output_dir / "predict.tf_record")], 2)]
        probabilities[dynamic] = np.concatenate(rows)[:3]
    np.testing.assert_allclose(probabilities[True], probabilities[False], rtol=1e-6, atol=1e-7)
    # The accuracies compared exactly with the original's rest on argmaxes that rounding
    # cannot flip: the top two choices' log-probabilities differ by far more than it moves them.
    top = np.sort(np.log(probabilities[False]), axis=1)
    assert np.min(top[:, -1] - top[:, -2]) > 1e-4


def test_without_checkpoints_eval_scores_the_init_checkpoint(tmp_path):
    """The original waits forever for a checkpoint; ours evaluates --init_checkpoint (the
    original's model.ckpt-0 holds the same weights: the same results)."""
    out = run(config(), options(tmp_path), do_train=False, do_eval=True)
    lines = (tmp_path / "eval_results.txt").read_text().splitlines()
    original = (RUN / "eval_results.txt").read_text().splitlines()[:4]
    assert_results_equal(lines, original, "init_checkpoint")
    assert out["best"] == out["eval_results"]["eval_accuracy"]


def test_the_eval_loop_keeps_removes_and_writes_as_the_original(tmp_path):
    """The loop alone on checkpoint files of no content and scripted results (the original's
    recording: a model.ckpt-best, model.ckpt-0..5): what it scores, writes, copies, removes."""
    recorded = json.loads((DATA / "runs" / "loop" / "expected.json").read_text())
    for name in recorded["results"]:
        for ext in ("index", "data-00000-of-00001", "meta"):
            (tmp_path / f"model.ckpt-{name}.{ext}").write_text(f"{name}.{ext}")
    scored = []

    def score(prefix, flag=None):
        name = prefix.rsplit("-", 1)[1]
        scored.append(name)
        step, accuracy, loss = recorded["results"][name]
        return {"eval_accuracy": np.float32(accuracy), "eval_loss": np.float32(loss),
                "global_step": step, "loss": np.float32(loss)}

    last, best = evaluate_checkpoints(str(tmp_path), score, recorded["train_step"])
    assert scored == ["best", "2", "3", "4", "5"]
    assert best == np.float32(0.7) and last["global_step"] == 5
    ours = normalized_lines((tmp_path / "eval_results.txt").read_text(), tmp_path)
    original = normalized_lines((DATA / "runs" / "loop" / "eval_results.txt").read_text(),
                                recorded["output_dir"])
    assert ours == original
    left = {p.name: p.read_text() for p in sorted(tmp_path.iterdir())
            if p.name.startswith("model.ckpt")}
    assert left == recorded["files"]


def test_the_eval_loop_refuses_to_evaluate_nothing(tmp_path):
    with pytest.raises(RaceError, match="has no checkpoint to evaluate .* no --init_checkpoint"):
        evaluate_checkpoints(str(tmp_path), None, 3)


def test_the_model_scores_each_choice_with_one_head(tmp_path):
    """logits [B, 4] = the one-output head on each choice's pooled output; the head's
    variables are the original's output_weights [1, H] and output_bias [1]; get_config round
    trip."""
    model = RaceTask(16, 0.0).build_model(config())
    names = {n: tuple(v.shape) for n, v in model.checkpoint_variables().items()
             if not n.startswith("bert/")}
    assert names == {"output_weights": (1, 16), "output_bias": (1,)}
    rng = np.random.default_rng(0)
    features = {"input_ids": rng.integers(5, 2000, size=(2, 4, 16)),
                "input_mask": np.ones((2, 4, 16), np.int32),
                "segment_ids": np.zeros((2, 4, 16), np.int32)}
    logits = model(features)["logits"].numpy()
    flat = {k: v.reshape(8, 16) for k, v in features.items()}
    pooled = model.bert(flat)["pooled_output"].numpy()
    want = pooled @ model.head.output_weights.numpy().T + model.head.output_bias.numpy()
    np.testing.assert_allclose(logits, want.reshape(2, 4), rtol=1e-5, atol=1e-6)
    clone = MultipleChoiceModel.from_config(model.get_config())
    assert clone.num_choices == 4


def _race_command(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-m", "bert_tf.albert.run_race", *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def _model_flags(output_dir, data_dir=DATA):
    return [f"--data_dir={data_dir}", f"--spm_model_file={SPM}",
            f"--albert_config_file={CONFIG}", f"--init_checkpoint={INIT}",
            f"--output_dir={output_dir}", "--max_seq_length=48", "--train_step=1"]


@pytest.mark.parametrize("args, message", [
    (["--no_such_flag=1"], "Unknown command line flag 'no_such_flag'"),
    (["--data_dir=x", "--albert_config_file=y", "--output_dir=z"],
     "Flag --spm_model_file must have a value other than None"),
])
def test_flags_refused_by_name(args, message):
    result = _race_command(*args)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.slow  # command runs that import TensorFlow
@pytest.mark.parametrize("case", ["bad_line", "long_sequence", "task_name", "hub"])
def test_bad_input_refused_in_one_line_before_training(tmp_path, case):
    data_dir = DATA
    extra = []
    if case == "bad_line":
        data_dir = tmp_path / "data"
        shutil.copytree(DATA / "RACE", data_dir / "RACE")
        path = data_dir / "RACE" / "train" / "high" / "all.txt"
        path.write_text(path.read_text() + '{"id": "x", "article": \n', encoding="utf-8")
        want = f"run_race.py: error: {path}:2: not JSON"
    elif case == "long_sequence":
        extra = ["--max_seq_length=100"]
        want = ("run_race.py: error: Cannot use sequence length 100 because the ALBERT model "
                "was only trained up to sequence length 64")
    elif case == "task_name":
        extra = ["--task_name=MNLI"]
        want = "run_race.py: error: Task not found: mnli"
    else:
        extra = ["--albert_hub_module_handle=https://tfhub.dev/google/albert_base/1"]
        want = "run_race.py: error: --albert_hub_module_handle: TF-Hub modules are not supported"
    output_dir = tmp_path / "out"
    result = _race_command(*_model_flags(output_dir, data_dir), *extra)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.rstrip().splitlines()[-1].startswith(want), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not any(output_dir.glob("model.ckpt-*")) if output_dir.exists() else True
