"""How far a mixed-precision (bfloat16 / float16) computation may be from float32, derived from
the arithmetic rather than fitted to one CPU.

Model of the arithmetic. Under a mixed policy every tensor a 16-bit op produces is rounded to
nearest: t = t_exact * (1 + d) with |d| <= u, the unit roundoff (2**-8 for bfloat16, whose
significand has 8 bits; 2**-11 for float16). TensorFlow's 16-bit matmuls accumulate in float32
(Eigen's and oneDNN's on CPUs; checked wherever the tests run by
tests/test_bert_pretraining.py::test_16_bit_matmul_accumulates_in_float32), so their accumulation
error is ~2**-24 per term, negligible next to the rounding of their inputs and output. To first
order (terms in u**2 are ~u = 1/256 times the first-order ones for bfloat16), an output y moves
by

    dy = sum over rounded tensors t, elements i of  (dy / dt_i) * t_i * d_i,

where dy/dt_i is the total derivative through everything downstream of t (so the rounding of a
weight, cast once and used by every example, is counted once). With the rounding errors taken as
independent, mean-zero and bounded by u (the model of Higham & Mary, "A new approach to
probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019), Hoeffding's
inequality gives

    P(|dy| > CONFIDENCE * u * c) <= 2 * exp(-CONFIDENCE**2 / 2),  c = sqrt(sum (dy/dt_i * t_i)**2),

3e-8 per compared value for CONFIDENCE = 6: the bound fails by chance about once in 30 million
comparisons, so a failure means the arithmetic is not what the model says (an accumulation in
16 bits, a kernel rounding more often than its graph shows, a wrong cast or weight), whatever
the CPU. Where the rounding happens is pinned by a separate check of the graph's 16-bit ops
(tests/test_bert_pretraining.py), since a value moved to 16 bits would also raise this bound. The
float32 reference's own error (~2**-24 relative) is negligible at this scale.

The rounded tensors are found in the traced graph of the mixed computation itself: the outputs
of every op that produces a 16-bit tensor, except ops that only move values (reshape, gather,
transpose, ...). Kernels that fuse ops (oneDNN's matmul + bias + activation) round less often
than the graph shows, so the bound only gets safer there. c is computed with the gradients of
that graph (themselves 16-bit, a few u off: irrelevant for a bound).

Weights stored rounded. A computation whose weights are stored in 16 bits (a bfloat16 export)
is bounded through a stand-in graph of the same arithmetic that holds them in float32 and
rounds them with a Cast op (mixed_bfloat16: each Dense kernel is cast at every call, so its
rounding is a rounded tensor of the graph as above). A weight the stand-in reads in float32
without any such Cast (the embedding tables, which no policy autocasts) is named in
`rounded_variables`: its elements t_i are rounded once (t_i d_i, |d_i| <= u, one error per
element however many tokens gather that row), which adds sum_i (dy/dt_i * t_i)**2 to c**2, with
dy/dt_i the gradient of y with respect to the variable in the stand-in graph (a gather's
IndexedSlices summed over the rows read more than once, so a row shared by several tokens or
examples is one error, counted once).
"""

import numpy as np
import tensorflow as tf

UNIT_ROUNDOFF = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}
CONFIDENCE = 6.0

# Ops whose 16-bit outputs are values of their inputs, moved or selected, never rounded anew.
_VALUE_MOVING_OPS = frozenset({
    "Placeholder", "Const", "Identity", "IdentityN", "ReadVariableOp", "StopGradient",
    "Reshape", "Transpose", "Squeeze", "ExpandDims", "Pack", "Unpack", "ConcatV2", "Split",
    "SplitV", "Slice", "StridedSlice", "Tile", "BroadcastTo", "GatherV2", "GatherNd",
    "ResourceGather", "Select", "SelectV2", "ZerosLike", "OnesLike", "Shape", "Neg", "Relu",
    "Maximum", "Minimum",
})


def rounded_ops(graph, dtype):
    """The ops of `graph` that round a result to `dtype` (all but the value-moving ones)."""
    dtype = tf.as_dtype(dtype)
    return [op for op in graph.get_operations() if op.type not in _VALUE_MOVING_OPS
            and any(t.dtype == dtype for t in op.outputs)]


