"""The trainer under faults (issue 18): damaged checkpoints in output_dir or as
--init_checkpoint, and a disk that fills while a checkpoint is written. Resuming afterwards
gives the uninterrupted run's weights, bit for bit."""

import logging
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from bert_tf import files
from bert_tf.training.trainer import TrainingError
from test_training_helpers import (
    REPO, assert_checkpoints_identical, env, read_checkpoint, run_in_process, tiny_options,
)

TOTAL = 8


def _args(tmp_path, output_dir, **overrides):
    options = dict(num_train_steps=TOTAL, save_checkpoints_steps=2, iterations_per_loop=2)
    return tiny_options(tmp_path, output_dir, **{**options, **overrides})


def _run(args):
    return run_in_process(args, pretraining=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run: its directory (checkpoints 4, 6, 8 and their input states)."""
    tmp_path = tmp_path_factory.mktemp("reference")
    out = _run(_args(tmp_path, tmp_path / "out"))
    assert out["checkpoint"].endswith(f"model.ckpt-{TOTAL}")
    return tmp_path


def _copy_run(reference, tmp_path):
    """The reference's data, config and output_dir copied into tmp_path (output_dir: out)."""
    for name in ("data.tfrecord", "bert_config.json"):
        shutil.copy(reference / name, tmp_path / name)
    shutil.copytree(reference / "out", tmp_path / "out")
    return tmp_path / "out"


def _cut(path):
    os.truncate(path, os.path.getsize(path) // 2)


def _bytes(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["data_cut", "index_missing", "input_state_cut"])
def test_resume_passes_over_a_damaged_latest_checkpoint(reference, tmp_path, caplog, damage):
    out = _copy_run(reference, tmp_path)
    latest = out / f"model.ckpt-{TOTAL}"
    if damage == "data_cut":
        _cut(f"{latest}.data-00000-of-00001")
    elif damage == "index_missing":
        os.remove(f"{latest}.index")
    else:
        _cut(f"{latest}.input-0-of-1.data-00000-of-00001")
    damaged_files = {p.name: p.read_bytes() for p in out.glob(f"model.ckpt-{TOTAL}.*")}
    # Rewind the run by one checkpoint: it must retrain steps 6-8 from model.ckpt-6.
    with caplog.at_level(logging.WARNING):
        result = _run(_args(tmp_path, out))
    previous = out / f"model.ckpt-{TOTAL - 2}"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                and "is damaged" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"checkpoint {latest} is damaged: ")
    assert f"resuming from {previous}, the newest intact checkpoint" in warnings[0]
    assert result["history"][0][0] == TOTAL - 2
    # Nothing deleted: the damaged files are in damaged/, byte for byte.
    assert _bytes(out / "damaged") == damaged_files
    assert_checkpoints_identical(reference / "out" / f"model.ckpt-{TOTAL}", latest)


@pytest.mark.parametrize("state", [b"\x00garbage{{", b""], ids=["garbled", "empty"])
def test_an_unreadable_state_file_resumes_from_the_newest_checkpoint(reference, tmp_path, state):
    out = _copy_run(reference, tmp_path)
    (out / "checkpoint").write_bytes(state)
    # What a run killed mid-write leaves is removed; a user's file is not.
    (out / "test_results.tsv.tmp-123-0123abcd").write_text("half")
    (out / "notes.tmp-draft").write_text("mine")
    # Before: no checkpoint seen, training from step 0 over them.
    result = _run(_args(tmp_path, out, num_train_steps=TOTAL + 2))
    assert result["history"][0][0] == TOTAL
    # The state file is rewritten from the checkpoints on disk: keep_checkpoint_max (5) keeps
    # them all, none is pruned as unlisted.
    assert sorted(p.name for p in out.glob("model.ckpt-*.index") if ".input" not in p.name) == (
        sorted(f"model.ckpt-{n}.index" for n in (2, 4, 6, 8, 10)))
    assert (out / "checkpoint").read_text() == 'model_checkpoint_path: "model.ckpt-10"\n' + "".join(
        f'all_model_checkpoint_paths: "model.ckpt-{n}"\n' for n in (2, 4, 6, 8, 10))
    assert not (out / "test_results.tsv.tmp-123-0123abcd").exists()
    assert (out / "notes.tmp-draft").read_text() == "mine"


def test_eval_uses_the_newest_intact_checkpoint_and_moves_nothing(reference, tmp_path, caplog):
    out = _copy_run(reference, tmp_path)
    _cut(out / f"model.ckpt-{TOTAL}.data-00000-of-00001")
    before = _bytes(out)
    with caplog.at_level(logging.WARNING):
        result = _run(_args(tmp_path, out, do_train=False, do_eval=True, max_eval_steps=1))
    assert result["checkpoint"] == str(out / f"model.ckpt-{TOTAL - 2}")
    assert result["results"]["global_step"] == TOTAL - 2
    assert any(f"using the weights of {out / f'model.ckpt-{TOTAL - 2}'}" in r.getMessage()
               for r in caplog.records)
    after = _bytes(out)
    assert {k: after[k] for k in before} == before and not (out / "damaged").exists()


def test_no_intact_checkpoint_is_one_line(reference, tmp_path):
    out = _copy_run(reference, tmp_path)
    for data in out.glob("model.ckpt-*.data-00000-of-00001"):
        if ".input-" not in data.name:
            _cut(data)
    before = _bytes(out)
    with pytest.raises(TrainingError) as err:
        _run(_args(tmp_path, out))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"--output_dir={out}: no intact checkpoint to resume from: "
                              f"checkpoint {out / f'model.ckpt-{TOTAL}'} is damaged: ")
    assert "(and 3 older ones)" in message  # model.ckpt-2, 4, 6
    assert _bytes(out) == before


@pytest.mark.parametrize("init_optimizer_state", [False, True])
def test_damaged_init_checkpoint_is_one_line(reference, tmp_path, init_optimizer_state):
    init = tmp_path / "init"
    init.mkdir()
    for path in (reference / "out").glob(f"model.ckpt-{TOTAL}.*"):
        if ".input-" not in path.name:
            shutil.copy(path, init / path.name)
    _cut(init / f"model.ckpt-{TOTAL}.data-00000-of-00001")
    with pytest.raises(TrainingError) as err:
        _run(_args(reference, tmp_path / "out", init_checkpoint=str(init / f"model.ckpt-{TOTAL}"),
                   init_optimizer_state=init_optimizer_state))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"--init_checkpoint: checkpoint {init / f'model.ckpt-{TOTAL}'} is "
                              f"damaged: {init / f'model.ckpt-{TOTAL}.data-00000-of-00001'} (")
    assert "is cut short" in message


def _fail_save_v2(monkeypatch, step):
    real = tf.raw_ops.SaveV2

    def save(prefix, tensor_names, shape_and_slices, tensors):
        prefix_text = prefix if isinstance(prefix, str) else prefix.numpy().decode()
        if f"model.ckpt-{step}.tmp" in prefix_text:
            with open(f"{prefix_text}.data-00000-of-00001.tempstate77", "wb") as f:
                f.write(b"\0" * 5000)
            raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")
        return real(prefix=prefix, tensor_names=tensor_names,
                    shape_and_slices=shape_and_slices, tensors=tensors)

    monkeypatch.setattr(tf.raw_ops, "SaveV2", save)


def _fail_input_state(monkeypatch, step):
    real = tf.train.Checkpoint.write

    def write(self, file_prefix, options=None):
        if f"model.ckpt-{step}.input" in str(file_prefix):
            part = f"{file_prefix}_temp/part-00000-of-00001.data-00000-of-00001"
            os.makedirs(os.path.dirname(part))
            with open(part, "wb") as f:
                f.write(b"\0" * 5000)
            raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")
        return real(self, file_prefix, options=options)

    monkeypatch.setattr(tf.train.Checkpoint, "write", write)


@pytest.mark.slow
@pytest.mark.parametrize("fail", [_fail_save_v2, _fail_input_state],
                         ids=["model_checkpoint", "input_state"])
