"""LAMB (You et al., 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76
minutes"): Adam moments with bias correction, decoupled weight decay and a per-variable trust
ratio, for large global batches; and `AlbertLamb`, google-research/albert's LAMBOptimizer.

For each trainable variable w (original checkpoint name `name`) with gradient g at step t
(counting from 1):

    m = beta_1 * m + (1 - beta_1) * g
    v = beta_2 * v + (1 - beta_2) * g**2
    r = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
    r += weight_decay_rate * w                     # unless excluded from weight decay
    ratio = ||w|| / ||r||  (1 if either norm is 0, and 1 for variables excluded from decay)
    w -= (ratio * lr) * r

The exclusions are the weight-decay ones (`LayerNorm`, `layer_norm`, `bias`, re.search on the
original name): LayerNorm parameters and biases get neither decay nor trust ratio.
The moments are the slots `lamb_m` / `lamb_v`, saved as `<name>/lamb_m`, `<name>/lamb_v` beside
the float32 weights; a LAMB training checkpoint resumes exactly like an AdamWeightDecay one.
The training loop passes t = global_step + 1.

`AlbertLamb` is the LAMB that pretrained ALBERT (its `lamb_optimizer.LAMBOptimizer`): the same
update without bias correction (r = m / (sqrt(v) + epsilon)), and the slots named `adam_m` /
`adam_v` as its checkpoints hold them.
"""

import re

import tensorflow as tf

from bert_tf.training.optimizer import (
    DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay,
)


class Lamb(AdamWeightDecay):
    """LAMB with the interface of `AdamWeightDecay` (build, apply_gradients, get/set_state).

    Args:
      weight_decay_rate: decoupled weight decay (0.01 as the original BERT's AdamWeightDecay).
      beta_1, beta_2, epsilon: moment constants (0.9, 0.999, 1e-6).
      exclude_from_weight_decay: regular expressions on original names: no decay and no
        trust ratio for the variables they match.
      learning_rate_multipliers: {original_name: factor} on the learning rate (AdamWeightDecay's).
    """

    slot_names = ("lamb_m", "lamb_v")
    # Whether the moments are divided by (1 - beta**t) (the paper's) or used as they are
    # (ALBERT's LAMBOptimizer, and BERT's AdamWeightDecay).
    bias_correction = True

    def __init__(self, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, jit_compile=False,
                 learning_rate_multipliers=None, name="Lamb"):
        super().__init__(weight_decay_rate=weight_decay_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, exclude_from_weight_decay=exclude_from_weight_decay,
                         jit_compile=jit_compile,
                         learning_rate_multipliers=learning_rate_multipliers, name=name)

    def do_use_trust_ratio(self, name):
        """Whether the variable with original name `name` gets the trust ratio (same exclusions
        as weight decay, whatever weight_decay_rate is)."""
        return not any(re.search(p, name) for p in self.exclude_from_weight_decay)

    def build(self, named_variables):
        super().build(named_variables)
        self._trust = [self.do_use_trust_ratio(n) for n in self._names]
        # _apply_cross_replica passes `decay` per variable; LAMB needs both flags.
        self._decay = list(zip(self._decay, self._trust))

    def _update_math(self, param, grad, m, v, learning_rate, step, decay):
        use_decay, use_trust = decay
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
        if self.bias_correction:
            t = tf.cast(step, tf.float32)
            m_hat = next_m / (1.0 - tf.pow(self.beta_1, t))
            v_hat = next_v / (1.0 - tf.pow(self.beta_2, t))
        else:
            m_hat, v_hat = next_m, next_v
        update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
        if use_decay:
            update += self.weight_decay_rate * param
        if use_trust:
            w_norm = tf.norm(param)
            r_norm = tf.norm(update)
            ratio = tf.where((w_norm > 0.0) & (r_norm > 0.0), w_norm / r_norm, 1.0)
            # (ratio * lr) * update, in the order ALBERT's LAMBOptimizer multiplies them.
            learning_rate = ratio * learning_rate
        return param - learning_rate * update, next_m, next_v


class AlbertLamb(Lamb):
    """google-research/albert's `LAMBOptimizer`: LAMB without bias correction, its moments in
    the slots `adam_m` / `adam_v`. Arguments as `Lamb`'s (ALBERT pretrains with
    weight_decay_rate 0.01 and the exclusions LayerNorm, layer_norm, bias: no decay and no
    trust ratio for them)."""

    slot_names = ("adam_m", "adam_v")
    bias_correction = False