def _rounded_tensors(graph, dtype):
    return [t for op in rounded_ops(graph, dtype) for t in op.outputs if t.dtype == dtype]


class RoundingErrorBounds:
    """Per-element bounds CONFIDENCE * u * c (see the module docstring) of outputs of `compute`.

    Args:
      compute: inputs -> dict {name: tensor}; the mixed-precision computation (e.g. a model
        built under a mixed policy and its loss). Traced once per non-scalar output (and once
        for all scalars) and input shape, so calls after new weights are assigned to the same
        model reuse the traces.
      dtype: "bfloat16" or "float16", the policy's compute dtype.
      rounded_variables: variables that `compute` reads in float32 without a Cast and the
        bounded computation stores rounded to `dtype` (module docstring: the embedding tables
        of a bfloat16 export); Keras variables or tf.Variables.
    """

    def __init__(self, compute, dtype, rounded_variables=()):
        self.compute = compute
        self.dtype = dtype
        self.rounded_variables = tuple(getattr(v, "value", v) for v in rounded_variables)
        self._sensitivities = {}

    def _sensitivity(self, names):
        """A traced function (inputs, element) -> c of that element of each of `names`."""
        if names not in self._sensitivities:
            @tf.function
            def sensitivity(x, element):
                outputs = self.compute(x)
                points = _rounded_tensors(tf.compat.v1.get_default_graph(), self.dtype)
                variables = list(self.rounded_variables)
                norms = []
                for name in names:
                    y = tf.gather(tf.reshape(tf.cast(outputs[name], tf.float32), [-1]), element)
                    gradients = tf.gradients(y, points + variables)
                    # g * t in float32: it can leave float16's range. A gather's gradient
                    # (IndexedSlices) made dense sums the rows read more than once.
                    terms = [tf.square(tf.cast(tf.convert_to_tensor(g), tf.float32)
                                       * tf.cast(t, tf.float32))
                             for g, t in zip(gradients, points + variables) if g is not None]
                    norms.append(tf.sqrt(tf.add_n([tf.reduce_sum(t) for t in terms])))
                return tf.stack(norms)
            self._sensitivities[names] = sensitivity
        return self._sensitivities[names]

    def __call__(self, inputs, names):
        """{name: float64 array of the output's shape}: the bound of each element's distance
        to the same computation in exact (or float32) arithmetic, for `inputs` (a dict of
        tensors) and the model's current weights."""
        outputs = self.compute(inputs)
        shapes = {name: tuple(outputs[name].shape) for name in names}
        # Scalars share one traced function (tracing costs more than their backward passes).
        groups = [tuple(n for n in names if not shapes[n])] + [(n,) for n in names if shapes[n]]
        u = UNIT_ROUNDOFF[self.dtype]
        bounds = {}
        for group in filter(None, groups):
            size = int(np.prod(shapes[group[0]]))
            c = np.array([self._sensitivity(group)(inputs, tf.constant(i)).numpy()
                          for i in range(size)])  # [size, len(group)]
            for k, name in enumerate(group):
                bounds[name] = CONFIDENCE * u * c[:, k].reshape(shapes[name])
        return bounds


