"""`python -m bert_tf.export --precision=bfloat16` (the encoder's Dense weights stored and
multiplied in bfloat16, the embedding tables stored in bfloat16 and their rows widened to
float32 before the sum, everything else float32) and `--precision=int8`, checked against the
float32 export of the same checkpoint (the golden tiny model with a random classifier head).

The bound of |bfloat16 export - float32 export| is tests/rounding_bounds.py's, derived from the
arithmetic, not tuned: every tensor a bfloat16 op produces, and every weight rounded from the
checkpoint's float32, is x (1 + d) with |d| <= u = 2**-8 (bfloat16's unit roundoff, round to
nearest); the matmuls accumulate in float32 (2**-24 per term, negligible). To first order an
output moves by sum_t (dy/dt) t d_t over those rounded tensors t; with independent mean-zero
roundings, Hoeffding gives |dy| <= 6 u sqrt(sum_t (dy/dt t)**2), failing by chance with
probability 3e-8 per value. The sensitivities dy/dt are taken in the traced graph of a model
built under Keras' mixed_bfloat16 policy from the same checkpoint: its arithmetic is the
export's op for op (each float32 kernel and bias cast to bfloat16 -- the same round to nearest
even the export applied once at load, now a Cast op of the graph, so the weights' roundings are
counted --, bfloat16 matmuls, bias adds and activations, float32 embedding sum, LayerNorm,
softmax and head) but one: it reads the embedding tables in float32, where the export stores
them rounded to bfloat16 (no policy casts a table). Their roundings are added as weights
stored rounded (tests/rounding_bounds.py, `rounded_variables`): one error t_i d_i per table
element, |d_i| <= u, contributing (dy/dt_i t_i)**2 with dy/dt_i the stand-in's gradient with
respect to the table (summed over the tokens that read the row). With that term the bound is
that of exactly the function the export computes; without it (the bound before bfloat16
tables) the rows' roundings, which move every output, would go uncounted.

--precision=int8 (the int8 tests below): the encoder's Dense kernels stored as int8 with a
float32 scale per output column, their inputs quantized per row at run time
(bert_tf/training/int8.py). How far the int8 export may be from the float32 export is derived
from the quantization, not tuned. For each Dense layer the int8 export computes
(x + a) @ (W + E) + b instead of x @ W + b:
  E = W8 * scale - W, the weight quantization error, is known exactly from the kernel
    (|E[i, j]| <= scale[j] / 2);
  a, the activation quantization error, is not: |a[r, k]| <= s_r / 2 with s_r = max_k |x[r, k]|
    / 127 the row's scale.
The integer products are summed exactly (int32), their sums exact in float32 too in this tiny
model (|sum| < 2**24: 48 or 192 inputs), and every other op is the float32 export's (roundings
of ~2**-24 relative, negligible).
To first order an output y moves by
  dy = sum over Dense layers (dy/dW . E) + sum over Dense layers (dy/dx . a):
the first sum (the weights' shift) is computed exactly; the second is a sum of independent
mean-zero terms each within +-|dy/dx| s / 2 (round-to-nearest errors, the model of Higham & Mary
that tests/rounding_bounds.py uses for bfloat16), so by Hoeffding's inequality
  |dy - weights' shift| <= CONFIDENCE * sqrt(sum (dy/dx s / 2)**2)
except with probability 2 exp(-CONFIDENCE**2 / 2) = 3e-8 per value (CONFIDENCE = 6, as for
bfloat16). The gradients are taken in the float32 model at the checkpoint's weights (dy/dW summed
over a kernel's uses). Second-order terms are products of two errors, each at most 1/254 of the
value it perturbs, so about 1/254 of the first-order ones. Like any 6-sigma bound it is loose
for the typical case (measured distance / bound 0.12-0.17): it catches gross errors (a wrong
weight, scale or layer), not a subtly different quantization (floor for round, one scale per
tensor passed it when tried); test_int8_dense_equals_a_float64_emulation_of_its_arithmetic
pins the arithmetic itself to within float32 rounding, and caught both.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import families
from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import (load_original_checkpoint, original_variable_map,
                                 save_original_checkpoint)
from bert_tf.layers.heads import ClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.serving import export
from bert_tf.layers.dense import INT8_MAX, quantize_kernel
from bert_tf.training.precision import ACCURACY_CHECKED, PRECISIONS, dtype_policy
from conftest import golden_path
from rounding_bounds import CONFIDENCE, RoundingErrorBounds, assert_within_bounds

pytestmark = pytest.mark.slow  # six exports saved (~30 s), 12 more built, ten bounds traced
MAX_SEQ_LENGTH = 64  # one-by-one requests run at 16 positions, the batch at 48
LABELS = ["neg", "pos", "mixed"]
TEXTS_A = ["the man went to the store", "he bought a gallon of milk", "", "a " * 40,
           "Unbelievable café, naïve!"]
TEXTS_B = ["it was closed", "", "penguins are flightless birds", "b \u0301 c", "x\u00a0y"]
# The Dense layers the bfloat16 export stores in bfloat16 (original names' last scopes).
BF16_SCOPES = ("query", "key", "value", "dense")
# The embedding tables it stores in bfloat16 (original names' last scope).
BF16_TABLES = ("word_embeddings", "token_type_embeddings", "position_embeddings")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(config, classifier checkpoint prefix, vocab file, {precision: (module, export dir)},
    {precision: (features module, export dir)})."""
    model_dir = golden_path("model")
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    vocab_file = str(model_dir / "vocab.txt")
    root = tmp_path_factory.mktemp("precision")
    tf.keras.utils.set_random_seed(100)
    model = BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size))
    load_original_checkpoint(model, str(model_dir / "bert_model.ckpt"))
    checkpoint = save_original_checkpoint(model, root / "ckpt" / "model.ckpt")
    exports = {}
    for task in ("classifier", "features"):
        for precision in PRECISIONS:
            module, info = export.build_export(
                task, config, checkpoint, vocab_file, True, MAX_SEQ_LENGTH, labels=LABELS,
                layers="-1", precision=precision)
            assert info["precision"] == precision
            path = export.save_export(module, info, root / f"{task}_{precision}")
            exports[task, precision] = (module, path)
    return config, checkpoint, exports


