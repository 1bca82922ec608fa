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
"""

import contextlib

import keras
import tensorflow as tf

POLICIES = {"none": None, "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}

LOSS_SCALE_NAME = "bert_tf/loss_scale"
GOOD_STEPS_NAME = "bert_tf/loss_scale_good_steps"


def check_mixed_precision(name, flag="--mixed_precision"):
    if name not in POLICIES:
        raise ValueError(f"{flag}={name!r}: expected one of {', '.join(POLICIES)}")
    return name


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Sets the Keras global dtype policy for `mixed_precision` ('none', 'bf16', 'fp16') while
    the model is built, and restores the previous policy after (so it does not leak into
    other models of the process)."""
    policy = POLICIES[check_mixed_precision(mixed_precision)]
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
