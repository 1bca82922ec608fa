"""python -m bert_tf.albert.run_squad_v1 (bert_tf.albert.squad_task.run_v1) end to end on the
tiny ALBERT of tests/data/albert_squad_v1: prediction with the starting weights gives the
original's predictions.json (recorded there by make_expected.py from the same weights), train +
predict scores every checkpoint as the original's loop, the feature files are read back, and bad
flags and files are one line."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bert_tf.albert import squad_data
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.squad_task import AlbertSquadError, AlbertSquadOptions, run_v1
from bert_tf.training.trainer import TrainingError
from conftest import load_recorder
from test_training_helpers import REPO, env

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v1"
EXPECTED = json.load(gzip.open(DATA / "expected.json.gz", "rt", encoding="utf-8"))
recorder = load_recorder("albert_squad_v1")
SQUAD_FILE = recorder.SQUAD_FILE


def config():
    return AlbertConfig.from_json_file(DATA / "albert_config.json")


def options(output_dir, **overrides):
    values = dict(output_dir=str(output_dir), spm_model_file=recorder.SPM_MODEL,
                  init_checkpoint=str(DATA / "model.ckpt"), predict_file=SQUAD_FILE,
                  predict_feature_file=str(output_dir / "eval.tf_record"),
                  predict_feature_left_file=str(output_dir / "eval_features.pkl"),
                  max_seq_length=recorder.MAX_SEQ_LENGTH, doc_stride=recorder.DOC_STRIDE,
                  max_query_length=recorder.MAX_QUERY_LENGTH, train_batch_size=4,
                  learning_rate=1e-3, num_train_epochs=1.0, warmup_proportion=0.0,
                  shuffle_buffer_size=0, dynamic_padding=False)
    values.update(overrides)
    return AlbertSquadOptions(**values)


@pytest.mark.slow  # two predictions of a tiny model
def test_predict_only_gives_the_originals_predictions(tmp_path, caplog):
    """Without --do_train (the original crashes) and without a checkpoint in output_dir: the
    weights of --init_checkpoint, said in the log; predictions.json equal to the original's
    write_predictions_v1 on its own logits of the same weights, the n-best texts equal and
    their logits within float32 rounding. A second run reads the feature files back."""
    out = tmp_path / "out"
    caplog.set_level("INFO", logger="absl")  # whatever verbosity an earlier test left
    result = run_v1(config(), options(out), do_predict=True)
    assert "predicting with the weights of --init_checkpoint" in caplog.text
    expected = EXPECTED["predictions"]["model/20/30"]
    assert (out / "predictions.json").read_text(encoding="utf-8") == expected["predictions.json"]
    ours = json.loads((out / "nbest_predictions.json").read_text(encoding="utf-8"))
    theirs = json.loads(expected["nbest_predictions.json"])
    assert list(ours) == list(theirs)
    for qid in theirs:
        assert [e["text"] for e in ours[qid]] == [e["text"] for e in theirs[qid]], qid
        for a, b in zip(ours[qid], theirs[qid]):
            for key in ("probability", "start_log_prob", "end_log_prob"):
                assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (qid, key)
    assert result["eval_results"] == expected["evaluate_v1"]
    assert (out / "eval_results.txt").read_text() == (
        f"exact_match = {expected['evaluate_v1']['exact_match']}\n"
        f"f1 = {expected['evaluate_v1']['f1']}\nbest perf happened at step: 0")
    # Our feature files: the original's records and pickle, read back by a second run.
    features = squad_data.load_features(out / "eval_features.pkl")
    assert len(features) == EXPECTED["counts"]["predict"]["features"]
    caplog.clear()
    (out / "predictions.json").unlink()
    run_v1(config(), options(out, dynamic_padding=True), do_predict=True)
    assert f"Loading eval features from {out / 'eval_features.pkl'}" in caplog.text
    assert (out / "predictions.json").read_text(encoding="utf-8") == expected["predictions.json"]


@pytest.mark.slow  # three predictions of a tiny model
def test_default_prediction_keeps_the_padded_positions_of_the_originals_n_best(tmp_path):
    """The original v1's n-best (accumulate_predictions_v1) ranks every position's logits,
    padding included. A fresh span head (random weights at the initializer's scale plus a
    push as long as them along the direction from the real positions' mean hidden state to
    the padded ones': on this fixture random weights alone rank padding only in windows whose
    examples have 20 candidates elsewhere) ranks padded positions among a window's n best: the
    default prediction (dynamic padding on) writes, byte for byte, the files of batches
    padded to max_seq_length (whose predictions are the original's: the test above);
    --predict_dynamic_padding cuts the batches and gives other n-best lists."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.albert.squad_task import AlbertSquadV1Task, predict_features
    from bert_tf.albert.tokenization import FullTokenizer
    from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint

    files = dict(predict_feature_file=str(tmp_path / "eval.tf_record"),
                 predict_feature_left_file=str(tmp_path / "eval_features.pkl"))
    base = options(tmp_path / "features", **files)
    task = AlbertSquadV1Task(base.max_seq_length)
    features, _ = predict_features(
        base, FullTokenizer(None, base.do_lower_case, spm_model_file=base.spm_model_file),
        squad_data.read_squad_examples(SQUAD_FILE, False), task.feature_spec(False), task.name)
    inputs = {key: tf.constant([getattr(f, key) for f in features], tf.int32)
              for key in ("input_ids", "input_mask", "segment_ids")}
    model = task.build_model(config())
    load_original_checkpoint(model, str(DATA / "model.ckpt"))
    hidden = model.bert(inputs, training=False)["sequence_output"].numpy()
    padded = inputs["input_mask"].numpy() == 0
    direction = hidden[padded].mean(axis=0) - hidden[~padded].mean(axis=0)
    rng = np.random.default_rng(31)
    model.head.output_weights.assign(
        rng.normal(0.0, config().initializer_range, model.head.output_weights.shape)
        + config().initializer_range * np.sqrt(config().hidden_size)
        * direction / np.linalg.norm(direction))  # as long as the random part, on average
    checkpoint = str(save_original_checkpoint(model, tmp_path / "fresh" / "model.ckpt"))
    logits = model(inputs, training=False)
    ranked = sum(np.take_along_axis(padded, np.argsort(-logits[key].numpy(), axis=1,
                                                       kind="stable")[:, :20], axis=1).sum(1)
                 for key in ("start_logits", "end_logits"))
    assert (ranked > 0).sum() >= 2, ranked  # the head ranks padding: the test can fail
    out = {}
    for name, overrides in {"padded": {}, "default": dict(dynamic_padding=True, padding_width=4),
                            "cut": dict(dynamic_padding=True, padding_width=4,
                                        predict_dynamic_padding=True)}.items():
        out[name] = tmp_path / name
        run_v1(config(), options(out[name], init_checkpoint=checkpoint, predict_batch_size=3,
                                 **files, **overrides), do_predict=True)
    for name in ("predictions.json", "nbest_predictions.json"):
        assert (out["default"] / name).read_bytes() == (out["padded"] / name).read_bytes(), name
    cut, padded = (json.loads((out[k] / "nbest_predictions.json").read_text(encoding="utf-8"))
                   for k in ("cut", "padded"))
    assert list(cut) == list(padded)
    assert [q for q in padded if [e["text"] for e in cut[q]] != [e["text"] for e in padded[q]]]


@pytest.mark.slow  # 3 steps and 4 predictions of a tiny model
def test_train_and_predict_score_every_checkpoint(tmp_path):
    out = tmp_path / "out"
    result = run_v1(config(), options(out, train_file=SQUAD_FILE, save_checkpoints_steps=1,
                                      iterations_per_loop=1),
                    do_train=True, do_predict=True)
    # 14 examples / batch 4 x 1 epoch: 3 steps; model.ckpt-0 to -3 scored in order; 0 removed
    # after its score (three newer).
    assert result["checkpoint"] == str(out / "model.ckpt-3")
    text = (out / "eval_results.txt").read_text()
    blocks = text.split("=" * 50 + "\n")
    assert len(blocks) == 5 and all(b.startswith("exact_match = ") for b in blocks)
    assert blocks[0].splitlines()[2] == (f"saved {out}/model.ckpt-0.meta to "
                                         f"{out}/model.ckpt-best.meta")
    assert blocks[-1].splitlines()[-1].startswith("best perf happened at step: ")
    assert sorted(p.name for p in out.glob("model.ckpt-*.index")
                  if ".input-" not in p.name) == [
        "model.ckpt-1.index", "model.ckpt-2.index", "model.ckpt-3.index",
        "model.ckpt-best.index"]
    best_step = int(blocks[-1].splitlines()[-1].rsplit(" ", 1)[1])
    import tensorflow as tf
    assert tf.train.load_checkpoint(str(out / "model.ckpt-best")).get_tensor(
        "global_step") == best_step
    assert result["eval_results"]["f1"] == max(
        float(line.split(" = ")[1]) for line in text.splitlines() if line.startswith("f1 = "))
    assert (out / "train.tf_record").exists() and (out / "nbest_predictions.json").exists()


@pytest.mark.parametrize("overrides, do, message", [
    ({}, {}, "At least one of `do_train` or `do_predict` or `export_dir`must be True."),
    ({}, {"do_train": True}, "If `do_train` is True, then `train_file` must be specified."),
    ({"predict_feature_file": None}, {"do_predict": True},
     "If `do_predict` is True, then `predict_feature_file` must be specified."),
    ({"predict_feature_left_file": None}, {"do_predict": True},
     "If `do_predict` is True, then `predict_feature_left_file` must be specified."),
    ({"max_seq_length": 100}, {"do_predict": True},
     "Cannot use sequence length 100 because the ALBERT model was only trained up to "
     "sequence length 64"),
    ({"max_query_length": 45}, {"do_predict": True},
     "The max_seq_length (48) must be greater than max_query_length (45) + 3"),
    ({"doc_stride": 0}, {"do_predict": True}, "--doc_stride must be positive"),
])
def test_bad_flags_are_refused(tmp_path, overrides, do, message):
    with pytest.raises(TrainingError) as info:
        run_v1(config(), options(tmp_path / "out", **overrides), **do)
    assert message in str(info.value)


def test_bad_squad_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [{"paragraphs": [{"context": "x"}]}]}')
    with pytest.raises(AlbertSquadError, match=f"--predict_file: {bad}: .*no 'qas'"):
        run_v1(config(), options(tmp_path / "out", predict_file=str(bad)), do_predict=True)


