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
    """Three training steps in each mode on the golden data, a checkpoint after each.

    The losses of a 16-bit run and of the float32 run part ways for two reasons: rounding in
    the forward pass, and weights that differ after the first update (low-precision gradients
    move Adam's first, sign-like steps elsewhere, which no rounding analysis bounds usefully).
    So each loss the 16-bit run logs at step k is compared with the float32 model's loss at
    the same weights (that run's checkpoint k-1) on the same batch, within the rounding-error
    bound of tests/rounding_bounds.py, which follows from the unit roundoff, not from a run on
    some CPU. Dropout is off so that the bound, computed by a pass without dropout, is the bound
    of exactly the function both runs computed. Measured on an AMD EPYC without AVX-512:
    worst |error| / bound 0.26 for bfloat16 and 0.13 for float16 (0.26 and 0.08 with
    TF_ENABLE_ONEDNN_OPTS=0)."""
    from bert_tf import checkpoints
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining import BertPretrainingModel, pretraining_loss
    from bert_tf.training.input_pipeline import make_dataset
    from bert_tf.bert.pretraining_task import PretrainingOptions, run
    from rounding_bounds import RoundingErrorBounds, assert_within_bounds
    from test_training_loop import golden_args

    config = BertConfig.from_json_file(str(GOLDEN_TRAIN / "bert_config.json"))
    config = BertConfig.from_dict(dict(config.to_dict(), hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0))
    losses = ("total_loss", "masked_lm_loss", "next_sentence_loss")
    results, paths = {}, {}
    for mode in ("none", "bf16", "fp16"):
        # The golden init checkpoint's gradients (norm ~100) overflow float16 at the default
        # initial scale 2**15: its first two steps would be skipped while the scale calibrates
        # (the overflow test above covers that); 2**8 lets every step apply.
        args = golden_args(str(tmp_path / mode), num_train_steps=3, mixed_precision=mode,
                           initial_loss_scale=2.0 ** 8, save_checkpoints_steps=1,
                           iterations_per_loop=1)
        args.pop("bert_config_file")
        history = []
        checkpoint, _ = run(config, PretrainingOptions(**args), do_train=True,
                            step_callback=lambda s, v: history.append(v))
        results[mode] = (history, read_checkpoint(checkpoint))
        paths[mode] = [str(GOLDEN_TRAIN / "init.ckpt")] + [
            str(tmp_path / mode / f"model.ckpt-{k}") for k in (1, 2, 3)]

    # The batches of steps 1-3: shuffle_buffer_size=0 reads the file in order.
    batches = list(make_dataset(args["input_files"], 32, 5, 4, is_training=True,
                                shuffle_buffer_size=0).take(3))
    reference = BertPretrainingModel(config)
    with precision.dtype_policy("bf16"):
        bf16_model = BertPretrainingModel(config)
    with precision.dtype_policy("fp16"):
        fp16_model = BertPretrainingModel(config)

    def loss_of(model):
        return lambda batch: pretraining_loss(model(batch), batch)

    def float32_losses(prefix, batch):
        checkpoints.load_original_checkpoint(reference, prefix)
        return {k: float(v) for k, v in loss_of(reference)(batch).items() if k in losses}

    # The float32 run logs exactly the float32 loss of its weights on these batches: the
    # batches and weights below are the ones each step used.
    for k, batch in enumerate(batches):
        want = float32_losses(paths["none"][k], batch)
        for key in losses:
            np.testing.assert_allclose(results["none"][0][k][key], want[key], rtol=1e-5,
                                       err_msg=f"float32 step {k + 1} {key}")

    for mode, model, dtype in (("bf16", bf16_model, "bfloat16"), ("fp16", fp16_model, "float16")):
        history, ckpt = results[mode]
        bounds_of = RoundingErrorBounds(loss_of(model), dtype)
        for k, batch in enumerate(batches):
            want = float32_losses(paths[mode][k], batch)
            checkpoints.load_original_checkpoint(model, paths[mode][k])
            bounds = bounds_of(batch, losses)
            for key in losses:
                assert_within_bounds(history[k][key], want[key], bounds[key],
                                     label=f"{mode} step {k + 1} {key}")
        # Training works in every mode: this batch stream's loss falls at every step.
        total = [v["total_loss"] for v in history]
        assert total[0] > total[1] > total[2], (mode, total)

        extra = {precision.LOSS_SCALE_NAME, precision.GOOD_STEPS_NAME} if mode == "fp16" else set()
        ref_ckpt = results["none"][1]
        assert set(ckpt) == set(ref_ckpt) | extra, mode
        for name, value in ckpt.items():
            if name in ("global_step", precision.GOOD_STEPS_NAME):
                continue
            assert value.dtype == np.float32, (mode, name, value.dtype)
        # Not the float32 run under another name: low precision changed the weights.
        name = "bert/encoder/layer_0/attention/self/query/kernel"
        assert not np.array_equal(ckpt[name], ref_ckpt[name])
    assert [v["loss_scale"] for v in results["fp16"][0]] == [2.0 ** 8] * 3
    # Loadable by what loads a float32 run's checkpoint (a float32 model).
    report = checkpoints.load_original_checkpoint(BertPretrainingModel(config), paths["fp16"][3])
    assert not report.not_in_checkpoint and report.global_step == 3
    assert all(np.isfinite(v["grad_norm"]) for v in results["fp16"][0])


