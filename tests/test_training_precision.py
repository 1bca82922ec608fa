"""Mixed precision: the dtype policy, dynamic fp16 loss scaling (skip + lower on overflow,
growth, checkpointed), and bf16/fp16 training on the golden data close to float32 with float32
checkpoints in the original names."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import precision
from test_training_accumulation import FixedStream, make_batch, trainer, weights
from test_training_helpers import GOLDEN_TRAIN, read_checkpoint


def test_loss_scale_halves_on_overflow_and_doubles_after_growth_interval():
    scale = precision.DynamicLossScale(initial_scale=8.0, growth_interval=3, min_scale=2.0)
    history = []
    for finite in (True, True, False, True, True, True, True, False, False, False):
        scale.update(tf.constant(finite))
        history.append((float(scale.scale.numpy()), int(scale.good_steps.numpy())))
    assert history == [(8, 1), (8, 2), (4, 0), (4, 1), (4, 2), (8, 0), (8, 1), (4, 0),
                       (2, 0), (2, 0)]
    grads = [tf.constant([1.0, 2.0]), tf.constant([[np.inf]])]
    assert not bool(scale.all_finite(grads))
    assert bool(scale.all_finite(grads[:1]))


def test_dtype_policy_applies_while_building_only():
    before = keras.config.dtype_policy().name
    with precision.dtype_policy("bf16"):
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == before
    with pytest.raises(ValueError, match="--mixed_precision='fp8'"):
        with precision.dtype_policy("fp8"):
            pass


@pytest.mark.slow
def test_fp16_overflow_skips_the_step_and_lowers_the_scale(tmp_path):
    t = trainer(tmp_path, mixed_precision="fp16", initial_loss_scale=2.0 ** 100,
                loss_scale_growth_interval=2, train_batch_size=8)
    assert t.model.bert.compute_dtype == "float16"
    assert all(v.dtype == tf.float32 for v in t.train_variables)
    before = weights(t)
    train = t.make_train_function(FixedStream(make_batch(batch=8)))
    values = train(tf.constant(1))
    assert np.isfinite(values["total_loss"].numpy()).all()
    assert not np.isfinite(values["grad_norm"].numpy()).all()
    assert values["loss_scale"].numpy().tolist() == [2.0 ** 100]
    for name, value in weights(t).items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    assert all(not np.any(v) for slot in t.optimizer.get_state().values() for v in slot.values())
    assert int(t.global_step.numpy()) == 1  # the step is counted (schedule and data move on)
    assert float(t.loss_scale.scale.numpy()) == 2.0 ** 99

    # A representable scale: the steps apply, and the scale doubles after 2 finite steps.
    t.loss_scale.scale.assign(2.0 ** 10)
    values = train(tf.constant(2))
    assert np.isfinite(values["grad_norm"].numpy()).all()
    assert values["loss_scale"].numpy().tolist() == [2.0 ** 10, 2.0 ** 10]
    assert float(t.loss_scale.scale.numpy()) == 2.0 ** 11
    changed = weights(t)
    assert not np.array_equal(changed["bert/embeddings/word_embeddings"],
                              before["bert/embeddings/word_embeddings"])

    # Saved beside the float32 weights, restored on resume.
    prefix = t.save()
    saved = read_checkpoint(prefix)
    assert saved[precision.LOSS_SCALE_NAME] == 2.0 ** 11
    assert saved[precision.GOOD_STEPS_NAME] == 0
    again = trainer(tmp_path, mixed_precision="fp16", train_batch_size=8)
    assert float(again.loss_scale.scale.numpy()) == 2.0 ** 15
    assert again.restore() == prefix
    assert float(again.loss_scale.scale.numpy()) == 2.0 ** 11
    assert int(again.global_step.numpy()) == 3


needs_golden = pytest.mark.skipif(
    not GOLDEN_TRAIN.is_dir(), reason=f"golden fixtures absent: {GOLDEN_TRAIN} not found"
)


@needs_golden
@pytest.mark.slow
def test_bf16_and_fp16_train_close_to_float32_with_float32_checkpoints(tmp_path):
    from bert_tf.config import BertConfig
    from bert_tf.training.loop import PretrainingOptions, run
    from test_training_loop import golden_args

    config = BertConfig.from_json_file(str(GOLDEN_TRAIN / "bert_config.json"))
    results, paths = {}, {}
    for mode in ("none", "bf16", "fp16"):
        # The golden init checkpoint's gradients (norm ~100) overflow float16 at the default
        # initial scale 2**15: its first two steps would be skipped while the scale calibrates
        # (the overflow test above covers that); 2**8 lets every step apply.
        args = golden_args(str(tmp_path / mode), num_train_steps=3, mixed_precision=mode,
                           initial_loss_scale=2.0 ** 8)
        args.pop("bert_config_file")
        history = []
        checkpoint, _ = run(config, PretrainingOptions(**args), do_train=True,
                            step_callback=lambda s, v: history.append(v))
        results[mode] = (history, read_checkpoint(checkpoint))
        paths[mode] = checkpoint
    reference, ref_ckpt = results["none"]
    for mode in ("bf16", "fp16"):
        history, ckpt = results[mode]
        for key in ("total_loss", "masked_lm_loss", "next_sentence_loss"):
            np.testing.assert_allclose([v[key] for v in history], [v[key] for v in reference],
                                       rtol=0, atol=5e-2, err_msg=f"{mode} {key}")
        extra = {precision.LOSS_SCALE_NAME, precision.GOOD_STEPS_NAME} if mode == "fp16" else set()
        assert set(ckpt) == set(ref_ckpt) | extra, mode
        for name, value in ckpt.items():
            if name in ("global_step", precision.GOOD_STEPS_NAME):
                continue
            assert value.dtype == np.float32, (mode, name, value.dtype)
        # Not the float32 run under another name: low precision changed the weights a little.
        name = "bert/encoder/layer_0/attention/self/query/kernel"
        assert not np.array_equal(ckpt[name], ref_ckpt[name])
        np.testing.assert_allclose(ckpt[name], ref_ckpt[name], rtol=0, atol=5e-2)
    assert [v["loss_scale"] for v in results["fp16"][0]] == [2.0 ** 8] * 3
    # Loadable by what loads a float32 run's checkpoint (a float32 model).
    from bert_tf import checkpoints
    from bert_tf.pretraining import BertPretrainingModel
    report = checkpoints.load_original_checkpoint(BertPretrainingModel(config), paths["fp16"])
    assert not report.not_in_checkpoint and report.global_step == 3
    assert all(np.isfinite(v["grad_norm"]) for v in results["fp16"][0])
