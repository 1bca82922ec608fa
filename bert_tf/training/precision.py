"""Mixed precision for pretraining: the Keras dtype policy of the model, and dynamic loss
scaling for float16.

`--mixed_precision=bf16|fp16` builds the model under the `mixed_bfloat16` / `mixed_float16`
policy: matmuls and activations in the low precision, while variables, embeddings, LayerNorm,
softmax, log-probabilities, losses and the optimizer update stay float32 (the model pins them).
Checkpoints therefore hold the same float32 variables, in the original names, as a float32 run.

float16 has 5 exponent bits, so small gradients underflow: the loss is multiplied by a scale
before the backward pass and the gradients divided by it after. `DynamicLossScale` starts at
2**15; on a step whose gradients are not all finite it halves the scale and the optimizer step
is skipped (weights and moments unchanged; `global_step` still advances, so the learning-rate
schedule and the input stream move on as in a float32 run); after `growth_interval` (2000)
consecutive finite steps it doubles. The scale and the count of finite steps are saved in
checkpoints as `bert_tf/loss_scale` and `bert_tf/loss_scale_good_steps` (names no original
variable can have) and restored on resume.

16 bits are faster only on hardware that computes them natively (`resolve_mixed_precision`):
TPUs (bfloat16), GPUs of compute capability 8.0+ (bfloat16) or 7.0+ (float16 tensor cores),
and CPUs with AVX512_BF16/AMX-BF16 (bfloat16) or AVX512_FP16/AMX-FP16 (float16). On any other
CPU a 16-bit step is slower than a float32 one (docs/performance.md), so `--mixed_precision=auto`
picks float32 there, and an explicit bf16/fp16 is honoured with one warning saying why.
"""

import contextlib
import dataclasses

import keras
import tensorflow as tf
from absl import logging

from bert_tf.training import cpu_features, int8