# CPU flag sets as Linux lists them in /proc/cpuinfo (abridged to what matters here).
EPYC_AVX2 = "fpu sse2 avx fma avx2 bmi2 sha_ni vaes vpclmulqdq"  # this machine
SKYLAKE_SP = EPYC_AVX2 + " avx512f avx512dq avx512bw avx512vl"
COOPER_LAKE = SKYLAKE_SP + " avx512_bf16"
SAPPHIRE_RAPIDS = COOPER_LAKE + " avx512_fp16 amx_tile amx_bf16 amx_int8"


def cpu(tmp_path, model, flags):
    """A CpuInfo read, as on a real machine, from a /proc/cpuinfo-shaped file."""
    from bert_tf.training import cpu_features

    path = tmp_path / f"cpuinfo-{abs(hash(flags))}"
    processor = f"processor\t: 0\nvendor_id\t: X\nmodel name\t: {model}\nflags\t\t: {flags}\n\n"
    path.write_text(processor + processor.replace(": 0", ": 1"))
    return cpu_features.read_cpu_info(str(path))


@pytest.mark.parametrize("flags, bf16, fp16", [
    (EPYC_AVX2, False, False), (SKYLAKE_SP, False, False), (COOPER_LAKE, True, False),
    (SAPPHIRE_RAPIDS, True, True),
], ids=["epyc_avx2", "skylake_avx512", "cooper_lake", "sapphire_rapids"])
def test_cpu_flags_decide_native_16_bit(tmp_path, flags, bf16, fp16):
    info = cpu(tmp_path, "Some CPU @ 2.0GHz", flags)
    assert info.model_name == "Some CPU @ 2.0GHz"
    assert (info.native("bf16"), info.native("fp16")) == (bf16, fp16)
    assert ("-avx512_bf16" in info.describe()) == (not bf16)
    assert info.describe().startswith("Some CPU @ 2.0GHz; avx2 fma ")


def test_unreadable_cpuinfo_means_unknown(tmp_path):
    from bert_tf.training import cpu_features

    info = cpu_features.read_cpu_info(str(tmp_path / "absent"))
    assert info.flags is None and info.native("bf16") is None
    assert "flags unknown" in info.describe()
    cpu_device = precision.ComputeDevice("cpu")
    assert precision.resolve_mixed_precision("auto", device=cpu_device, cpu_info=info) == "none"


@pytest.mark.parametrize("device, flags, expected", [
    (("cpu",), EPYC_AVX2, "none"),
    (("cpu",), SKYLAKE_SP, "none"),
    (("cpu",), COOPER_LAKE, "bf16"),
    (("cpu",), SAPPHIRE_RAPIDS, "bf16"),
    (("tpu",), EPYC_AVX2, "bf16"),
    (("gpu", ((8, 0),)), EPYC_AVX2, "bf16"),
    (("gpu", ((7, 5),)), SAPPHIRE_RAPIDS, "fp16"),  # the GPU computes, not the host CPU
    (("gpu", ((8, 6), (7, 0))), EPYC_AVX2, "fp16"),  # the slowest GPU decides
    (("gpu", ((6, 1),)), EPYC_AVX2, "none"),
])
def test_auto_chooses_what_the_hardware_computes_natively(tmp_path, device, flags, expected):
    info = cpu(tmp_path, "CPU", flags)
    got = precision.resolve_mixed_precision("auto", device=precision.ComputeDevice(*device),
                                            cpu_info=info)
    assert got == expected


def test_explicit_16_bit_is_kept_and_warned_about_once_where_not_native(tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(precision, "_warned", set())
    monkeypatch.setattr(precision.logging, "warning",
                        lambda fmt, *args: warnings.append(fmt % args))
    device = precision.ComputeDevice("cpu")
    epyc = cpu(tmp_path, "AMD EPYC", EPYC_AVX2)
    for _ in range(2):
        assert precision.resolve_mixed_precision("bf16", device=device, cpu_info=epyc) == "bf16"
    assert len(warnings) == 1
    assert warnings[0].startswith("--mixed_precision=bf16 will be slower than float32")
    assert "AMD EPYC, CPU without avx512_bf16 or amx_bf16" in warnings[0]
    assert "--mixed_precision=none" in warnings[0] and "docs/performance.md" in warnings[0]

    assert precision.resolve_mixed_precision("fp16", device=device, cpu_info=epyc) == "fp16"
    assert len(warnings) == 2 and "without avx512_fp16 or amx_fp16" in warnings[1]

    spr = cpu(tmp_path, "Intel Xeon", SAPPHIRE_RAPIDS)
    for name in ("bf16", "fp16", "none"):
        assert precision.resolve_mixed_precision(name, device=device, cpu_info=spr) == name
    old_gpu = precision.ComputeDevice("gpu", ((7, 5),))
    assert precision.resolve_mixed_precision("bf16", device=old_gpu, cpu_info=spr) == "bf16"
    assert len(warnings) == 3 and "compute capability 7.5; native bf16 needs 8.0" in warnings[2]

    with pytest.raises(ValueError, match=r"--mixed_precision='bf32': expected one of none, "
                                         r"bf16, fp16, auto"):
        precision.resolve_mixed_precision("bf32", device=device, cpu_info=spr)


def test_this_machine_is_detected():
    """No accelerator in the test environment: the replicas run on the CPU."""
    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        pytest.skip("an accelerator is present")
    assert precision.detect_compute_device().kind == "cpu"
    one_cpu = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert precision.detect_compute_device(one_cpu).kind == "cpu"
    assert precision.detect_compute_device(tf.distribute.get_strategy()).kind == "cpu"
