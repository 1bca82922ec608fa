"""How far a mixed-precision (bfloat16 / float16) computation may be from float32, derived from
the arithmetic rather than fitted to one CPU.

Model of the arithmetic. Under a mixed policy every tensor a 16-bit op produces is rounded to
nearest: t = t_exact * (1 + d) with |d| <= u, the unit roundoff (2**-8 for bfloat16, whose
significand has 8 bits; 2**-11 for float16). TensorFlow's 16-bit matmuls accumulate in float32
(Eigen's and oneDNN's on CPUs; checked wherever the tests run by
tests/test_pretraining.py::test_16_bit_matmul_accumulates_in_float32), so their accumulation
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
(tests/test_pretraining.py), since a value moved to 16 bits would also raise this bound. The
float32 reference's own error (~2**-24 relative) is negligible at this scale.

The rounded tensors are found in the traced graph of the mixed computation itself: the outputs
of every op that produces a 16-bit tensor, except ops that only move values (reshape, gather,
transpose, ...). Kernels that fuse ops (oneDNN's matmul + bias + activation) round less often
than the graph shows, so the bound only gets safer there. c is computed with the gradients of
that graph (themselves 16-bit, a few u off: irrelevant for a bound).
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
    """

    def __init__(self, compute, dtype):
        self.compute = compute
        self.dtype = dtype
        self._sensitivities = {}

    def _sensitivity(self, names):
        """A traced function (inputs, element) -> c of that element of each of `names`."""
        if names not in self._sensitivities:
            @tf.function
            def sensitivity(x, element):
                outputs = self.compute(x)
                points = _rounded_tensors(tf.compat.v1.get_default_graph(), self.dtype)
                norms = []
                for name in names:
                    y = tf.gather(tf.reshape(tf.cast(outputs[name], tf.float32), [-1]), element)
                    # g * t in float32: it can leave float16's range.
                    terms = [tf.square(tf.cast(g, tf.float32) * tf.cast(t, tf.float32))
                             for g, t in zip(tf.gradients(y, points), points) if g is not None]
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
