"""The scale features together under MirroredStrategy (2 logical CPUs). Resume after SIGKILL
with LAMB + fp16 + accumulation: tests/test_training_loop.py."""

import numpy as np
import pytest

from test_training_helpers import (
    pretraining_key_bias_bounds, read_checkpoint, run_driver, run_in_process, tiny_options,
    write_config,
)


def _assert_checkpoints_close(a, b, atol, zero_gradients):
    """Every tensor within `atol`, but the key biases (gradient 0 in real arithmetic: rounding
    noise that the optimizer amplifies), bounded by `zero_gradients`."""
    assert sorted(a) == sorted(b)
    for name in a:
        if name not in zero_gradients.names():
            np.testing.assert_allclose(b[name], a[name], rtol=0, atol=atol, err_msg=name)
    zero_gradients.check(a, b)


@pytest.mark.slow
def test_mirrored_lamb_accumulation_xla_equals_default(tmp_path):
    write_config(tmp_path / "bert_config.json", hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0)
    common = dict(shuffle_buffer_size=0, num_train_steps=4, save_checkpoints_steps=4,
                  iterations_per_loop=2, train_batch_size=8, optimizer="lamb", do_eval=True)
    single = run_in_process(tiny_options(tmp_path, tmp_path / "single", **common),
                            pretraining=True)
    mirrored = run_driver(tiny_options(tmp_path, tmp_path / "mirrored", strategy="mirrored",
                                       cpus=2, gradient_accumulation_steps=2, use_xla=True,
                                       **common))
    a = read_checkpoint(tmp_path / "single" / "model.ckpt-4")
    b = read_checkpoint(tmp_path / "mirrored" / "model.ckpt-4")
    assert "bert/embeddings/word_embeddings/lamb_m" in a
    # 2 replicas x 2 micro-batches: 3 more additions of whole gradients.
    bounds = pretraining_key_bias_bounds(
        tmp_path, tiny_options(tmp_path, tmp_path / "single", **common),
        [tmp_path / "single" / "model.ckpt-4", tmp_path / "mirrored" / "model.ckpt-4"],
        [v["learning_rate"] for _, v in single["history"]], extra_additions=3,
        slots=("lamb_m", "lamb_v"))
    _assert_checkpoints_close(a, b, atol=1e-5, zero_gradients=bounds)
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
