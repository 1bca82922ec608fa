"""`python -m bert_tf.export --precision=bfloat16`: the encoder's Dense weights stored and
multiplied in bfloat16, everything else float32, checked against the float32 export of the same
checkpoint (the golden tiny model with a random classifier head).

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
counted --, bfloat16 matmuls, bias adds and activations, float32 embeddings, LayerNorm, softmax
and head), so the bound is that of exactly the function the export computes.
"""

import os
import subprocess
import sys

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
from bert_tf.training.precision import dtype_policy
from conftest import golden_path
from rounding_bounds import RoundingErrorBounds, assert_within_bounds

pytestmark = pytest.mark.slow  # four exports saved (~15 s), two bounds traced
MAX_SEQ_LENGTH = 64  # one-by-one requests run at 16 positions, the batch at 48
LABELS = ["neg", "pos", "mixed"]
TEXTS_A = ["the man went to the store", "he bought a gallon of milk", "", "a " * 40,
           "Unbelievable café, naïve!"]
TEXTS_B = ["it was closed", "", "penguins are flightless birds", "b \u0301 c", "x\u00a0y"]
# The Dense layers the bfloat16 export stores in bfloat16 (original names' last scopes).
BF16_SCOPES = ("query", "key", "value", "dense")
# The exports this file compares (int8: tests/test_export_int8.py).
PRECISIONS = ("float32", "bfloat16")


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


def _mixed_model(config, checkpoint, head=True):
    """The checkpoint under Keras' mixed_bfloat16 policy (float32 variables cast to bfloat16
    in the graph): the export's arithmetic with the weights' roundings as graph ops."""
    with dtype_policy("bf16"):
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
    bound = RoundingErrorBounds(lambda x: mixed(x, training=False), "bfloat16")(
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
        "bfloat16")(features, ("head",))["head"]
    worst = assert_within_bounds(bf16["layers"][:, :2, 0], float32["layers"][:, :2, 0], bound,
                                 "bfloat16 features")
    print(f"features: worst |bf16 - float32| / bound {worst:.3f}")


def _round_to_nearest_even(values):
    """float32 -> the nearest bfloat16 (ties to even), as float32, by bit arithmetic."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_stored_dense_weights_are_bfloat16_rounded_to_nearest_even(setup):
    """The bfloat16 export stores the encoder's Dense kernels and biases as bfloat16, each the
    checkpoint's float32 value rounded to nearest even; embeddings, LayerNorm and the head stay
    float32 and exact. The variables' file shrinks by exactly 2 bytes per bfloat16 weight."""
    _, checkpoint, exports = setup
    original = tf.train.load_checkpoint(checkpoint)
    sizes = {}
    for precision in PRECISIONS:
        path = exports["classifier", precision][1]
        prefix = os.path.join(path, "variables", "variables")
        saved = tf.train.load_checkpoint(prefix)
        dtypes = saved.get_variable_to_dtype_map()
        halved = 0
        for name, _ in original_variable_map(exports["classifier", "float32"][0].model).items():
            key = f"weights/{name}/.ATTRIBUTES/VARIABLE_VALUE"
            want = original.get_tensor(name)
            scopes = name.split("/")
            is_dense = len(scopes) > 1 and scopes[-2] in BF16_SCOPES
            if precision == "bfloat16" and is_dense:
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
    assert sizes["bfloat16"][1] > 0
    assert sizes["float32"][0] - sizes["bfloat16"][0] == 2 * sizes["bfloat16"][1]


def test_saved_model_cli_runs_the_bfloat16_export(setup):
    """Plain `saved_model_cli run` in a fresh process loads and runs the bfloat16 export."""
    _, _, exports = setup
    path = str(exports["classifier", "bfloat16"][1])
    command = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "run", "--dir",
               path, "--tag_set", "serve", "--signature_def", "serving_default",
               "--input_exprs", f"text_a={TEXTS_A[:2]!r};text_b={TEXTS_B[:2]!r}"]
    result = subprocess.run(command, capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Result for output key probabilities" in result.stdout
    assert "Result for output key label_id" in result.stdout


def test_unknown_precision_is_a_clear_error(setup):
    config, checkpoint, _ = setup
    with pytest.raises(export.ExportError, match="--precision='int4': expected one of"):
        export.build_export("classifier", config, checkpoint,
                            str(golden_path("model") / "vocab.txt"), labels=LABELS,
                            precision="int4")