def _mixed_model(config, checkpoint, head=True, policy="bf16"):
    """The checkpoint under Keras' mixed_bfloat16 policy (float32 variables cast to bfloat16
    in the graph): the export's arithmetic with the Dense weights' roundings as graph ops (not
    the embedding tables', which the bounds take as `rounded_variables`); with policy "none",
    the float32 model."""
    with dtype_policy(policy):
        if head:
            model = BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size))
        else:
            model = families.build_encoder(config, name="bert")
    load_original_checkpoint(model, checkpoint)
    return model


_LOADED = {}


def _serve(path, *texts):
    if path not in _LOADED:
        _LOADED[path] = tf.saved_model.load(str(path))
    loaded = _LOADED[path]
    names = ("text_a", "text_b")
    outputs = loaded.signatures["serving_default"](
        **{n: tf.constant(t) for n, t in zip(names, texts)})
    return {k: v.numpy() for k, v in outputs.items()}


def test_bfloat16_classifier_within_rounding_bound_of_float32(setup):
    """Probabilities of the bfloat16 export within the derived bound (module docstring) of the
    float32 export's, for the batch and for each request alone (a request alone runs at 16
    positions, the batch at 48: padding keys get softmax weight exactly 0, so a real output's
    rounding events and sensitivities are the batch's); labels agree wherever float32's margin
    between the two best classes exceeds both probabilities' bounds."""
    config, checkpoint, exports = setup
    float32 = _serve(exports["classifier", "float32"][1], TEXTS_A, TEXTS_B)
    bf16 = _serve(exports["classifier", "bfloat16"][1], TEXTS_A, TEXTS_B)
    assert bf16["probabilities"].dtype == np.float32
    module = exports["classifier", "bfloat16"][0]
    features = module.inputs.pairs(tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    features = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
    mixed = _mixed_model(config, checkpoint)
    bound = RoundingErrorBounds(lambda x: mixed(x, training=False), "bfloat16",
                                mixed.bert.embeddings.tables)(
        features, ("probabilities",))["probabilities"]
    worst = assert_within_bounds(bf16["probabilities"], float32["probabilities"], bound,
                                 "bfloat16 export, batch")
    for i in range(len(TEXTS_A)):
        alone = _serve(exports["classifier", "bfloat16"][1], TEXTS_A[i:i + 1], TEXTS_B[i:i + 1])
        worst = max(worst, assert_within_bounds(
            alone["probabilities"][0], float32["probabilities"][i], bound[i],
            f"bfloat16 export, request {i} alone"))
    top2 = np.sort(float32["probabilities"], axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * bound.max(axis=-1)
    np.testing.assert_array_equal(bf16["label_id"][clear], float32["label_id"][clear])
    largest = np.abs(bf16["probabilities"] - float32["probabilities"]).max()
    print(f"classifier: worst |bf16 - float32| / bound {worst:.3f}, largest |difference| "
          f"{largest:.3g}")


def test_bfloat16_features_within_rounding_bound_of_float32(setup):
    """The last encoder layer's vectors at the first two positions of every text, bfloat16
    export against float32 export, within the derived bound (module docstring)."""
    config, checkpoint, exports = setup
    float32 = _serve(exports["features", "float32"][1], TEXTS_A, TEXTS_B)
    bf16 = _serve(exports["features", "bfloat16"][1], TEXTS_A, TEXTS_B)
    assert bf16["layers"].dtype == np.float32
    np.testing.assert_array_equal(bf16["input_ids"], float32["input_ids"])
    module = exports["features", "bfloat16"][0]
    features = module.inputs.pairs(tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    features = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
    encoder = _mixed_model(config, checkpoint, head=False)
    bound = RoundingErrorBounds(
        lambda x: {"head": encoder(x, training=False)["all_encoder_layers"][-1][:, :2]},
        "bfloat16", encoder.embeddings.tables)(features, ("head",))["head"]
    worst = assert_within_bounds(bf16["layers"][:, :2, 0], float32["layers"][:, :2, 0], bound,
                                 "bfloat16 features")
    print(f"features: worst |bf16 - float32| / bound {worst:.3f}")


def _round_to_nearest_even(values):
    """float32 -> the nearest bfloat16 (ties to even), as float32, by bit arithmetic."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_stored_dense_weights_and_tables_are_bfloat16_rounded_to_nearest_even(setup):
    """The bfloat16 export stores the encoder's Dense kernels and biases and the embedding
    tables (word, token type, position) as bfloat16, each the checkpoint's float32 value
    rounded to nearest even; LayerNorm and the head stay float32 and exact. The variables'
    file shrinks by exactly 2 bytes per bfloat16 weight."""
    _, checkpoint, exports = setup
    original = tf.train.load_checkpoint(checkpoint)
    sizes = {}
    for precision in ("float32", "bfloat16"):
        path = exports["classifier", precision][1]
        prefix = os.path.join(path, "variables", "variables")
        saved = tf.train.load_checkpoint(prefix)
        dtypes = saved.get_variable_to_dtype_map()
        halved = tables = 0
        for name, _ in original_variable_map(exports["classifier", "float32"][0].model).items():
            key = f"weights/{name}/.ATTRIBUTES/VARIABLE_VALUE"
            want = original.get_tensor(name)
            scopes = name.split("/")
            is_dense = len(scopes) > 1 and scopes[-2] in BF16_SCOPES
            is_table = scopes[-2:-1] == ["embeddings"] and scopes[-1] in BF16_TABLES
            tables += is_table
            if precision == "bfloat16" and (is_dense or is_table):
                assert dtypes[key] == tf.bfloat16, name
                got = saved.get_tensor(key).astype(np.float32)
                np.testing.assert_array_equal(got, _round_to_nearest_even(want), err_msg=name)
                halved += want.size
            else:
                assert dtypes[key] == tf.float32, (precision, name)
                np.testing.assert_array_equal(saved.get_tensor(key), want, err_msg=name)
        sizes[precision] = (sum(os.path.getsize(os.path.join(path, "variables", f))
                                for f in os.listdir(os.path.join(path, "variables"))
                                if f.startswith("variables.data")), halved)
    assert sizes["bfloat16"][1] > 0 and tables == len(BF16_TABLES)
    assert sizes["float32"][0] - sizes["bfloat16"][0] == 2 * sizes["bfloat16"][1]


def _saved_model_cli_run(path):
    """Plain `saved_model_cli run` of the export at `path` on two request pairs, in a fresh
    process; asserts it succeeded and returns the CompletedProcess."""
    command = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "run", "--dir",
               path, "--tag_set", "serve", "--signature_def", "serving_default",
               "--input_exprs", f"text_a={TEXTS_A[:2]!r};text_b={TEXTS_B[:2]!r}"]
    result = subprocess.run(command, capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_saved_model_cli_runs_the_bfloat16_export(setup):
    """Plain `saved_model_cli run` in a fresh process loads and runs the bfloat16 export; its
    bert_tf_export.json is the float32 export's but for "precision": "bfloat16", and its
    signatures take and give what the float32 export's do (names, dtypes, shapes)."""
    _, _, exports = setup
    path = str(exports["classifier", "bfloat16"][1])
    infos = {}
    for precision in ("float32", "bfloat16"):
        with open(os.path.join(exports["classifier", precision][1],
                               export.EXPORT_INFO_FILE)) as f:
            infos[precision] = json.load(f)
    assert infos["bfloat16"] == dict(infos["float32"], precision="bfloat16",
                                     precision_checked=ACCURACY_CHECKED["bfloat16"])
    for name in ("serving_default", "single"):
        signatures = [_LOADED.get(p) or tf.saved_model.load(str(p)) for p in
                      (exports["classifier", "float32"][1], path)]
        structured = [s.signatures[name].structured_outputs for s in signatures]
        specs = [{k: (v.dtype, v.shape.as_list()) for k, v in outputs.items()}
                 for outputs in structured]
        assert specs[0] == specs[1], name
        assert specs[1]["probabilities"][0] == tf.float32
        inputs = [s.signatures[name].structured_input_signature for s in signatures]
        assert inputs[0] == inputs[1], name
    result = _saved_model_cli_run(path)
    assert "Result for output key probabilities" in result.stdout
    assert "Result for output key label_id" in result.stdout


def test_unknown_precision_is_a_clear_error(setup):
    config, checkpoint, _ = setup
    with pytest.raises(export.ExportError, match="--precision='int4': expected one of"):
        export.build_export("classifier", config, checkpoint,
                            str(golden_path("model") / "vocab.txt"), labels=LABELS,
                            precision="int4")


# --- bfloat16 in every family and task ----------------------------------------------------

DATA = os.path.join(os.path.dirname(__file__), "data")
# Tiny configs of each family, with an embedding width E != H where the family has one.
_TINY = dict(hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
             type_vocab_size=2, initializer_range=0.2)
FAMILY_CONFIGS = {
    "bert": dict(vocab_size=509, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=64),
    "albert": dict(model_type="albert", vocab_size=2000, embedding_size=8, hidden_size=16,
                   num_hidden_layers=2, num_hidden_groups=1, inner_group_num=2,
                   num_attention_heads=2, intermediate_size=32, max_position_embeddings=64),
    "electra": dict(model_type="electra", vocab_size=509, embedding_size=8, hidden_size=16,
                    num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    hidden_act="gelu_exact", max_position_embeddings=64),
    "roberta": dict(model_type="roberta", vocab_size=1036, hidden_size=16, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=32, hidden_act="gelu_exact",
                    max_position_embeddings=34, type_vocab_size=1, pad_token_id=1),
    "xlm_roberta": dict(model_type="xlm-roberta", vocab_size=602, hidden_size=16,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                        hidden_act="gelu_exact", max_position_embeddings=34, type_vocab_size=1,
                        pad_token_id=1),
}


def _family_files(family):
    """(--vocab_file, tokenizer_files, do_lower_case) of the family's test tokenizer."""
    if family in ("bert", "electra"):
        return str(golden_path("model") / "vocab.txt"), None, True
    if family == "albert":
        return os.path.join(DATA, "albert_spm", "albert.model"), None, True
    if family == "roberta":
        folder = os.path.join(DATA, "roberta_tokenizer")
        return (os.path.join(folder, "vocab.json"),
                {"merges_file": os.path.join(folder, "merges.txt")}, False)
    return os.path.join(DATA, "xlm_roberta", "sentencepiece.bpe.model"), None, False


# What each task's model gives that its signature's answers come from, at the first 4 positions
# (a bound is traced per element).
TASK_OUTPUTS = {
    "classifier": lambda out: {"y": out["probabilities"]},
    "tagging": lambda out: {"y": out["logits"][:, :4]},
    "squad": lambda out: {"y": tf.stack([out["start_logits"][:, :4],
                                         out["end_logits"][:, :4]])},
    "features": lambda out: {"y": out["all_encoder_layers"][-1][:, :4]},
}
# Every family once, every task at least once besides BERT's classifier and features above
# (XLM-R has no SQuAD export: its graph tokenizer has no offsets).
FAMILY_TASKS = [("bert", "tagging"), ("bert", "squad"), ("albert", "classifier"),
                ("electra", "features"), ("roberta", "squad"), ("xlm_roberta", "tagging")]


def _named_weights(nested, prefix=""):
    """{original name: tf.Variable} of `export.saved_weights`' nesting."""
    names = {}
    for key, value in nested.items():
        if isinstance(value, dict):
            names.update(_named_weights(value, f"{prefix}{key}/"))
        else:
            names[f"{prefix}{key}"] = value
    return names


@pytest.mark.parametrize("family, task", FAMILY_TASKS, ids=[f"{f}-{t}" for f, t in FAMILY_TASKS])
def test_bfloat16_export_of_every_family_and_task(family, task, tmp_path):
    """A bfloat16 export of each family (random tiny weights and head) stores its embedding
    tables as bfloat16, the checkpoint's values rounded to nearest even, and no other
    embedding weight in bfloat16; its model's outputs for the task are within the derived
    bound (module docstring, tables included) of the float32 export's; its signature gives
    what the float32 export's does (names, dtypes)."""
    config = families.config_from_dict({**_TINY, **FAMILY_CONFIGS[family]})
    vocab_file, tokenizer_files, lower = _family_files(family)
    tf.keras.utils.set_random_seed(7)
    prefix = save_original_checkpoint(export.task_model(task, config, LABELS),
                                      tmp_path / "ckpt" / "model.ckpt")
    modules = {precision: export.build_export(
        task, config, prefix, vocab_file, lower, max_seq_length=32, labels=LABELS,
        layers="-1", max_query_length=8, doc_stride=8, tokenizer_files=tokenizer_files,
        precision=precision)[0]
        for precision in ("float32", "bfloat16")}

    original = tf.train.load_checkpoint(prefix)
    stored = _named_weights(export.saved_weights(modules["bfloat16"].model))
    tables = [n for n in stored if n.split("/")[-1] in BF16_TABLES]
    assert len(tables) == len(BF16_TABLES), sorted(stored)
    for name, variable in stored.items():
        scopes = name.split("/")
        if name in tables:
            assert variable.dtype == tf.bfloat16, name
            np.testing.assert_array_equal(variable.numpy().astype(np.float32),
                                          _round_to_nearest_even(original.get_tensor(name)),
                                          err_msg=name)
        elif "embeddings" in scopes and "LayerNorm" in scopes:
            assert variable.dtype == tf.float32, name

    features = modules["bfloat16"].inputs.pairs(
        tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    features = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
    outputs = TASK_OUTPUTS[task]
    got, want = (outputs(modules[p].model(features, training=False))["y"].numpy()
                 for p in ("bfloat16", "float32"))
    with dtype_policy("bf16"):
        mixed = export.task_model(task, config, LABELS)
    load_original_checkpoint(mixed, prefix)
    encoder = mixed if task == "features" else mixed.bert
    bound = RoundingErrorBounds(lambda x: outputs(mixed(x, training=False)), "bfloat16",
                                encoder.embeddings.tables)(features, ("y",))["y"]
    worst = assert_within_bounds(got, want, bound, f"{family} {task} bfloat16")
    assert np.any(got != want), "bfloat16 outputs equal float32's: not bfloat16?"

    texts = {"tagging": (TEXTS_A,), "squad": (TEXTS_B, TEXTS_A)}.get(task, (TEXTS_A, TEXTS_B))
    answers = {p: modules[p].signatures()["serving_default"](*map(tf.constant, texts))
               for p in modules}
    assert ({k: v.dtype for k, v in answers["bfloat16"].items()}
            == {k: v.dtype for k, v in answers["float32"].items()})
    print(f"{family} {task}: worst |bf16 - float32| / bound {worst:.3f}")


# --- int8 ----------------------------------------------------------------------------------


def _dense_layers(layer, seen=None):
    """Every keras.layers.Dense under `layer` (its public attributes, recursively), once."""
    seen = set() if seen is None else seen
    found = []
    for name, value in vars(layer).items():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if name.startswith("_") or not isinstance(item, keras.layers.Layer):
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, keras.layers.Dense):
                found.append(item)
            else:
                found.extend(_dense_layers(item, seen))
    return found


class QuantizationBound:
    """Per-element first-order bounds (module docstring) of `output(model(features))` of the
    float32 `model` whose Dense layers under `encoder` the int8 export quantizes."""

    def __init__(self, model, encoder, output):
        self.denses = _dense_layers(encoder)
        self.model, self.output = model, output
        # |E| per kernel, from the export's own quantization rule (checked separately against
        # the stored kernels by test_stored_kernels_are_int8_of_round_w_over_scale).
        self.weight_errors = []
        for dense in self.denses:
            kernel = keras.ops.convert_to_numpy(dense.kernel).astype(np.float64)
            quantized, scale = quantize_kernel(kernel.astype(np.float32))
            error = quantized * scale.astype(np.float64) - kernel
            self.weight_errors.append(tf.constant(error, tf.float32))
        self.sensitivity = tf.function(self._sensitivity)

    def _sensitivity(self, features, element):
        inputs = []
        originals = [dense.call for dense in self.denses]

        def recording(x, *args, _call, **kwargs):
            inputs.append(x)
            tape.watch(x)
            return _call(x, *args, **kwargs)

        kernels = [dense.kernel.value for dense in self.denses]
        try:
            with tf.GradientTape() as tape:
                for dense, call in zip(self.denses, originals):
                    dense.call = lambda x, *a, _call=call, **k: recording(x, *a, _call=_call, **k)
                tape.watch(kernels)
                y = tf.gather(tf.reshape(self.output(self.model(features, training=False)),
                                         [-1]), element)
        finally:
            for dense in self.denses:
                del dense.call  # the class's call again
        gradients = tape.gradient(y, inputs + kernels)
        weights_shift = tf.constant(0.0)  # sum dy/dW . E, signed
        activations_square = tf.constant(0.0)  # sum (dy/dx s / 2)**2
        for x, g in zip(inputs, gradients[:len(inputs)]):
            if g is None:  # a layer the output does not depend on (the pooler, for features)
                continue
            row_half_step = tf.reduce_max(tf.abs(x), axis=-1, keepdims=True) / INT8_MAX / 2
            activations_square += tf.reduce_sum(tf.square(g * row_half_step))
        for e, g in zip(self.weight_errors, gradients[len(inputs):]):
            if g is not None:
                weights_shift += tf.reduce_sum(g * e)
        return tf.stack([weights_shift, tf.sqrt(activations_square)])

    def __call__(self, features):
        """(first-order shift by the weights' quantization, Hoeffding bound of the activations'
        part), float64 arrays of the output's shape."""
        shape = self.output(self.model(features, training=False)).shape
        size = int(np.prod(shape))
        terms = np.array([self.sensitivity(features, tf.constant(i)).numpy()
                          for i in range(size)], np.float64)
        return terms[:, 0].reshape(shape), CONFIDENCE * terms[:, 1].reshape(shape)


def _features(module):
    features = module.inputs.pairs(tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    return {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}


def _assert_within(got, want, bound, label):
    ratio = np.abs(np.asarray(got, np.float64) - want) / bound
    assert ratio.max() <= 1.0, (f"{label}: |int8 - (float32 + weight shift)| / bound = "
                                f"{ratio.max():.3f}")
    return ratio.max()


def test_int8_classifier_within_quantization_bound_of_float32(setup):
    """Probabilities of the int8 export within the derived bound (module docstring) of the
    float32 export's, for the mixed-length batch and for each request alone (alone: 16
    positions, in the batch 48; each row's quantization depends on that row only and padding
    keys get softmax weight 0, so the bound is the same); labels agree, batch and alone,
    wherever float32's margin between the two best classes exceeds twice the bound."""
    config, checkpoint, exports = setup
    float32 = _serve(exports["classifier", "float32"][1], TEXTS_A, TEXTS_B)
    int8 = _serve(exports["classifier", "int8"][1], TEXTS_A, TEXTS_B)
    assert int8["probabilities"].dtype == np.float32
    model = _mixed_model(config, checkpoint, policy="none")
    encoder = model.bert
    shift, bound = QuantizationBound(model, encoder, lambda out: out["probabilities"])(
        _features(exports["classifier", "int8"][0]))
    want = float32["probabilities"] + shift
    worst = _assert_within(int8["probabilities"], want, bound, "batch")
    top2 = np.sort(float32["probabilities"], axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * (np.abs(shift) + bound).max(axis=-1)
    np.testing.assert_array_equal(int8["label_id"][clear], float32["label_id"][clear])
    for i in range(len(TEXTS_A)):
        alone = _serve(exports["classifier", "int8"][1], TEXTS_A[i:i + 1], TEXTS_B[i:i + 1])
        worst = max(worst, _assert_within(alone["probabilities"][0], want[i], bound[i],
                                          f"request {i}"))
        if clear[i]:
            assert alone["label_id"][0] == float32["label_id"][i]
    print(f"classifier: worst |int8 - float32| / bound {worst:.3f}, largest |difference| "
          f"{np.abs(int8['probabilities'] - float32['probabilities']).max():.3g}, "
          f"largest weight shift {np.abs(shift).max():.3g}, largest bound {bound.max():.3g}")


def test_int8_features_within_quantization_bound_of_float32(setup):
    """The last encoder layer's vector at the first position ([CLS]) of every text, int8
    export against float32 export, within the derived bound, batch and one by one."""
    config, checkpoint, exports = setup
    float32 = _serve(exports["features", "float32"][1], TEXTS_A, TEXTS_B)
    int8 = _serve(exports["features", "int8"][1], TEXTS_A, TEXTS_B)
    np.testing.assert_array_equal(int8["input_ids"], float32["input_ids"])
    model = encoder = _mixed_model(config, checkpoint, head=False, policy="none")
    shift, bound = QuantizationBound(model, encoder,
                              lambda out: out["all_encoder_layers"][-1][:, 0])(
        _features(exports["features", "int8"][0]))
    want = float32["layers"][:, 0, 0] + shift
    worst = _assert_within(int8["layers"][:, 0, 0], want, bound, "batch")
    for i in range(len(TEXTS_A)):
        alone = _serve(exports["features", "int8"][1], TEXTS_A[i:i + 1], TEXTS_B[i:i + 1])
        worst = max(worst, _assert_within(alone["layers"][0, 0, 0], want[i], bound[i],
                                          f"request {i}"))
    print(f"features: worst |int8 - float32| / bound {worst:.3f}")


def test_stored_kernels_are_int8_of_round_w_over_scale(setup):
    """The int8 export stores each encoder Dense kernel once, as `<name>/int8` (int8, equal to
    clip(round(w / scale), -127, 127)) and `<name>/scale` (float32, max|w| / 127 per output
    column), with no float32 copy under `<name>`; every other weight (embeddings, LayerNorm,
    biases, the head) float32 and exact."""
    _, checkpoint, exports = setup
    original = tf.train.load_checkpoint(checkpoint)
    saved = tf.train.load_checkpoint(
        os.path.join(exports["classifier", "int8"][1], "variables", "variables"))
    dtypes = saved.get_variable_to_dtype_map()
    quantized = 0
    for name in original_variable_map(exports["classifier", "float32"][0].model):
        key = f"weights/{name}/.ATTRIBUTES/VARIABLE_VALUE"
        want = original.get_tensor(name)
        scopes = name.split("/")
        if scopes[0] == "bert" and scopes[-1] == "kernel" and "embeddings" not in scopes:
            assert key not in dtypes, name
            int8_key = f"weights/{name}/int8/.ATTRIBUTES/VARIABLE_VALUE"
            scale_key = f"weights/{name}/scale/.ATTRIBUTES/VARIABLE_VALUE"
            assert dtypes[int8_key] == tf.int8 and dtypes[scale_key] == tf.float32, name
            scale = saved.get_tensor(scale_key)
            np.testing.assert_array_equal(
                scale, (np.abs(want).max(axis=0) / np.float32(127)).astype(np.float32), name)
            got = saved.get_tensor(int8_key)
            np.testing.assert_array_equal(
                got, np.clip(np.round(want.astype(np.float64) / scale), -127, 127), name)
            # Each weight within half a step of its column's scale.
            assert np.all(np.abs(got * scale.astype(np.float64) - want) <= scale / 2 * (1 + 1e-6))
            quantized += 1
        else:
            assert dtypes[key] == tf.float32, name
            np.testing.assert_array_equal(saved.get_tensor(key), want, err_msg=name)
    layers = BertConfig.from_json_file(str(golden_path("model") / "bert_config.json"))
    assert quantized == 6 * layers.num_hidden_layers + 1  # 6 Dense per layer, the pooler
    originals = {f"weights/{n}/.ATTRIBUTES/VARIABLE_VALUE"
                 for n in original_variable_map(exports["classifier", "float32"][0].model)}
    extra = [k for k in dtypes if k.startswith("weights/") and k not in originals]
    assert len(extra) == 2 * quantized
    assert all("/kernel/int8/" in k or "/kernel/scale/" in k for k in extra), extra


def test_saved_model_cli_runs_the_int8_export(setup):
    """Plain `saved_model_cli run` in a fresh process loads and runs the int8 export, and its
    bert_tf_export.json says precision int8."""
    _, _, exports = setup
    path = str(exports["classifier", "int8"][1])
    with open(os.path.join(path, export.EXPORT_INFO_FILE)) as f:
        info = json.load(f)
    assert info["precision"] == "int8"
    assert info["precision_checked"] == ACCURACY_CHECKED["int8"]
    result = _saved_model_cli_run(path)
    assert "Result for output key probabilities" in result.stdout


def _xla_functions(path):
    """Names of the SavedModel's functions that must be compiled by XLA (jit_compile)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return [f.signature.name for graph in saved.meta_graphs
            for f in graph.graph_def.library.function
            if "_XlaMustCompile" in f.attr and f.attr["_XlaMustCompile"].b]


def test_only_int8_exports_hold_xla_functions_and_say_so(setup):
    """float32 and bfloat16 exports hold no XLA function (GELU built without XLA: TF Serving
    runs them as they are); an int8 export's Dense calls are XLA functions, and `python -m
    bert_tf.export` prints what a server needs for them (server_requirements)."""
    _, _, exports = setup
    for (task, precision), (_, path) in exports.items():
        with open(os.path.join(path, export.EXPORT_INFO_FILE)) as f:
            lines = export.server_requirements(json.load(f))
        if precision == "int8":
            assert _xla_functions(path), (task, precision)
            assert len(lines) == 1 and "--xla_cpu_compilation_enabled=true" in lines[0], lines
        else:
            assert _xla_functions(path) == [], (task, precision)
            assert lines == [], (task, precision)


def test_albert_int8_export_quantizes_every_encoder_kernel(tmp_path):
    """ALBERT's Dense layers sit in a dict of lists (its groups) and its embedding projection
    is a Dense of the encoder: every one of its kernels is stored as int8 + scale, none as
    float32, and the weights' table names each kernel of the float32 model once."""
    from albert_fixtures import CONFIG, SPM_MODEL
    from bert_tf.albert.config import AlbertConfig

    config = AlbertConfig(**CONFIG)  # the tiny ALBERT of the other ALBERT export tests
    tf.keras.utils.set_random_seed(5)
    model = BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size))
    prefix = save_original_checkpoint(model, tmp_path / "ckpt" / "model.ckpt")
    kernels = [n for n in original_variable_map(model)
               if n.endswith("/kernel") and n.startswith("bert/")]
    module, _ = export.build_export("classifier", config, prefix, SPM_MODEL, True,
                                    max_seq_length=32, labels=LABELS, precision="int8")
    def joined(nested, prefix=""):
        for key, value in nested.items():
            yield from (joined(value, f"{prefix}{key}/") if isinstance(value, dict)
                        else [f"{prefix}{key}"])
    names = set(joined(export.saved_weights(module.model)))
    assert kernels and not names & set(kernels)
    assert {f"{k}/int8" for k in kernels} | {f"{k}/scale" for k in kernels} <= names


def test_int8_dense_equals_a_float64_emulation_of_its_arithmetic():
    """bert_tf's `Dense` quantized in place (`quantize("int8")`) on rows of very different
    sizes against NumPy in float64: scale = max|w| / 127 per column, each row quantized with
    its own s = max|x_row| / 127 and rounded to nearest, y = (x8 @ W8) s scale + b. The
    integer sums are exact (int32), and so is their cast to float32 (48 products of at most
    127**2 < 2**24); what is left is float32's rounding of s, x / s (emulated in float32, so
    the same integers), and of the two products and the bias addition: at most 3 roundings of
    2**-24 relative to |x8 @ W8| s scale + |b|. (The bound
    tests above are loose by nature -- 6 sigma over thousands of errors -- and do not see a
    per-tensor scale or a floor for a round; this does.)"""
    from bert_tf.layers.dense import Dense

    rng = np.random.default_rng(3)
    dense = Dense(24)
    dense.build((None, 48))
    kernel = rng.normal(size=(48, 24)).astype(np.float32) * np.logspace(-2, 1, 24,
                                                                         dtype=np.float32)
    bias = rng.normal(size=24).astype(np.float32)
    dense.set_weights([kernel, bias])
    x = (rng.normal(size=(2, 5, 48)) * np.logspace(-3, 2, 5)[:, None]).astype(np.float32)
    dense.quantize("int8")
    assert dense.kernel is None and [v.dtype for v in dense.weights] == ["float32", "int8",
                                                                         "float32"]
    got = dense(tf.constant(x)).numpy().astype(np.float64)

    w8, scale = quantize_kernel(kernel)
    s = (np.abs(x).max(axis=-1, keepdims=True) / np.float32(INT8_MAX)).astype(np.float32)
    x8 = np.clip(np.round(x / s), -INT8_MAX, INT8_MAX).astype(np.float64)  # x / s in float32
    products = (x8 @ w8.astype(np.float64)) * s.astype(np.float64) * scale.astype(np.float64)
    want = products + bias
    bound = 3 * 2.0 ** -24 * (np.abs(products) + np.abs(bias))
    assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


def test_quantize_encoder_keeps_a_tracked_model_and_refuses_a_foreign_dense():
    """`quantize_encoder` quantizes the encoder's own Dense layers in place (the same layer
    objects, the model's weights and checkpoint table then hold int8 kernels + scales and no
    float kernel), so the model's own `checkpoint_variables()` name what the export saves; a
    keras.layers.Dense that is not bert_tf's (which would stay float32) is an error."""
    from bert_tf.bert.model import BertModel
    from bert_tf.training.int8 import quantize_encoder

    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=16)
    model = BertModel(config)
    ids = tf.constant([[1, 2, 3]])
    model({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)})
    query = model.encoder.blocks[0].self_attention.query
    float_names = set(original_variable_map(model))
    quantize_encoder(model)
    assert model.encoder.blocks[0].self_attention.query is query and query.quantized
    table = original_variable_map(model)  # checks that it names every weight of the model once
    kernels = {n for n in float_names if n.endswith("/kernel")}
    assert len(kernels) == 6 * 2 + 1 and not kernels & set(table)
    assert {f"{k}/int8" for k in kernels} | {f"{k}/scale" for k in kernels} <= set(table)
    assert all(table[f"{k}/int8"].dtype == "int8" for k in kernels)

    from bert_tf.layers.dense import Dense

    class Encoder(keras.Model):
        def __init__(self):
            super().__init__()
            self.ours, self.keras_dense = Dense(4), keras.layers.Dense(4)

        def call(self, x):
            return self.keras_dense(self.ours(x))

    encoder = Encoder()
    encoder(tf.ones([1, 4]))
    with pytest.raises(ValueError, match="Dense kernels not quantized"):
        quantize_encoder(encoder)
