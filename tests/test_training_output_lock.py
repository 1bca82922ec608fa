"""One run per --output_dir (bert_tf/training/output_lock.py): a second process is refused
with the first one's pid and host; a lock left by a dead process is taken over with a
warning; non-chief workers take none; the scripts hold it (tests/test_run_pretraining.py for a
real run killed and resumed)."""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

from bert_tf.training.output_lock import (
    LOCK_NAME, OutputDirInUseError, OutputDirLock, hold_output_dir,
)
from test_training_helpers import REPO, env, write_config

HOLDER = r"""
import sys
from bert_tf.training.output_lock import OutputDirLock
OutputDirLock(sys.argv[1]).acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes stdin or kills us
"""


def start_holder(output_dir):
    """A process holding output_dir's lock (until killed or its stdin closes)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(output_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env(), cwd=str(REPO))
    assert proc.stdout.readline().strip() == "held"
    return proc


def nonexistent_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        return int(f.read()) + 1  # above pid_max: no process can have it


def write_lock(output_dir, **holder):
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / LOCK_NAME).write_text(json.dumps(holder))


def test_a_second_process_is_refused_and_a_killed_ones_lock_is_taken_over(tmp_path, caplog):
    out = tmp_path / "out"
    holder = start_holder(out)
    try:
        with pytest.raises(OutputDirInUseError) as refused:
            OutputDirLock(str(out)).acquire()
        message = str(refused.value)
        assert "\n" not in message
        assert (f"--output_dir={out} is in use by process {holder.pid} on host "
                f"{socket.gethostname()} (") in message, message
        assert "wait for it to end or choose another --output_dir" in message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # SIGKILL runs no cleanup: the lock file stays, its flock is gone with the process.
    assert json.loads((out / LOCK_NAME).read_text())["pid"] == holder.pid
    lock = OutputDirLock(str(out))
    with caplog.at_level(logging.WARNING, logger="absl"):
        lock.acquire()
    try:
        assert f"was left by process {holder.pid} on host" in caplog.text
        assert "no longer runs" in caplog.text
        assert json.loads((out / LOCK_NAME).read_text())["pid"] == os.getpid()
    finally:
        lock.release()
    assert not (out / LOCK_NAME).exists()


def test_a_stale_lock_of_a_pid_that_does_not_exist_is_taken_over(tmp_path, caplog):
    out = tmp_path / "out"
    pid = nonexistent_pid()
    write_lock(out, pid=pid, host=socket.gethostname(), started="2026-01-01T00:00:00",
               command="run_classifier.py --output_dir=out")
    with caplog.at_level(logging.WARNING, logger="absl"):
        with hold_output_dir(str(out)):
            assert json.loads((out / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert f"was left by process {pid} on host {socket.gethostname()} (2026-01-01T00:00:00, " \
           f"run_classifier.py --output_dir=out), which no longer runs" in caplog.text
    assert not (out / LOCK_NAME).exists()


def test_a_lock_written_on_another_host_is_refused(tmp_path):
    out = tmp_path / "out"
    write_lock(out, pid=1234, host="elsewhere.example")
    with pytest.raises(OutputDirInUseError,
                       match=r"in use by process 1234 on host elsewhere\.example: .*another "
                             r"host .*if it no longer runs, delete .*bert_tf\.lock"):
        OutputDirLock(str(out)).acquire()
    assert (out / LOCK_NAME).exists()  # nothing the user may need is deleted


def test_released_on_errors_and_not_taken_by_non_chief_workers(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError):
        with hold_output_dir(str(out)):
            assert (out / LOCK_NAME).exists()
            with hold_output_dir(str(out)):  # the same process again: not a conflict
                pass
            assert (out / LOCK_NAME).exists()
            raise ValueError("a failing run")
    assert not (out / LOCK_NAME).exists()
    holder = start_holder(out)
    try:
        with hold_output_dir(str(out), is_chief=False):  # a worker: the chief holds it
            pass
        with pytest.raises(OutputDirInUseError, match=f"process {holder.pid} "):
            with hold_output_dir(str(out)):
                pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert holder.returncode == 0


def test_only_training_runs_of_the_scripts_take_the_lock(tmp_path):
    """bert_tf.flags.hold_output_dir: an eval/predict-only run (no checkpoints written) may run
    beside a training run, as with the original; a --do_train run may not."""
    import tensorflow as tf

    from bert_tf.flags import hold_output_dir as hold_for_script

    out = tmp_path / "out"
    strategy = tf.distribute.get_strategy()
    holder = start_holder(out)
    try:
        with hold_for_script(SimpleNamespace(output_dir=str(out), do_train=False), strategy):
            pass
        with pytest.raises(OutputDirInUseError, match=f"process {holder.pid} "):
            with hold_for_script(SimpleNamespace(output_dir=str(out), do_train=True), strategy):
                pass
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.slow  # a process start with TensorFlow
def test_fine_tuning_script_refuses_a_held_output_dir(tmp_path):
    """run_classifier.py (and so run_squad.py, run_tagging.py: the same run_fine_tuning) says
    in one line which process holds --output_dir, before any work."""
    out = tmp_path / "out"
    holder = start_holder(out)
    try:
        proc = subprocess.run(
            [sys.executable, "run_classifier.py", "--task_name=mrpc", f"--data_dir={tmp_path}",
             f"--vocab_file={tmp_path}/vocab.txt",
             f"--bert_config_file={write_config(tmp_path / 'bert_config.json')}",
             f"--output_dir={out}", "--do_train"],
            cwd=str(REPO), capture_output=True, text=True, timeout=120, env=env())
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if "run_classifier.py: error:" in line]
    assert len(errors) == 1 and errors[0].startswith(
        f"run_classifier.py: error: --output_dir={out} is in use by process {holder.pid} on "
        f"host {socket.gethostname()}"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