def assert_within_bounds(got, want, bounds, label=""):
    """|got - want| <= bounds element-wise, with the worst ratio in the message."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    ratio = np.abs(got - want) / bounds
    worst = np.unravel_index(np.argmax(ratio), ratio.shape) if ratio.ndim else ()
    assert ratio.max() <= 1.0, (
        f"{label}: |mixed - float32| = {np.abs(got - want)[worst]:.4g} at {worst} exceeds the "
        f"rounding bound {bounds[worst]:.4g} ({ratio.max():.2f}x)"
    )
    return float(ratio.max())


# --- Weights whose true gradient is zero --------------------------------------------------------
#
# Some variables get a gradient that is exactly zero in real arithmetic, because they shift
# every input of a softmax by the same amount: the key biases of self-attention (b_k adds
# q . b_k / sqrt(d) to all scores of query q), and under SQuAD's span head its output_bias (a
# constant added to every position's logit) and the last layer's output LayerNorm beta (which
# adds beta . w_c to every position's logit of column c). In float32 their computed gradient is
# rounding noise, and Adam divides the moments by sqrt(v) + epsilon: with |g| << epsilon = 1e-6
# the step is lr * m / epsilon, so the weight moves by a few lr * |noise| / epsilon per step,
# which noise depends on the kernels (oneDNN or Eigen, AVX2 or AVX-512, the original's TF1).
# Such a weight and its moments are compared with bounds derived here, in the model of the top
# of this module (independent rounding errors |delta| <= u, first order, Hoeffding with
# CONFIDENCE) with u = 2**-24 for float32:
#
# 1. The gradient noise G of one step (`span_head_gradient_noise`,
#    `key_bias_gradient_noise`): in real arithmetic the gradient is sum_k dS_k = 0 for each
#    softmax row, for any incoming gradient and any scores, so only the roundings of the
#    softmax (its normalisation), of its backward pass and of the sums over positions that form
#    the variable's gradient move it. Each rounding event e contributes delta_e * s_e, s_e the
#    size of what it rounds times its effect on the gradient; G = CONFIDENCE * u *
#    sqrt(sum s_e**2). Sums of n terms are counted as n - 1 additions whose partial sums are
#    bounded by the sum of the absolute terms (whatever order the kernel adds them in).
# 2. The moments (`moment_bounds`): m and v are linear in g and g**2, so |m| <= M and v <= V
#    with G in place of |g| (the moments' own roundings are relative, a few u: negligible).
# 3. The weight (`weight_drift`): from a run's own final v the size of each step's gradient is
#    bounded (v is a sum of non-negative terms (1 - beta_2) beta_2**(T-1-t) g_t**2), hence each
#    m_t, and the weight moved by at most sum_t lr_t * |m_t| / (c_t * epsilon) (c_t the bias
#    correction of LAMB, 1 for AdamWeightDecay), and by no more than Adam's largest step
#    (Cauchy-Schwarz on m / sqrt(v)). Two runs' weights differ by at most the sum of their
#    drifts (the zero-gradient weight's exact value is its start: biases and LayerNorm get no
#    weight decay).

FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24


def _noise(square_sum, u=FLOAT32_UNIT_ROUNDOFF):
    return CONFIDENCE * u * np.sqrt(square_sum)


def adam_step_bound(steps, beta_1=0.9, beta_2=0.999, bias_corrected=False):
    """The largest |m / sqrt(v)| Adam can take after `steps` updates (from zero moments, or any
    history when `steps` is None), by Cauchy-Schwarz: (1 - beta_1) / sqrt(1 - beta_2) *
    sqrt(sum_k (beta_1**2 / beta_2)**k), with LAMB's bias corrections."""
    ratio = beta_1 ** 2 / beta_2
    total = 1.0 / (1.0 - ratio) if steps is None else (1.0 - ratio ** steps) / (1.0 - ratio)
    bound = (1.0 - beta_1) / np.sqrt(1.0 - beta_2) * np.sqrt(total)
    if bias_corrected and steps is not None:
        bound *= np.sqrt(1.0 - beta_2 ** steps) / (1.0 - beta_1 ** steps)
    return bound


def span_head_gradient_noise(batch_size, seq_length, output_weights_abs):
    """G of SQuAD's span head (one step, float32), before gradient clipping (which only
    scales it down): {"output_bias": [2], "beta": [H]} for cls/squad/output_bias and the last
    layer's output/LayerNorm/beta.

    Derived a priori from the loss (start and end: mean over the batch of -log_softmax over the
    positions, halved): the gradient of logit k of example b in column c is
    scale * (p_k - y_k), scale = 1 / (2 B), whose sum over k is 0. Per example and column the
    rounding events (an error of k ulp weighs as k**2 events) are: log_softmax's x - max (size
    scale * p (|log p| + L), L = max(ln S, 2)), log Z (2 ulp of scale * L), the S - 1 additions
    of Z (scale), the exps of Z and of the backward (2 ulp of scale * p each), x - max - log Z
    (scale * p |log p|), the backward's product and subtraction (scale * p, scale * |p - y|);
    with sum p = 1, sum p**2 (|log p| + L)**2 <= L**2, sum p**2 log(p)**2 <= 1 and
    sum (p - y)**2 <= 2 their squares sum to at most scale**2 (5 L**2 + S + 11). The bias
    gradient then adds the B S terms (sum of their sizes <= 1). beta's gradient is the same
    noise through the span weights w [2, H] (|w| <= `output_weights_abs`, a bound over the
    steps), plus the products and the addition of dlogits @ w and the sum over the B S
    positions (partial sums <= sum_c |w_cj|).
    """
    b, s = batch_size, seq_length
    scale = 1.0 / (2.0 * b)
    log_s = max(np.log(s), 2.0)
    rows = b * scale ** 2 * (5.0 * log_s ** 2 + s + 11.0)  # one column's softmax events
    terms = b * scale ** 2 * 2.0  # sum over the batch of (dlogit)**2, one column
    w = np.asarray(output_weights_abs, np.float64)  # [2, H]
    bias = _noise(rows + (b * s - 1) * 1.0) * np.ones(2)
    beta = _noise(np.sum(w ** 2, axis=0) * (rows + 3.0 * terms)
                  + (b * s - 1) * np.sum(w, axis=0) ** 2)
    return {"output_bias": bias, "beta": beta}


def capture_attention(model, loss_fn, features):
    """Runs `loss_fn(model(features, training=True), features)` eagerly and returns, for each
    call of a SelfAttention layer of `model` (in no particular order; a layer shared by several
    of the model's layers, as ALBERT's, once per call), a dict: `layer` (the layer) and
    float64 numpy arrays `probs` [B, A, S, S] (the softmax), `d_probs` (the loss's gradient
    with respect to them) and `query` [B, S, H] (the query projection, bias included)."""
    from bert_tf.layers.attention import SelfAttention

    layers = [layer for layer in model._flatten_layers() if isinstance(layer, SelfAttention)]
    records = []  # one per call, in call order; a call computes its query before its softmax
    tape = tf.GradientTape()
    originals = []
    for attention in layers:
        originals.append((attention, attention.dropout.call, attention.query.call))

        def dropout_call(x, *args, _call=attention.dropout.call, _layer=attention, **kwargs):
            tape.watch(x)
            record = next(r for r in reversed(records) if r["layer"] is _layer)
            record["probs"] = x
            return _call(x, *args, **kwargs)

        def query_call(x, *args, _call=attention.query.call, _layer=attention, **kwargs):
            y = _call(x, *args, **kwargs)
            records.append({"layer": _layer, "query": y})
            return y

        attention.dropout.call = dropout_call
        attention.query.call = query_call
    try:
        with tape:
            loss = loss_fn(model(features, training=True), features)
        d_probs = tape.gradient(loss, [r["probs"] for r in records])
    finally:
        for attention, dropout_call, query_call in originals:
            attention.dropout.call = dropout_call
            attention.query.call = query_call
    return [{"layer": r["layer"], "probs": r["probs"].numpy().astype(np.float64),
             "d_probs": d.numpy().astype(np.float64),
             "query": r["query"].numpy().astype(np.float64)}
            for r, d in zip(records, d_probs)]


def key_bias_gradient_noise(capture, num_attention_heads, extra_additions=0):
    """G [H] of one attention layer's key bias for one step (float32), from that layer's
    `capture_attention` record of the step's batch.

    For query row (b, h, q) with softmax p_k, incoming gradient dP_k, s = sum_k p_k dP_k and
    weight w_j = |query_j| / sqrt(d) of bias element j (of head h): TensorFlow's softmax
    backward is dS_k = (dP_k - s) p_k, which sums to 0 for any dP and any scores (so the
    roundings of the scores and of everything upstream do not matter), and the bias gradient
    is sum over (b, k) of dK_kj = sum_q dS_qk * query_qj / sqrt(d). Events per (q, k), sizes
    times w_j: the product p dP in s (p |dP|); the subtraction, the product, the 1/sqrt(d)
    scaling and the product with the query (p |dP - s| each); the softmax's exp (2 ulp) and
    division (1 ulp, or 2 roundings as a reciprocal and a product) (|s| p each), and its
    x - max (|s| p |log p|, as p |x - max| <= p |log p|); an error of k ulp weighs k**2. Sums:
    s's and Z's S - 1 additions per row (w sum_k p |dP|, w |s|), dK's S - 1 per (b, k)
    (partial sums <= D_bkj = sum_q w p |dP - s|) and the bias gradient's B S - 1 over (b, k)
    (<= A_j = sum_bk D_bkj), plus `extra_additions` more of whole gradients (micro-batches,
    replicas).
    """
    p, dp, query = capture["probs"], capture["d_probs"], capture["query"]
    b, heads, s_len, _ = p.shape
    d = query.shape[-1] // num_attention_heads
    # w [B, A, S_q, d]: the weight of each row's noise on each bias element of its head.
    w = np.abs(query.reshape(b, s_len, heads, d).transpose(0, 2, 1, 3)) / np.sqrt(d)
    s = np.sum(p * dp, axis=-1, keepdims=True)  # [B, A, S, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)
    # exp: 2 ulp (weight 4), the division (or reciprocal and product): 2 more.
    per_element = (p * dp) ** 2 + 4.0 * (p * (dp - s)) ** 2 + 6.0 * (s * p) ** 2 \
        + (s * p * log_p) ** 2  # [B, A, S_q, S_k]
    per_row = np.sum(per_element, axis=-1) + (s_len - 1) * (
        np.sum(p * np.abs(dp), axis=-1) ** 2 + s[..., 0] ** 2)  # [B, A, S_q]
    # D [B, A, S_k, d]: sum over q of w * p |dP - s|.
    d_terms = np.einsum("bhqk,bhqj->bhkj", p * np.abs(dp - s), w)
    total = d_terms.sum(axis=(0, 2))  # A_j [A, d]
    square_sum = (np.einsum("bhq,bhqj->hj", per_row, w ** 2)
                  + (s_len - 1) * np.sum(d_terms ** 2, axis=(0, 2))
                  + (b * s_len - 1 + extra_additions) * total ** 2)
    return _noise(square_sum).reshape(-1)  # [H], head-major as the kernel's columns


def moment_bounds(gradient_noise, beta_1=0.9, beta_2=0.999, m0=0.0, v0=0.0):
    """(M, V): bounds of |m| and v after the steps whose gradient noise bounds are
    `gradient_noise` (a list, one array per step, oldest first), from moments m0, v0."""
    m, v = np.abs(np.asarray(m0, np.float64)), np.asarray(v0, np.float64)
    for g in gradient_noise:
        m = beta_1 * m + (1.0 - beta_1) * np.asarray(g, np.float64)
        v = beta_2 * v + (1.0 - beta_2) * np.asarray(g, np.float64) ** 2
    growth = (1.0 + 8.0 * FLOAT32_UNIT_ROUNDOFF) ** len(gradient_noise)  # the slots' roundings
    return m * growth, v * growth


def weight_drift(v_final, learning_rates, m0=0.0, v0=None, first_step=1, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-6, bias_corrected=False, weight_abs=0.0):
    """Bound of |w_T - w_0| of a zero-gradient, undecayed weight over the steps with
    `learning_rates` (oldest first), from the run's final second moment `v_final` (and its
    moments m0 at the start; `first_step` numbers the first of these steps from 1, for LAMB's
    bias correction): |g_t| <= sqrt(v_final / ((1 - beta_2) beta_2**(T-1-t))), so |m_t|, so the
    steps; `weight_abs` bounds |w| for the roundings of the updates themselves."""
    v_final = np.asarray(v_final, np.float64) * (1.0 + 8.0 * FLOAT32_UNIT_ROUNDOFF) ** len(
        learning_rates)
    steps = len(learning_rates)
    m = np.abs(np.asarray(m0, np.float64))
    drift = np.zeros_like(v_final)
    for t, lr in enumerate(learning_rates):
        g = np.sqrt(v_final / ((1.0 - beta_2) * beta_2 ** (steps - 1 - t)))
        m = beta_1 * m + (1.0 - beta_1) * g
        step = first_step + t
        correction = (1.0 - beta_1 ** step) if bias_corrected else 1.0
        largest = adam_step_bound(step if v0 is None or not np.any(v0) else None, beta_1,
                                  beta_2, bias_corrected)
        drift += lr * np.minimum(m / (correction * epsilon), largest)
    # The update's own roundings (relative; float32's epsilon is 1e-6 less 3e-15) and the
    # rounding of w - lr * update.
    drift *= (1.0 + 8.0 * FLOAT32_UNIT_ROUNDOFF) ** max(steps, 1)
    return drift + steps * FLOAT32_UNIT_ROUNDOFF * np.asarray(weight_abs, np.float64)