def test_full_disk_while_saving_then_resume_gives_the_uninterrupted_weights(
        reference, tmp_path, monkeypatch, fail):
    out = tmp_path / "out"
    args = _args(tmp_path, out)
    fail(monkeypatch, 4)
    with pytest.raises(files.OutputError) as err:
        _run(args)
    monkeypatch.undo()
    message = str(err.value)
    assert "\n" not in message
    assert f": no space left on the device of {out} (" in message
    assert message.endswith(f"; {out / 'model.ckpt-2'} and the 'checkpoint' file are as they "
                            f"were: free space, then run the same command to resume from "
                            f"{out / 'model.ckpt-2'}")
    # The temporary files are gone; the step-2 checkpoint and the state file are intact.
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if "tmp" in n or "temp" in n or n.startswith("model.ckpt-4")]
    assert (out / "checkpoint").read_text().startswith('model_checkpoint_path: "model.ckpt-2"\n')
    assert_checkpoints_identical(reference / "out" / "model.ckpt-2", out / "model.ckpt-2")
    # Space freed: the same command resumes and ends as the uninterrupted run.
    result = _run(args)
    assert result["history"][0][0] == 2
    assert_checkpoints_identical(reference / "out" / f"model.ckpt-{TOTAL}",
                                 out / f"model.ckpt-{TOTAL}")


@pytest.mark.slow
def test_command_line_damaged_init_checkpoint(reference, tmp_path):
    init = reference / "out" / "model.ckpt-4"
    damaged = tmp_path / "model.ckpt-4"
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(f"{init}{suffix}", f"{damaged}{suffix}")
    _cut(f"{damaged}.data-00000-of-00001")
    proc = subprocess.run(
        [sys.executable, str(REPO / "run_pretraining.py"), "--do_train",
         f"--input_file={reference / 'data.tfrecord'}",
         f"--bert_config_file={reference / 'bert_config.json'}",
         f"--output_dir={tmp_path / 'out'}", f"--init_checkpoint={damaged}",
         "--max_seq_length=16", "--max_predictions_per_seq=3", "--train_batch_size=4",
         "--num_train_steps=2"],
        capture_output=True, text=True, timeout=300, env=env(), cwd=str(REPO))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("run_pretraining.py:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"run_pretraining.py: error: --init_checkpoint: checkpoint "
                                f"{damaged} is damaged: {damaged}.data-00000-of-00001 (")
    assert "is cut short: tensor " in errors[0]


def test_several_workers_do_not_pass_over_a_damaged_input_position(reference, tmp_path):
    """With several workers each has its own input position, so one worker cannot fall back
    alone: the restore of a damaged one is one line saying how to continue."""
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions

    out = _copy_run(reference, tmp_path)
    latest = out / f"model.ckpt-{TOTAL}"
    _cut(f"{latest}.input-0-of-1.data-00000-of-00001")
    args = _args(tmp_path, out)
    config = BertConfig.from_json_file(args.pop("bert_config_file"))
    trainer = Pretrainer(config, PretrainingOptions(**args))
    stream = trainer.input_stream(args["input_files"], 4, is_training=True)
    with pytest.raises(TrainingError) as err:
        trainer.restore_input_state(str(latest), stream)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"checkpoint {latest}.input-0-of-1 is damaged: ")
    assert f"move the files {latest}.* out of --output_dir and restart" in message


def test_full_disk_while_writing_tensorboard_events_is_one_line(tmp_path, monkeypatch):
    from bert_tf.training import summaries

    writer = summaries.ScalarWriter(str(tmp_path / "train"))
    writer.write(1, {"loss": 1.0})

    def full(*args, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "events; No space left on device")

    monkeypatch.setattr(tf.summary, "write", full)
    with pytest.raises(files.OutputError) as err:
        writer.write(2, {"loss": 1.0})
    assert str(err.value).startswith(f"cannot write TensorBoard events in {tmp_path / 'train'}: "
                                     f"no space left on the device of {tmp_path / 'train'} (")
    monkeypatch.setattr(tf.summary, "write", lambda *a, **k: (_ for _ in ()).throw(
        tf.errors.InvalidArgumentError(None, None, "another error")))
    with pytest.raises(tf.errors.InvalidArgumentError):  # passes through unchanged
        writer.write(3, {"loss": 1.0})
