"""The original learning-rate schedule: linear warmup, then linear (power 1) decay to zero.

`learning_rate(step)` reproduces, in float32, what the original computes from `global_step`
with `polynomial_decay(init_lr, step, num_train_steps, end_learning_rate=0, power=1)` and its
warmup blend, so step k (counting from 0) is taken with lr(k).
"""

import tensorflow as tf


class WarmupLinearDecay:
    """lr(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps), except that
    while step < num_warmup_steps it is init_lr * step / num_warmup_steps.

    Called with a scalar integer tensor (or int); returns a float32 scalar.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        init_lr = tf.constant(self.init_lr, tf.float32)
        decay_steps = tf.constant(float(self.num_train_steps), tf.float32)
        # polynomial_decay with power 1 and cycle=False clamps the step at decay_steps.
        fraction = tf.minimum(step, decay_steps) / decay_steps
        lr = init_lr * (1.0 - fraction)
        if self.num_warmup_steps:
            warmup_steps = tf.constant(float(self.num_warmup_steps), tf.float32)
            warmup_lr = init_lr * (step / warmup_steps)
            # The original blends the two with a 0/1 float rather than selecting.
            is_warmup = tf.cast(step < warmup_steps, tf.float32)
            lr = (1.0 - is_warmup) * lr + is_warmup * warmup_lr
        return lr

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }
