"""The original AdamWeightDecay optimizer, and the global-norm gradient clipping it is used with.

For each trainable variable p (original checkpoint name `name`) with gradient g:

    m = beta_1 * m + (1 - beta_1) * g
    v = beta_2 * v + (1 - beta_2) * g**2          # no bias correction
    u = m / (sqrt(v) + epsilon)
    u += weight_decay_rate * p                    # unless a pattern of exclude_from_weight_decay
    p -= lr * u                                   #   is found in `name` (re.search)

With `bias_correction=True` it is the Adam of fairseq (RoBERTa's recipe) and of PyTorch's /
Transformers' AdamW, counting steps t from 1:

    u = sqrt(1 - beta_2**t) / (1 - beta_1**t) * m / (sqrt(v) + epsilon)
    u += weight_decay_rate * p                    # decoupled: not through m and v
    p -= lr * u

(fairseq's `Adam.step`: p -= wd * lr * p, then p -= step_size * m / (sqrt(v) + eps) with
step_size = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t): the same update, one rounding apart.)

The moments are the slots `adam_m` / `adam_v`, saved as `<name>/adam_m`, `<name>/adam_v`.
Variables are addressed by their ORIGINAL names, so decay exclusion and checkpoint layout are
decided by the same table (`bert_tf.checkpoints.original_variable_map`).

`learning_rate_multipliers` ({name: factor}) gives a variable lr * factor instead of lr:
`layerwise_lr_multipliers` computes ELECTRA's layer-wise learning-rate decay for fine-tuning.

The optimizer works under any tf.distribute strategy: `apply_gradients` is called in replica
context with gradients that are already summed over replicas; the update itself runs once per
variable copy through `strategy.extended.update`.
"""

import re

import numpy as np
import tensorflow as tf

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
_EMBEDDING_SCOPES = ("/embeddings/", "/embeddings_project/")
_LAYER = re.compile(r"encoder/layer_(\d+)/")


def layerwise_lr_multipliers(names, num_hidden_layers, decay):
    """ELECTRA's layer-wise learning-rate decay (its `run_finetuning.py`): {name: factor}.

    With L = `num_hidden_layers`, a variable's factor is decay ** (L + 2 - depth), depth 0 for
    the embeddings (original names containing "/embeddings/" or "/embeddings_project/"), i + 1
    for layer i ("encoder/layer_<i>/") and L + 2 (factor 1) for everything else: the task's
    head and, in BERT models, the pooler (ELECTRA has none; it sits above the last layer).
    A `decay` of 1.0 (or, as in the original, <= 0) means no decay: an empty dict.

    Raises ValueError for a name of a layer >= L (a config that does not match the model).
    """
    if decay == 1.0 or decay <= 0:
        return {}
    out = {}
    for name in names:
        match = _LAYER.search(name)
        if any(scope in name for scope in _EMBEDDING_SCOPES):
            depth = 0
        elif match:
            layer = int(match.group(1))
            if layer >= num_hidden_layers:
                raise ValueError(f"variable {name} is in layer {layer}, but the config has "
                                 f"num_hidden_layers={num_hidden_layers}")
            depth = layer + 1
        else:
            depth = num_hidden_layers + 2
        out[name] = decay ** (num_hidden_layers + 2 - depth)
    return out


def clip_by_global_norm(grads, clip_norm=1.0, sparse=None, sparse_norm_sq=None):
    """Scales `grads` (list of tensors) so their joint L2 norm is at most `clip_norm`.

    The original clips the gradients as tf.gradients returns them: the word embeddings'
    gradient is an IndexedSlices (one row per token occurrence, rows of a repeated token not
    yet summed), and its part of the global norm is the sum of its squared rows. To clip the
    same way, give `sparse` (a bool per gradient: it came as IndexedSlices) and
    `sparse_norm_sq` (the sum of their squared rows): those gradients then count with
    `sparse_norm_sq` instead of their dense norm.

    A `clip_norm` of 0 (fairseq's `--clip-norm 0`, RoBERTa's recipe) clips nothing: the
    gradients are returned as they are, with their norm.

    Returns (clipped_grads, global_norm_before_clipping).
    """
    grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
    if sparse is None or not any(sparse):
        if not clip_norm:
            return grads, tf.linalg.global_norm(grads)
        clipped, norm = tf.clip_by_global_norm(grads, clip_norm=clip_norm)
        return clipped, norm
    squares = [tf.reduce_sum(tf.square(g)) for g, s in zip(grads, sparse) if not s]
    norm = tf.sqrt(tf.add_n(squares + [tf.cast(sparse_norm_sq, tf.float32)]))
    if not clip_norm:
        return grads, norm
    clipped, _ = tf.clip_by_global_norm(grads, clip_norm=clip_norm, use_norm=norm)
    return clipped, norm


class AdamWeightDecay(tf.Module):
    """Adam without bias correction, with decoupled weight decay, as the original BERT; or
    with bias correction, as fairseq's Adam and Transformers' AdamW (`bias_correction`).

    Args:
      weight_decay_rate: decay added to the update (0.01 in the original's pretraining).
      beta_1, beta_2, epsilon: Adam constants (0.9, 0.999, 1e-6).
      bias_correction: None (the class's: False for AdamWeightDecay), or whether the step is
        multiplied by sqrt(1 - beta_2**t) / (1 - beta_1**t) at step t (the `step` given to
        `apply_gradients`, counting from 1; module docstring).
      exclude_from_weight_decay: regular expressions; a variable whose original name matches
        any of them (re.search) gets no weight decay.
      learning_rate_multipliers: optional {original_name: factor}: that variable's learning
        rate is lr * factor (float32 product, as the original's per-variable rates); variables
        not in it, or with factor 1.0, use lr itself.
    """

    # The slot names, as they appear in checkpoints (`<variable>/<slot>`). Another optimizer
    # (e.g. LAMB) declares its own.
    slot_names = ("adam_m", "adam_v")
    # Whether the moments' zero start is corrected (see `bias_correction` above; LAMB's is).
    bias_correction = False

    def __init__(
        self,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        jit_compile=False,
        learning_rate_multipliers=None,
        name="AdamWeightDecay",
        bias_correction=None,
    ):
        super().__init__(name=name)
        if bias_correction is not None:
            self.bias_correction = bool(bias_correction)
        # With jit_compile, each variable's update is one XLA-fused kernel instead of about ten
        # passes over memory (the BERT-Base step 1.12x faster on the AMX CPU of
        # docs/performance.md),
        # equal to the op-by-op update up to float32 rounding (XLA may contract multiply-adds).
        # Off by default: op by op is the original.
        self.jit_compile = jit_compile
        self._fused_values = tf.function(self._fused_math, jit_compile=True)
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
        self.learning_rate_multipliers = dict(learning_rate_multipliers or {})
        self._names = None
        self._variables = None
        self._slots = None

    # -- construction --------------------------------------------------------------------
    def do_use_weight_decay(self, name):
        """Whether the variable with original name `name` is decayed."""
        if not self.weight_decay_rate:
            return False
        return not any(re.search(pattern, name) for pattern in self.exclude_from_weight_decay)

    def build(self, named_variables):
        """Creates the slots for `named_variables` ({original_name: variable}, in the order the
        gradients will be given). Call inside `strategy.scope()` before the first step."""
        if self._slots is not None:
            raise RuntimeError("AdamWeightDecay.build() called twice")
        self._names = list(named_variables)
        self._variables = [_tf_variable(named_variables[n]) for n in self._names]
        self._decay = [self.do_use_weight_decay(n) for n in self._names]
        unknown = sorted(set(self.learning_rate_multipliers) - set(self._names))
        if unknown:
            raise ValueError(f"learning-rate multipliers for variables the optimizer does not "
                             f"train: {', '.join(unknown)}")
        self._lr_factors = [float(self.learning_rate_multipliers.get(n, 1.0)) for n in self._names]
        self._slots = {}
        for slot in self.slot_names:
            self._slots[slot] = [
                tf.Variable(
                    tf.zeros(var.shape, dtype=tf.float32),
                    trainable=False,
                    name=f"{_safe(name)}/{slot}",
                )
                for name, var in zip(self._names, self._variables)
            ]

    @property
    def built(self):
        return self._slots is not None

    @property
    def variable_names(self):
        return list(self._names)

    @property
    def variables_to_train(self):
        return list(self._variables)

    def slot_variables(self):
        """{slot_name: {original_name: tf.Variable}}."""
        return {
            slot: dict(zip(self._names, variables)) for slot, variables in self._slots.items()
        }

    # -- state for checkpoints -----------------------------------------------------------
    def get_state(self):
        """{slot_name: {original_name: np.ndarray}} (the values of the first replica)."""
        return {
            slot: {name: np.asarray(_read(var)) for name, var in zip(self._names, variables)}
            for slot, variables in self._slots.items()
        }

    def set_state(self, state, source="checkpoint"):
        """Assigns every slot from `state` ({slot_name: {original_name: array}}).

        Raises ValueError naming the first missing or mis-shaped entry.
        """
        for slot, variables in self._slots.items():
            values = state.get(slot, {})
            for name, var in zip(self._names, variables):
                if name not in values:
                    raise ValueError(
                        f"{source}: has no optimizer slot {name}/{slot}; it is not a training "
                        f"checkpoint of {type(self).__name__} (to start from its weights only, "
                        "pass it as --init_checkpoint with a fresh --output_dir)"
                    )
                value = np.asarray(values[name])
                if tuple(value.shape) != tuple(var.shape):
                    raise ValueError(
                        f"{source}: {name}/{slot} has shape {tuple(value.shape)}, the model "
                        f"expects {tuple(var.shape)}"
                    )
                var.assign(value.astype(np.float32))

    # -- the update ----------------------------------------------------------------------
    def apply_gradients(self, grads, learning_rate, step=None, should_apply=None):
        """Applies `grads` (one per variable of `build`, same order, already reduced over
        replicas and clipped) with the float32 scalar `learning_rate`. Call in replica context
        (inside `strategy.run`) or outside any strategy.

        Args:
          step: optional int scalar, the number of the step being taken counting from 1
            (bias correction needs it; AdamWeightDecay without it ignores it).
          should_apply: optional bool scalar; when False, variables and slots keep their values
            (a skipped step, e.g. non-finite fp16 gradients). Branch-free, so it works under
            every strategy and inside XLA.
        """
        if self._slots is None:
            raise RuntimeError("AdamWeightDecay.build() must be called before apply_gradients")
        if len(grads) != len(self._variables):
            raise ValueError(f"expected {len(self._variables)} gradients, got {len(grads)}")
        ctx = tf.distribute.get_replica_context()
        if ctx is None:  # cross-replica context: apply directly
            return self._apply_cross_replica(tf.distribute.get_strategy(), grads, learning_rate,
                                             step, should_apply)
        return ctx.merge_call(self._apply_cross_replica,
                              args=(grads, learning_rate, step, should_apply))

    def _apply_cross_replica(self, strategy, grads, learning_rate, step=None, should_apply=None):
        if step is None:
            step = tf.constant(1, tf.int64)
        m_slots, v_slots = (self._slots[name] for name in self.slot_names)
        updates = []
        for var, grad, m, v, decay, factor in zip(self._variables, grads, m_slots, v_slots,
                                                  self._decay, self._lr_factors):
            if grad is None:
                continue
            # factor 1.0 leaves the graph as it is without multipliers (bit-identical updates)
            lr = learning_rate if factor == 1.0 else learning_rate * tf.constant(factor, tf.float32)
            updates.append(
                strategy.extended.update(
                    var,
                    self._update_one,
                    args=(grad, m, v, lr, step, should_apply),
                    kwargs={"decay": decay},
                    group=False,
                )
            )
        return tf.group(updates)

    def _update_one(self, param, grad, m, v, learning_rate, step, should_apply, decay):
        # The compiled kernel takes and returns values, never the variables themselves: a
        # variable passed into an XLA function under MirroredStrategy was seen to keep its old
        # value (the slots of most variables stayed zero), while assigning the results here
        # works under every strategy.
        variables = (param, m, v)
        param, m, v = (var.read_value() for var in variables)
        grad = tf.convert_to_tensor(grad)
        if self.jit_compile:
            apply = tf.constant(True) if should_apply is None else should_apply
            for var, value in zip(variables, self._fused_values(
                    param, grad, m, v, learning_rate, step, apply, decay)):
                var.assign(value)
        else:
            for var, value in zip(variables, self._update_math(
                    param, grad, m, v, learning_rate, step, decay)):
                _assign_if(should_apply, var, value)
        return tf.no_op()

    def _fused_math(self, param, grad, m, v, learning_rate, step, should_apply, decay):
        new_values = self._update_math(param, grad, m, v, learning_rate, step, decay)
        return [tf.where(should_apply, new, old) for new, old in zip(new_values, (param, m, v))]

    def _update_math(self, param, grad, m, v, learning_rate, step, decay):
        """The update of one variable: (next param, next m, next v) from their current values."""
        next_m = tf.multiply(self.beta_1, m) + tf.multiply(1.0 - self.beta_1, grad)
        next_v = tf.multiply(self.beta_2, v) + tf.multiply(1.0 - self.beta_2, tf.square(grad))
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self.bias_correction:
            # fairseq's step_size / lr: epsilon stays outside the correction, as there.
            t = tf.cast(step, tf.float32)
            update = update * (tf.sqrt(1.0 - tf.pow(self.beta_2, t))
                               / (1.0 - tf.pow(self.beta_1, t)))
        if decay:
            update += self.weight_decay_rate * param
        return param - learning_rate * update, next_m, next_v


def _assign_if(should_apply, var, value):
    # tf.where rather than tf.cond: a cond branch cannot hold a strategy's merge_call, and the
    # select costs one pass over memory (none when every step applies).
    var.assign(value if should_apply is None else tf.where(should_apply, value, var))


def _tf_variable(var):
    # A Keras 3 variable wraps a tf.Variable (a distributed one under a strategy); the update
    # goes through `strategy.extended.update`, which needs the tf.Variable itself.
    if isinstance(var, tf.Variable):
        return var
    inner = getattr(var, "value", None)
    if isinstance(inner, tf.Variable):
        return inner
    raise TypeError(f"not a variable: {var!r}")


def _read(var):
    value = var.read_value() if hasattr(var, "read_value") else var.value
    return value.numpy() if hasattr(value, "numpy") else value


def _safe(name):
    # tf.Variable names may not contain some characters an original name could hold.
    return re.sub(r"[^A-Za-z0-9_./-]", "_", name)