POLICIES = {"none": None, "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
# What --mixed_precision accepts: a policy, or "auto" (resolve_mixed_precision chooses one).
CHOICES = (*POLICIES, "auto")

LOSS_SCALE_NAME = "bert_tf/loss_scale"
GOOD_STEPS_NAME = "bert_tf/loss_scale_good_steps"


def check_mixed_precision(name, flag="--mixed_precision"):
    if name not in POLICIES:
        raise ValueError(f"{flag}={name!r}: expected one of {', '.join(POLICIES)}")
    return name


@dataclasses.dataclass(frozen=True)
class ComputeDevice:
    """Where the model's arithmetic runs: kind 'cpu', 'gpu' or 'tpu'; for GPUs the compute
    capabilities, (major, minor) each, of those used."""

    kind: str
    gpu_capabilities: tuple = ()

    def native(self, precision, cpu_info):
        """(True, False or None for unknown; the reason in words) for `precision` 'bf16' or
        'fp16' on this device; `cpu_info` (cpu_features.CpuInfo) describes a CPU."""
        if self.kind == "tpu":
            return precision == "bf16", "TPU: bfloat16 is native, float16 is not"
        if self.kind == "gpu":
            needed = (8, 0) if precision == "bf16" else (7, 0)
            lowest = min(self.gpu_capabilities, default=None)
            if lowest is None:
                return None, "a GPU of unknown compute capability"
            return lowest >= needed, (f"GPU of compute capability {lowest[0]}.{lowest[1]}; "
                                      f"native {precision} needs {needed[0]}.{needed[1]}")
        native = cpu_info.native(precision)
        name = cpu_info.model_name or "this CPU"
        if native is None:
            return None, f"{name}, CPU flags unknown ({cpu_features.CPUINFO_PATH} not readable)"
        flags = cpu_features.NATIVE_FLAGS[precision]
        if native:
            return True, f"{name}, CPU with {' and '.join(f for f in flags if f in cpu_info.flags)}"
        return False, f"{name}, CPU without {' or '.join(flags)}"


def detect_compute_device(strategy=None):
    """The ComputeDevice of `strategy`'s replicas (None: the default device, a GPU if there is
    one)."""
    devices = ()
    if strategy is not None:
        try:
            devices = tuple(strategy.extended.worker_devices)
        except (RuntimeError, NotImplementedError, AttributeError):
            devices = ()  # the default strategy: TensorFlow's default placement
    if any("TPU" in d.upper() for d in devices) or (
            not devices and tf.config.list_physical_devices("TPU")):
        return ComputeDevice("tpu")
    gpus = tf.config.list_physical_devices("GPU")
    if gpus and (not devices or any("GPU" in d.upper() for d in devices)):
        capabilities = tuple(
            tf.config.experimental.get_device_details(gpu).get("compute_capability")
            for gpu in gpus)
        return ComputeDevice("gpu", tuple(c for c in capabilities if c))
    return ComputeDevice("cpu")


_warned = set()

# BERT-Base training-step speed of bf16 relative to float32 on 2-core AMD EPYCs with AVX2 and
# no AVX-512: 0.85x in issue 13's report, 0.57x by median in a loaded benchmark run
# (docs/performance.md).
CPU_EMULATED_BF16_SPEED = "0.57x-0.85x"


def resolve_mixed_precision(name, strategy=None, device=None, cpu_info=None,
                            flag="--mixed_precision"):
    """The policy name ('none', 'bf16' or 'fp16') to build the model with.

    'auto' becomes bf16 where the hardware computes bfloat16 natively (TPU, GPU of compute
    capability 8.0+, CPU with AVX512_BF16 or AMX-BF16), fp16 on a GPU of 7.0+ without bf16 (and
    on a CPU with AVX512_FP16/AMX-FP16 but no native bf16), else none; the choice is logged.
    An explicit bf16/fp16 is kept; where the hardware has no native arithmetic for it, one
    warning (once per process and precision) says it will be slower than float32, and why.

    Args:
      name: 'none', 'bf16', 'fp16' or 'auto'.
      strategy: the tf.distribute strategy the model will run under (None: default device).
      device, cpu_info: ComputeDevice and cpu_features.CpuInfo; detected when None (tests
        pass their own).
    """
    if name not in CHOICES:
        raise ValueError(f"{flag}={name!r}: expected one of {', '.join(CHOICES)}")
    if name == "none":
        return name
    device = device or detect_compute_device(strategy)
    cpu_info = cpu_info or cpu_features.read_cpu_info()
    if name == "auto":
        for candidate in ("bf16", "fp16"):
            native, why = device.native(candidate, cpu_info)
            if native:
                logging.info("%s=auto: %s (%s)", flag, candidate, why)
                return candidate
        logging.info("%s=auto: none, float32 (%s)", flag, device.native("bf16", cpu_info)[1])
        return "none"
    native, why = device.native(name, cpu_info)
    if not native and (name, why) not in _warned:
        _warned.add((name, why))
        logging.warning("%s", slow_precision_warning(name, device, native, why, flag))
    return name


# --precision -> the Keras dtype policy the model is built under. "bfloat16" (not
# "mixed_bfloat16", which keeps float32 variables and casts them at every call): the Dense
# layers of the encoder (attention query/key/value/output, intermediate, output, pooler) get
# bfloat16 kernels and biases and compute in bfloat16 (float32 accumulation inside the matmul
# kernels); the embedding tables are stored in bfloat16 (the policy's variable dtype) and their
# gathered rows widened to float32; the embeddings' sum, LayerNorms, the attention softmax, the
# residual sums and the fine-tuning heads are pinned to float32 by their layers, so the
# signatures' outputs stay float32. "int8": built in float32, then the encoder's Dense layers
# quantized in place (bert_tf.training.int8: int8 kernels with per-column scales, activations
# quantized per row).
# "auto" is resolved to one of them first (`resolve_precision`, from the CPU's flags). A
# prediction run (--predict_precision) takes PREDICT_PRECISIONS: int8 is built for exports only.
PRECISIONS = {"float32": None, "bfloat16": "bfloat16", "int8": None}

# What each reduced precision was checked with on real data, each against float32 (docs/
# serving.md "Accuracy on real data": sentence-transformers' all-MiniLM-L6-v2 fine-tuned with
# bert_tf's scripts; MRPC dev 408 pairs, CoNLL-2003 eng.testb, 6 articles of SQuAD 2.0 dev).
# An export records its precision's line in bert_tf_export.json ("precision_checked"), and
# the --precision / --predict_precision help quotes them.
ACCURACY_CHECKED = {
    "bfloat16": ("MRPC dev accuracy -0.25 (99.75% of labels as float32's), CoNLL-2003 entity "
                 "F1 +0.07 (99.98% of tags), SQuAD 2.0 F1 -0.05 (98.49% of answers)"),
    "int8": ("MRPC dev accuracy -0.25 (99.75% of labels as float32's), CoNLL-2003 entity F1 "
             "+0.06 (99.83% of tags), SQuAD 2.0 F1 +0.31 (93.69% of answers)"),
}
PREDICT_PRECISIONS = ("float32", "bfloat16")


def predict_precision_problem(name):
    """None when `name` is a --predict_precision (PREDICT_PRECISIONS or auto), else the one
    line saying what is expected."""
    choices = (*PREDICT_PRECISIONS, AUTO)
    if name in choices:
        return None
    return f"--predict_precision={name!r}: expected one of {', '.join(choices)}"


def build_at_precision(build, precision, load):
    """The model `build()` makes at `precision` (a key of PRECISIONS): built under its dtype
    policy, its float32 weights assigned by `load(model)` (rounded to the variables' dtype:
    nearest even for bfloat16); for int8, the encoder's Dense layers (`model.bert`, or the
    model itself when it is an encoder) then quantized (`bert_tf.training.int8`). The one
    place a model gets a precision: the export's --precision and the prediction runs'
    --predict_precision (`Trainer.prediction_model`, extract_features)."""
    with keras_policy(PRECISIONS[precision]):
        model = build()
    load(model)
    if precision == "int8":
        int8.quantize_encoder(getattr(model, "bert", model))
    return model


# --precision=auto (export) and --predict_precision=auto (prediction runs): the precisions a
# model can be built at (PRECISIONS), fastest first, each with the
# cpu_features kind that makes it native on a CPU. float32 is the fallback, native everywhere.
# int8 is not among them: measured on an AVX512_VNNI + AVX512_BF16 CPU it is faster than
# float32 but not than bfloat16 (bert_tf/training/int8.py), and its XLA functions need an opt-in
# flag in TensorFlow Serving; a CPU without bf16 would need its own measurement first.
AUTO_PRECISIONS = (("bfloat16", "bf16"),)
AUTO = "auto"


def resolve_precision(name, flag="--precision", cpu_info=None):
    """The concrete precision for `name`: itself, or for "auto" the first of AUTO_PRECISIONS
    this CPU runs natively (`cpu_features`), else "float32". The choice is logged in one line
    naming the CPU's flags. Other names pass unchanged (the caller checks them).

    Args:
      name: "auto", or a precision ("float32", "bfloat16", ...).
      flag: the flag's name, for the log line.
      cpu_info: a `cpu_features.CpuInfo`; read from this machine when None (tests pass their
        own).
    """
    if name != AUTO:
        return name
    cpu_info = cpu_info or cpu_features.read_cpu_info()
    chosen = next((precision for precision, kind in AUTO_PRECISIONS if cpu_info.native(kind)),
                  "float32")
    logging.info("%s=auto: %s, the fastest precision this CPU runs natively (%s)", flag, chosen,
                 cpu_info.describe())
    return chosen


def slow_precision_warning(name, device, native, why, flag="--mixed_precision"):
    """The warning for a 16-bit `name` on a device without native arithmetic for it."""
    if native is None:
        return (f"{flag}={name}: cannot tell whether the hardware computes {name} natively "
                f"({why}); where it does not, {name} is slower than float32.")
    if device.kind == "cpu":
        return (f"{flag}={name} will be slower than float32 on this machine: {why}, so it has "
                f"no {name} arithmetic; TensorFlow computes each {name} operation in float32 "
                f"and converts operands and results (BERT-Base training steps in bf16 ran "
                f"at {CPU_EMULATED_BF16_SPEED} of float32's speed on such a CPU, "
                f"docs/performance.md). Use {flag}=none, or {flag}=auto to choose by hardware.")
    return (f"{flag}={name} is likely slower than float32 here: {why}. Use {flag}=none, or "
            f"{flag}=auto to choose by hardware.")


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Sets the Keras global dtype policy for `mixed_precision` ('none', 'bf16', 'fp16') while
    the model is built, and restores the previous policy after (so it does not leak into
    other models of the process)."""
    with keras_policy(POLICIES[check_mixed_precision(mixed_precision)]):
        yield


@contextlib.contextmanager
def keras_policy(policy):
    """Sets the Keras global dtype policy to `policy` (a Keras policy name such as
    "mixed_bfloat16" or "bfloat16"; None leaves it) while a model is built, and restores the
    previous policy after."""
    previous = keras.config.dtype_policy()
    if policy is not None:
        keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


class DynamicLossScale(tf.Module):
    """The float16 loss scale and its update rule; create inside `strategy.scope()`.

    Args:
      initial_scale: the first scale (2**15).
      growth_interval: consecutive finite steps after which the scale doubles (2000).
      min_scale: the scale never goes below this (1.0).
    """

    def __init__(self, initial_scale=2.0 ** 15, growth_interval=2000, min_scale=1.0,
                 name="loss_scale"):
        super().__init__(name=name)
        self.growth_interval = int(growth_interval)
        self.min_scale = float(min_scale)
        agg = tf.VariableAggregation.ONLY_FIRST_REPLICA
        self.scale = tf.Variable(float(initial_scale), dtype=tf.float32, trainable=False,
                                 name="loss_scale", aggregation=agg)
        self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False,
                                      name="loss_scale_good_steps", aggregation=agg)

    def scale_loss(self, loss):
        return loss * self.scale

    def unscale(self, grads):
        inverse = 1.0 / self.scale
        return [g * inverse for g in grads]

    @staticmethod
    def all_finite(grads):
        """Bool scalar: every gradient entry is finite. Call on gradients already summed over
        replicas, so every replica takes the same decision."""
        return tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

    def update(self, finite):
        """Halves the scale (not finite) or counts a good step, doubling after
        growth_interval of them. Returns the op."""
        grow = finite & (self.good_steps + 1 >= self.growth_interval)
        new_scale = tf.where(
            finite,
            tf.where(grow, self.scale * 2.0, self.scale),
            tf.maximum(self.scale * 0.5, self.min_scale),
        )
        new_good = tf.where(finite & ~grow, self.good_steps + 1, tf.zeros_like(self.good_steps))
        return tf.group(self.scale.assign(new_scale), self.good_steps.assign(new_good))

    def get_state(self):
        """{checkpoint name: value} for `save_original_checkpoint(extra_tensors=...)`."""
        return {LOSS_SCALE_NAME: self.scale.numpy(), GOOD_STEPS_NAME: self.good_steps.numpy()}

    def set_state_from_checkpoint(self, prefix):
        """Restores the scale from checkpoint `prefix`; returns False (keeping the initial
        scale) when the checkpoint has none (e.g. written by a float32 run)."""
        reader = tf.train.load_checkpoint(prefix)
        names = reader.get_variable_to_shape_map()
        if LOSS_SCALE_NAME not in names:
            return False
        self.scale.assign(float(reader.get_tensor(LOSS_SCALE_NAME)))
        if GOOD_STEPS_NAME in names:
            self.good_steps.assign(int(reader.get_tensor(GOOD_STEPS_NAME)))
        return True
