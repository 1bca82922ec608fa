"""`python -m bert_tf.albert.export_checkpoints`: the weights of an ALBERT checkpoint (encoder
and both heads) and global_step 0, no optimizer slots, as google-research/albert's
export_checkpoints.py writes them (compared live with a copy of the original)."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bert_tf.albert.export_checkpoints import export
from test_training_helpers import REPO, env, read_checkpoint
from conftest import ALBERT_ORIGINAL_REPO

MODEL = Path(__file__).resolve().parent / "data" / "albert_model" / "grouped"
ORIGINAL = ALBERT_ORIGINAL_REPO
ORIGINAL_DRIVER = """\
import sys
import tensorflow as tf
from tools.original import load_albert_module
tf.compat.v1.disable_eager_execution()  # TF1, where its main runs
module = load_albert_module(sys.argv[1], "export_checkpoints")
module.FLAGS(["export_checkpoints", "--albert_directory=" + sys.argv[2],
              "--checkpoint_name=" + sys.argv[3], "--export_path=" + sys.argv[4]])
module.main(None)
"""


def training_checkpoint(tmp_path):
    """MODEL's weights as a training checkpoint at step 7, with adam_m/adam_v slots."""
    directory = tmp_path / "model"
    directory.mkdir()
    shutil.copy(MODEL / "albert_config.json", directory)
    weights = read_checkpoint(MODEL / "model.ckpt")
    import tensorflow as tf

    tensors = dict(weights, global_step=np.int64(7))
    for name, value in weights.items():
        tensors[f"{name}/adam_m"] = np.full_like(value, 0.5)
        tensors[f"{name}/adam_v"] = np.full_like(value, 0.25)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(directory / "model.ckpt-best"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])
    return directory, weights


def test_export_writes_the_weights_and_global_step_0(tmp_path):
    directory, weights = training_checkpoint(tmp_path)
    prefix = export(str(directory), "model.ckpt-best", str(tmp_path / "out" / "albert"))
    exported = read_checkpoint(prefix)
    assert sorted(exported) == sorted(list(weights) + ["global_step"])
    assert exported["global_step"] == 0 and exported["global_step"].dtype == np.int64
    for name, value in weights.items():
        np.testing.assert_array_equal(exported[name], value, err_msg=name)


def test_the_originals_export_has_the_same_tensors(tmp_path):
    if not (ORIGINAL / "export_checkpoints.py").is_file():
        pytest.skip(f"no copy of google-research/albert at {ORIGINAL} (set ALBERT_ORIGINAL_REPO)")
    directory, _ = training_checkpoint(tmp_path)
    original = tmp_path / "original" / "albert"
    proc = subprocess.run([sys.executable, "-c", ORIGINAL_DRIVER, str(ORIGINAL), str(directory),
                           "model.ckpt-best", str(original)],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = read_checkpoint(original)
    ours = read_checkpoint(export(str(directory), "model.ckpt-best", str(tmp_path / "ours")))
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype, name
        np.testing.assert_array_equal(ours[name], value, err_msg=name)


def test_a_missing_checkpoint_is_one_line(tmp_path, capsys):
    proc = subprocess.run([sys.executable, "-m", "bert_tf.albert.export_checkpoints",
                           f"--albert_directory={MODEL}", "--checkpoint_name=nothing",
                           f"--export_path={tmp_path / 'x'}"],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    assert proc.returncode == 1
    err = [line for line in proc.stderr.splitlines() if line.startswith("export_checkpoints")]
    assert len(err) == 1 and err[0].startswith("export_checkpoints.py: error: ")
    assert "nothing" in err[0]
