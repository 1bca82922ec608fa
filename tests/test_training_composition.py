"""The scale features together: under MirroredStrategy (2 logical CPUs) and across a resume."""

import shutil

import numpy as np
import pytest

from bert_tf import checkpoints

from test_training_helpers import read_checkpoint, run_driver, tiny_options, write_config


def _assert_checkpoints_close(a, b, atol):
    assert sorted(a) == sorted(b)
    for name in a:
        if "/key/bias" in name:
            # Gradient 0 in real arithmetic: the optimizer amplifies rounding noise.
            continue
        np.testing.assert_allclose(b[name], a[name], rtol=0, atol=atol, err_msg=name)


@pytest.mark.slow
def test_mirrored_lamb_accumulation_xla_equals_default(tmp_path):
    write_config(tmp_path / "bert_config.json", hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0)
    common = dict(shuffle_buffer_size=0, num_train_steps=4, save_checkpoints_steps=4,
                  iterations_per_loop=2, train_batch_size=8, optimizer="lamb", do_eval=True)
    single = run_driver(tiny_options(tmp_path, tmp_path / "single", **common))
    mirrored = run_driver(tiny_options(tmp_path, tmp_path / "mirrored", strategy="mirrored",
                                       cpus=2, gradient_accumulation_steps=2, use_xla=True,
                                       **common))
    a = read_checkpoint(tmp_path / "single" / "model.ckpt-4")
    b = read_checkpoint(tmp_path / "mirrored" / "model.ckpt-4")
    assert "bert/embeddings/word_embeddings/lamb_m" in a
    _assert_checkpoints_close(a, b, atol=1e-5)
    np.testing.assert_allclose([v["total_loss"] for _, v in mirrored["history"]],
                               [v["total_loss"] for _, v in single["history"]], rtol=1e-5)
    for key, value in single["results"].items():
        np.testing.assert_allclose(mirrored["results"][key], value, rtol=1e-4, err_msg=key)


@pytest.mark.slow
def test_mirrored_fp16_overflow_skips_on_every_replica(tmp_path):
    # Overflowing gradients on both replicas: every step is skipped everywhere (no replica
    # updates its copy alone), the scale halves per step, eval still runs.
    run_driver(tiny_options(tmp_path, tmp_path / "out", strategy="mirrored", cpus=2,
                            mixed_precision="fp16", initial_loss_scale=2.0 ** 100,
                            optimizer="lamb", gradient_accumulation_steps=2,
                            train_batch_size=8, num_train_steps=2, save_checkpoints_steps=2,
                            do_eval=True))
    saved = read_checkpoint(tmp_path / "out" / "model.ckpt-2")
    assert saved["bert_tf/loss_scale"] == 2.0 ** 98 and int(saved["global_step"]) == 2
    assert not any(np.any(v) for k, v in saved.items() if k.endswith(("/lamb_m", "/lamb_v")))


@pytest.mark.slow
def test_fp16_lamb_accumulation_resumes_exactly(tmp_path):
    common = dict(optimizer="lamb", mixed_precision="fp16", gradient_accumulation_steps=2,
                  loss_scale_growth_interval=3, num_train_steps=6, save_checkpoints_steps=2,
                  iterations_per_loop=2, train_batch_size=8)

    def train(out, **overrides):
        # A fresh process per run, as a restart after a crash.
        result = run_driver(tiny_options(tmp_path, out, **dict(common, **overrides)))
        return result["checkpoint"], [tuple(h) for h in result["history"]]

    straight, history = train(tmp_path / "straight", keep_checkpoint_max=0)
    # As if killed after the checkpoint of step 2 (with its loss scale and input position;
    # the SIGKILL timing itself is covered by test_training_loop.py).
    shutil.copytree(tmp_path / "straight", tmp_path / "resumed")
    for path in (tmp_path / "resumed").glob("model.ckpt-[46].*"):
        path.unlink()
    prefix = str(tmp_path / "resumed" / "model.ckpt-2")
    checkpoints.write_checkpoint_state(str(tmp_path / "resumed"), prefix, [prefix])
    resumed, tail = train(tmp_path / "resumed", keep_checkpoint_max=0)
    assert [s for s, _ in tail] == [2, 3, 4, 5]
    assert tail == history[2:]
    assert [v["loss_scale"] for _, v in history] == [2.0 ** 15] * 3 + [2.0 ** 16] * 3
    a, b = read_checkpoint(straight), read_checkpoint(resumed)
    assert a["bert_tf/loss_scale"] == 2.0 ** 17  # grew again after step 6
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)
