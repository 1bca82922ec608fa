"""The original learning-rate schedule: linear warmup, then linear (power 1) decay to zero;
ALBERT's (a polynomial decay, the warmup counted from a start step); and ELECTRA's (a
polynomial decay multiplied by the warmup ramp).

`learning_rate(step)` reproduces, in float32, what the original computes from `global_step`
with `polynomial_decay(init_lr, step, num_train_steps, end_learning_rate=0, power=1)` and its
warmup blend, so step k (counting from 0) is taken with lr(k).
"""

import tensorflow as tf


class WarmupLinearDecay:
    """lr(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps), except that
    while step < num_warmup_steps it is init_lr * step / num_warmup_steps.

    Options for google-research/electra's schedule (its `optimization.create_optimizer`):
      power: the decay is init_lr * (1 - min(step, N) / N) ** power (`lr_decay_power`).
      warmup_multiplies: the decayed rate is multiplied by min(1, step / num_warmup_steps)
        instead of being replaced by the warmup ramp. With num_warmup_steps 0 the factor is 1
        (the original divides 0 by 0 at step 0 and trains on with NaN weights).

    Option for google-research/albert's schedule (its `optimization.create_optimizer`, whose
    `poly_power` is `power`):
      start_warmup_step: the warmup ramp counts from this step: while step - start <
        num_warmup_steps the rate is init_lr * (step - start) / num_warmup_steps. As in the
        original, this holds before `start` too, where the rate is negative.

    Option for fairseq's `polynomial_decay` schedule (RoBERTa's recipe):
      decay_after_warmup: the decay starts at the end of the warmup, from init_lr: while
        step <= num_warmup_steps the rate is init_lr * step / num_warmup_steps, then
        init_lr * (1 - (step - W) / (N - W)) ** power, 0 from step N on (fairseq's
        `step_update(num_updates)` sets the rate of update num_updates + 1, so its update k,
        counting from 0, is taken with lr(k), as ours).

    Called with a scalar integer tensor (or int); returns a float32 scalar.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, power=1.0,
                 warmup_multiplies=False, start_warmup_step=0, decay_after_warmup=False):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.power = float(power)
        self.warmup_multiplies = bool(warmup_multiplies)
        self.start_warmup_step = int(start_warmup_step)
        if self.start_warmup_step and self.warmup_multiplies:
            raise ValueError("start_warmup_step is an option of ALBERT's schedule, not of "
                             "ELECTRA's (warmup_multiplies)")
        self.decay_after_warmup = bool(decay_after_warmup)
        if self.decay_after_warmup and (self.start_warmup_step or self.warmup_multiplies):
            raise ValueError("decay_after_warmup is fairseq's schedule, not ALBERT's "
                             "(start_warmup_step) or ELECTRA's (warmup_multiplies)")
        if self.decay_after_warmup and self.num_warmup_steps >= self.num_train_steps:
            raise ValueError(f"num_warmup_steps ({self.num_warmup_steps}) must be below "
                             f"num_train_steps ({self.num_train_steps}): the decay follows "
                             "the warmup")

    def __call__(self, step):
        if self.decay_after_warmup:
            return self._fairseq_rate(step)
        warmup_step = step
        if self.start_warmup_step:
            # Subtracted in integers, as the original does.
            warmup_step = tf.cast(step, tf.int64) - self.start_warmup_step
        step = tf.cast(step, tf.float32)
        init_lr = tf.constant(self.init_lr, tf.float32)
        decay_steps = tf.constant(float(self.num_train_steps), tf.float32)
        # polynomial_decay with cycle=False clamps the step at decay_steps.
        fraction = tf.minimum(step, decay_steps) / decay_steps
        remaining = 1.0 - fraction
        if self.power != 1.0:
            remaining = tf.pow(remaining, self.power)
        lr = init_lr * remaining
        if self.num_warmup_steps:
            warmup_steps = tf.constant(float(self.num_warmup_steps), tf.float32)
            if self.warmup_multiplies:
                return lr * tf.minimum(1.0, step / warmup_steps)
            warmup_step = tf.cast(warmup_step, tf.float32)
            warmup_lr = init_lr * (warmup_step / warmup_steps)
            # The original blends the two with a 0/1 float rather than selecting.
            is_warmup = tf.cast(warmup_step < warmup_steps, tf.float32)
            lr = (1.0 - is_warmup) * lr + is_warmup * warmup_lr
        return lr

    def _fairseq_rate(self, step):
        """fairseq's polynomial_decay `step_update` (end_learning_rate 0), in float32."""
        step = tf.cast(step, tf.float32)
        init_lr = tf.constant(self.init_lr, tf.float32)
        warmup = tf.constant(float(self.num_warmup_steps), tf.float32)
        total = tf.constant(float(self.num_train_steps), tf.float32)
        remaining = 1.0 - (tf.minimum(step, total) - warmup) / (total - warmup)
        if self.power != 1.0:
            remaining = tf.pow(tf.maximum(remaining, 0.0), self.power)
        decayed = init_lr * remaining
        if not self.num_warmup_steps:
            return decayed
        return tf.where(step <= warmup, init_lr * (step / warmup), decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "power": self.power,
            "warmup_multiplies": self.warmup_multiplies,
            "start_warmup_step": self.start_warmup_step,
            "decay_after_warmup": self.decay_after_warmup,
        }
