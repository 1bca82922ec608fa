"""`python -m bert_tf.electra.run_pretraining` end to end on a tiny model: the original's layout
and command line, training with checkpoints in the original's names and the discriminator's
bert_config.json, eval printing the original's `  key = value` lines and eval_results.txt,
continuing the original's own checkpoint, SIGKILL + resume = uninterrupted, and bad input as one
line."""

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.electra.hparams import PretrainingHparams
from bert_tf.electra.pretraining_task import run
from test_training_helpers import (
    assert_checkpoints_identical, kill_after_checkpoint, read_checkpoint, state_lists,
)

DATA = Path(__file__).resolve().parent / "data" / "electra_model"
# The recorded "electra" case's model (so its checkpoints fit), a short run.
HPARAMS = dict(
    json.loads((DATA / "electra" / "expected.json").read_text())["hparams"],
    train_batch_size=4, eval_batch_size=4, num_train_steps=6, save_checkpoints_steps=2,
    iterations_per_loop=1, num_eval_steps=2)
DRIVER = ("import json, sys\nfrom bert_tf.electra.run_pretraining import main\n"
          "sys.exit(main(json.loads(sys.argv[1])))\n")


def write_records(path, n, rng, seq_length=16, vocab_size=30):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(n):
            length = rng.randint(6, seq_length + 1)
            ids = np.zeros(seq_length, np.int64)
            ids[:length] = rng.randint(5, vocab_size, length)
            ids[[0, length // 2, length - 1]] = [2, 3, 3]
            mask = (np.arange(seq_length) < length).astype(np.int64)
            segments = ((np.arange(seq_length) > length // 2) & (mask == 1)).astype(np.int64)
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                       for k, v in (("input_ids", ids), ("input_mask", mask),
                                    ("segment_ids", segments))}
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.fixture()
def data_dir(tmp_path):
    rng = np.random.RandomState(0)
    records = tmp_path / "pretrain_tfrecords"
    records.mkdir()
    for i in range(2):
        write_records(records / f"pretrain_data.tfrecord-{i}-of-2", 12, rng)
    shutil.copy(DATA / "vocab.txt", tmp_path / "vocab.txt")
    return tmp_path


def cli_args(data_dir, model_name="m", **hparams):
    return ["--data-dir", str(data_dir), "--model-name", model_name,
            "--hparams", json.dumps(dict(HPARAMS, **hparams))]


def run_main(args, capsys):
    """The command line's main() in this process (a process start costs ~10 s); returns its
    stdout."""
    from bert_tf.electra.run_pretraining import main

    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    return out.out


@pytest.mark.slow  # 6 steps and an eval of a tiny model
def test_command_line_trains_and_evaluates(data_dir, capsys):
    run_main(cli_args(data_dir), capsys)
    model_dir = data_dir / "models" / "m"
    reader = tf.train.load_checkpoint(str(model_dir / "model.ckpt-6"))
    names = set(reader.get_variable_to_shape_map())
    assert reader.get_tensor("global_step") == 6
    want = {v["name"] for v in json.loads(
        (DATA / "electra" / "expected.json").read_text())["variables"]}
    assert names == want  # exactly the original's variables, Adam slots included
    config = json.loads((model_dir / "bert_config.json").read_text())
    assert config["model_type"] == "electra" and config["embedding_size"] == 8
    assert config["hidden_act"] == "gelu_exact"

    stdout = run_main(cli_args(data_dir, do_train=False, do_eval=True), capsys)
    keys = ["disc_accuracy", "disc_auc", "disc_loss", "disc_precision", "disc_recall",
            "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
            "sampled_masked_lm_accuracy"]
    lines = [line for line in stdout.splitlines() if line.startswith("  ")]
    assert [line.split(" = ")[0].strip() for line in lines] == keys
    assert "  global_step = 6" in lines
    saved = (model_dir / "eval_results.txt").read_text().splitlines()
    assert saved == [line.strip() for line in lines]
    for line in lines:
        assert np.isfinite(float(line.split(" = ")[1]))


def test_continues_the_originals_checkpoint(data_dir):
    """A model dir holding the original's model.ckpt-3 (as the released models are continued):
    training resumes at step 3 with its moments and goes on to num_train_steps."""
    model_dir = data_dir / "models" / "m"
    model_dir.mkdir(parents=True)
    for path in (DATA / "electra").glob("model.ckpt-3.*"):
        shutil.copy(path, model_dir / path.name)
    (model_dir / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-3"\n')
    hp = PretrainingHparams.from_args(str(data_dir), "m", dict(HPARAMS, num_train_steps=4))
    history = []
    checkpoint, _ = run(hp, step_callback=lambda step, values: history.append(step))
    assert checkpoint == str(model_dir / "model.ckpt-4") and history == [3]
    before = read_checkpoint(DATA / "electra" / "model.ckpt-3")
    after = read_checkpoint(checkpoint)
    assert sorted(before) == sorted(after)
    moved = [n for n in before if n != "global_step" and not np.array_equal(before[n], after[n])]
    assert len(moved) > len(before) // 2


@pytest.mark.slow  # three runs of 30 steps, one of them killed in another process
def test_sigkill_and_resume_is_uninterrupted(data_dir, capsys):
    # Enough steps after the kill point that the run cannot finish in the 0.2 s before the kill.
    steps = dict(num_train_steps=30)
    run_main(cli_args(data_dir, model_name="reference", **steps), capsys)
    kill_after_checkpoint(cli_args(data_dir, model_name="killed", **steps),
                          data_dir / "models" / "killed", 4, random.Random(os.getpid()),
                          driver=DRIVER)
    assert not state_lists(data_dir / "models" / "killed", 30)
    latest = tf.train.latest_checkpoint(str(data_dir / "models" / "killed"))
    assert 4 <= int(latest.rsplit("-", 1)[1]) < 30  # what the restart resumes from
    run_main(cli_args(data_dir, model_name="killed", **steps), capsys)
    assert_checkpoints_identical(data_dir / "models" / "reference" / "model.ckpt-30",
                                 data_dir / "models" / "killed" / "model.ckpt-30")


@pytest.mark.parametrize("hparams, message", [
    (dict(learning_rat=1e-3), "learning_rat"),
    (dict(do_eval=True), "exactly one of the hparams do_train and do_eval"),
    (dict(electric_objective=True), "Electric objective"),
    (dict(max_seq_length=12), "input_ids has 16 values, the hparam max_seq_length is 12"),
    (dict(vocab_size=20), "has 30 entries, more than the hparam vocab_size=20"),
])
def test_bad_hparams_are_one_line_errors(data_dir, hparams, message, capsys):
    from bert_tf.electra.run_pretraining import main

    assert main(cli_args(data_dir, **hparams)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("run_pretraining: error: ") and message in err[0]


def test_missing_records_are_named(tmp_path, capsys):
    from bert_tf.electra.run_pretraining import main

    shutil.copy(DATA / "vocab.txt", tmp_path / "vocab.txt")
    assert main(cli_args(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert "pretrain_tfrecords" in err and "pretrain_data.tfrecord*" in err


MIRRORED_DRIVER = """\
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from bert_tf.electra.run_pretraining import main
sys.exit(main(json.loads(sys.argv[1])))
"""


@pytest.mark.slow  # a process start and 6 steps
def test_mirrored_strategy_with_bf16_and_accumulation(data_dir):
    """Under MirroredStrategy over 2 logical CPUs, bf16, 2 micro-batches: the run completes with
    finite losses and the original's checkpoint names. (Masking draws per replica, so the
    numbers are not those of one device.)"""
    import subprocess
    import sys

    from test_training_helpers import REPO, env

    args = cli_args(data_dir) + ["--strategy", "mirrored", "--mixed-precision", "bf16",
                                 "--gradient-accumulation-steps", "2"]
    proc = subprocess.run([sys.executable, "-c", MIRRORED_DRIVER, json.dumps(args)],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    checkpoint = read_checkpoint(data_dir / "models" / "m" / "model.ckpt-6")
    want = {v["name"] for v in json.loads(
        (DATA / "electra" / "expected.json").read_text())["variables"]}
    assert set(checkpoint) == want
    assert all(np.all(np.isfinite(v)) for v in checkpoint.values())
    assert "loss " in proc.stderr  # the progress lines


def test_a_model_dir_held_by_another_run_is_refused_in_one_line(data_dir, capsys):
    """Two training runs of one model dir would prune each other's checkpoints: the second
    refuses, naming the process that holds it (bert_tf/training/output_lock.py)."""
    from bert_tf.electra.run_pretraining import main
    from test_training_output_lock import start_holder

    holder = start_holder(data_dir / "models" / "m")
    try:
        capsys.readouterr()
        assert main(cli_args(data_dir)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("run_pretraining: error: ")
        assert f"process {holder.pid}" in err[0]
        assert not list((data_dir / "models" / "m").glob("model.ckpt-*"))
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