def _command(tmp_path, *extra):
    return subprocess.run(
        [sys.executable, "-m", "bert_tf.albert.run_squad_v1",
         f"--albert_config_file={DATA / 'albert_config.json'}",
         f"--spm_model_file={recorder.SPM_MODEL}", f"--output_dir={tmp_path / 'out'}",
         "--max_seq_length=48", "--max_query_length=8", *extra],
        capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)


@pytest.mark.slow  # process starts with TensorFlow
@pytest.mark.parametrize("extra, message", [
    (["--do_train", "--train_file=/nonexistent.json"],
     "run_squad_v1.py: error: --train_file: /nonexistent.json: no such file"),
    (["--export_dir=/tmp/x"], "run_squad_v1.py: error: --export_dir: not supported here"),
    (["--albert_hub_module_handle=x"], "run_squad_v1.py: error: --albert_hub_module_handle"),
    (["--do_predict", f"--predict_file={SQUAD_FILE}", "--predict_feature_file=x"],
     "run_squad_v1.py: error: If `do_predict` is True, then `predict_feature_left_file` must "
     "be specified."),
    (["--n_best=3"], "Unknown command line flag 'n_best'"),
])
def test_command_line_refuses_in_one_line(tmp_path, extra, message):
    proc = _command(tmp_path, *extra)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "out").glob("model.ckpt*")) if (tmp_path / "out").exists() \
        else True