class ZeroGradientBounds:
    """The bounds of one training run's zero-gradient variables, to check two checkpoints of
    it (ours and the original's, or two of our configurations).

    Args:
      gradient_noise: {variable name: [G of each step] (arrays of the variable's shape)}.
      learning_rates: the steps' learning rates.
      start_a, start_b: each run's start: {name: value} holding every bounded variable and,
        for a run resumed from a training checkpoint, its slots (absent: zero moments).
      slots: the optimizer's slot names (m, v): ("adam_m", "adam_v") or ("lamb_m", "lamb_v").
      first_step: the first step's number from 1 (LAMB's bias correction).
    """

    def __init__(self, gradient_noise, learning_rates, start_a, start_b=None,
                 slots=("adam_m", "adam_v"), first_step=1):
        self.gradient_noise = gradient_noise
        self.learning_rates = [float(lr) for lr in learning_rates]
        self.starts = (start_a, start_a if start_b is None else start_b)
        self.slots = slots
        self.first_step = first_step
        self.worst = {}

    def names(self):
        """Every name this bounds: the variables and their two slots."""
        return {f"{n}{suffix}" for n in self.gradient_noise
                for suffix in ("", f"/{self.slots[0]}", f"/{self.slots[1]}")}

    def _record(self, kind, ratio):
        self.worst[kind] = max(self.worst.get(kind, 0.0), float(np.max(ratio)))

    def _check_run(self, name, values, start):
        """One run: its slots within their bounds, its weight within its drift of the start.
        Returns the drift bound."""
        m_name, v_name = self.slots
        m0 = start.get(f"{name}/{m_name}", 0.0)
        v0 = start.get(f"{name}/{v_name}")
        bound_m, bound_v = moment_bounds(self.gradient_noise[name], m0=m0,
                                         v0=0.0 if v0 is None else v0)
        for slot, bound in ((m_name, bound_m), (v_name, bound_v)):
            value = np.abs(np.asarray(values[f"{name}/{slot}"], np.float64))
            ratio = value / bound
            self._record(slot, ratio)
            assert ratio.max() <= 1.0, (
                f"{name}/{slot} = {np.max(value):.4g} exceeds the rounding noise bound "
                f"{bound.flat[np.argmax(ratio)]:.4g} of a zero gradient ({ratio.max():.2f}x): is "
                "its true gradient still zero?")
        drift = weight_drift(values[f"{name}/{v_name}"], self.learning_rates, m0=m0, v0=v0,
                             first_step=self.first_step,
                             bias_corrected=m_name.startswith("lamb"),
                             weight_abs=np.abs(values[name]))
        moved = np.abs(np.asarray(values[name], np.float64) - np.asarray(start[name], np.float64))
        ratio = moved / drift
        self._record("drift", ratio)
        assert ratio.max() <= 1.0, (
            f"{name} moved {np.max(moved):.4g} from its start, more than Adam can make of its "
            f"gradient's rounding noise ({drift.flat[np.argmax(ratio)]:.4g}, {ratio.max():.2f}x)")
        return drift

    def check(self, a, b):
        """Asserts, for checkpoints `a` and `b` ({name: array}) of the run: each one's slots
        within their bounds and its weights within its drift of its start (so |a - b| within
        the sum of the drifts and the starts' gap, also recorded). Returns {kind: worst
        |value| / bound}."""
        for name in self.gradient_noise:
            drift_a = self._check_run(name, a, self.starts[0])
            drift_b = self._check_run(name, b, self.starts[1])
            gap = np.abs(np.asarray(self.starts[0][name], np.float64)
                         - np.asarray(self.starts[1][name], np.float64))
            self._record("weight", np.abs(np.asarray(a[name], np.float64)
                                          - np.asarray(b[name], np.float64))
                         / (drift_a + drift_b + gap))
        print(f"zero-gradient variables, worst |value| / bound: {self.worst}")
        return dict(self.worst)
