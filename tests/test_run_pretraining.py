"""run_pretraining.py on the command line: the original's flags, progress log, checkpoints,
and a clear error (naming the file or flag) for each kind of bad input."""

import re
import subprocess
import sys

import pytest

from test_training_helpers import (
    REPO, env, read_checkpoint, write_config, write_records,
)

SCRIPT = str(REPO / "run_pretraining.py")


def run_script(*flags, timeout=240):
    return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True,
                          timeout=timeout, env=env(), cwd=str(REPO))


@pytest.fixture()
def setup(tmp_path):
    config = write_config(tmp_path / "bert_config.json")
    data = write_records(tmp_path / "data.tfrecord", 24)
    base = [f"--bert_config_file={config}", f"--input_file={data}",
            f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16",
            "--max_predictions_per_seq=3", "--train_batch_size=4", "--eval_batch_size=4",
            "--num_train_steps=4", "--num_warmup_steps=1", "--save_checkpoints_steps=2",
            "--iterations_per_loop=2", "--learning_rate=1e-3"]
    return tmp_path, base


def assert_error(proc, *patterns):
    assert proc.returncode != 0, proc.stderr[-2000:]
    message = [l for l in proc.stderr.splitlines() if "run_pretraining.py: error:" in l]
    assert message, f"no clear error line:\n{proc.stderr[-3000:]}"
    for pattern in patterns:
        assert re.search(pattern, message[0]), (pattern, message[0])
    assert "Traceback" not in proc.stderr


def scalar_tags(logdir):
    """{tag: [steps]} of the TensorBoard scalar summaries under `logdir`."""
    import tensorflow as tf
    from tensorflow.core.util import event_pb2

    tags = {}
    for path in logdir.glob("events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                assert tf.make_ndarray(value.tensor).shape == ()
                tags.setdefault(value.tag, []).append(event.step)
    return tags


@pytest.mark.slow
def test_train_eval_and_resume_through_the_command_line(setup):
    tmp_path, base = setup
    proc = run_script(*base, "--do_train", "--do_eval")
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = tmp_path / "out"
    assert re.search(r"step 4/4  loss [\d.]+  mlm [\d.]+  nsp [\d.]+  lr [\d.e-]+  "
                     r"[\d.]+ steps/s  [\d.]+ examples/s  ETA", proc.stderr)
    ckpt = read_checkpoint(out / "model.ckpt-4")
    assert int(ckpt["global_step"]) == 4
    assert "bert/embeddings/word_embeddings/adam_m" in ckpt
    assert 'model_checkpoint_path: "model.ckpt-4"' in (out / "checkpoint").read_text()
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert sorted(results) == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                               "next_sentence_accuracy", "next_sentence_loss"]
    assert results["global_step"] == "4"
    tags = scalar_tags(out / "train")
    assert {"loss", "masked_lm_loss", "next_sentence_loss", "learning_rate",
            "examples_per_sec"} <= set(tags)
    assert sorted(tags["loss"]) == [1, 2, 3, 4]
    assert set(scalar_tags(out / "eval")) >= {"masked_lm_accuracy", "loss"}
    # More steps with the same output_dir continue from step 4.
    flags = [f for f in base if not f.startswith("--num_train_steps")]
    proc = run_script(*flags, "--num_train_steps=6", "--do_train")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Resuming from" in proc.stderr and "model.ckpt-4 at global_step 4" in proc.stderr
    assert "step 6/6" in proc.stderr and "step 2/6" not in proc.stderr


@pytest.mark.slow
def test_bad_command_lines_give_a_clear_error(setup):
    # Each kind of bad input is covered in-process by test_training_errors.py; these check
    # that the script turns them into one clear line and a non-zero exit, not a traceback.
    tmp_path, base = setup
    assert_error(run_script(*base), "at least one of --do_train or --do_eval")
    flags = [f for f in base if not f.startswith("--input_file=")]
    assert_error(run_script(*flags, f"--input_file={tmp_path / 'missing*.tfrecord'}", "--do_train"),
                 r"--input_file: no file matches .*missing\*\.tfrecord")
    assert_error(run_script(*base, "--do_train", "--use_tpu", "--tpu_name=no-such-tpu"),
                 r"no TPU reachable \(--tpu_name='no-such-tpu'")


@pytest.mark.slow  # 3 script runs, one of them killed
def test_a_second_run_into_the_output_dir_is_refused_and_a_killed_runs_lock_taken_over(setup):
    """Two runs in one output_dir would delete each other's checkpoints: the second refuses,
    naming the first's pid; once the first is SIGKILLed (its lock file stays), a rerun takes
    the output_dir over with a warning, resumes, and removes the lock file at its end."""
    import signal
    import socket
    import time

    tmp_path, base = setup
    out = tmp_path / "out"
    flags = [f for f in base if not f.startswith(("--num_train_steps", "--iterations_per"))]
    first = subprocess.Popen([sys.executable, SCRIPT, *flags, "--num_train_steps=100000",
                              "--iterations_per_loop=1", "--do_train"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(),
                             cwd=str(REPO))
    try:
        deadline = time.time() + 180
        while not (out / "model.ckpt-2.index").exists():
            assert first.poll() is None and time.time() < deadline, "the first run ended"
            time.sleep(0.05)
        second = run_script(*flags, "--num_train_steps=4", "--do_train")
        assert_error(second, rf"--output_dir={re.escape(str(out))} is in use by process "
                             rf"{first.pid} on host {re.escape(socket.gethostname())} ")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert (out / "bert_tf.lock").exists()
    third = run_script(*flags, "--num_train_steps=4", "--do_train")
    assert third.returncode == 0, third.stderr[-4000:]
    assert re.search(rf"bert_tf\.lock was left by process {first.pid} on host .*which no "
                     r"longer runs", third.stderr)
    assert "Resuming from" in third.stderr
    assert not (out / "bert_tf.lock").exists()