@pytest.mark.slow  # a process start with TensorFlow
def test_command_help_lists_the_originals_flags(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bert_tf.albert.run_squad_v1", "--help"],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    for flag in ("albert_config_file", "spm_model_file", "train_feature_file",
                 "predict_feature_file", "predict_feature_left_file", "doc_stride",
                 "max_query_length", "n_best_size", "max_answer_length", "use_einsum",
                 "export_dir", "do_lower_case", "keep_checkpoint_max"):
        assert f"{flag}:" in proc.stdout, flag
    # Added: the opt-in that is not the original's n-best says so.
    assert "--[no]predict_dynamic_padding:" in proc.stdout
    assert "Not the original's n-best" in " ".join(proc.stdout.split())


def test_a_checkpoint_without_the_head_is_refused(tmp_path):
    """A checkpoint of output_dir that lacks the SQuAD head (another task's) is named, not
    scored with a random head."""
    import shutil

    out = tmp_path / "out"
    out.mkdir()
    model_dir = DATA.parent / "albert_model" / "grouped"
    albert = AlbertConfig.from_json_file(model_dir / "albert_config.json")
    for name in ("model.ckpt.index", "model.ckpt.data-00000-of-00001"):
        shutil.copy(model_dir / name, out / name.replace("model.ckpt", "model.ckpt-5"))
    with pytest.raises(AlbertSquadError, match="model.ckpt-5 has no cls/squad/output_weights, cls/squad/output_bias: not"):
        run_v1(albert, options(out, max_seq_length=16, max_query_length=4, doc_stride=4),
               do_predict=True)
