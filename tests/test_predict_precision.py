"""`--predict_precision` of the prediction runs (run_classifier.py, extract_features.py; the
Trainer's `prediction_model` serves run_tagging.py and run_squad.py the same way) and
`--precision=auto` / `--predict_precision=auto` (bert_tf.training.precision.resolve_precision).

bfloat16 predictions are checked against the float32 ones of the same checkpoint (the golden
tiny model with a random classifier head) within tests/rounding_bounds.py's bound, derived from
the arithmetic as in tests/test_export_precision.py (its module docstring): the sensitivities
are those of the traced graph of the same checkpoint under Keras' mixed_bfloat16 policy, whose
arithmetic is that of the model `build_at_precision` makes for bfloat16 op for op (the Dense
weights' round to nearest even as Cast ops), with the embedding tables, which that model stores
in bfloat16 and the stand-in reads in float32, counted as weights stored rounded
(`rounded_variables`), so the bound is that of the function the run computes.
"""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import families
from bert_tf import feature_extraction as fe
from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import (load_original_checkpoint, original_variable_map,
                                 save_original_checkpoint)
from bert_tf.layers.heads import ClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.serving import export
from bert_tf.tasks.classification import ClassifierOptions, run
from bert_tf.training import cpu_features, precision
from bert_tf.training.trainer import TrainingError
from conftest import golden_path
from rounding_bounds import RoundingErrorBounds, assert_within_bounds

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ["neg", "pos", "mixed"]
MAX_SEQ_LENGTH = 32
PAIRS = [("the man went to the store", "it was closed"), ("he bought a gallon of milk", ""),
         ("", "penguins are flightless birds"), ("a " * 12, "b c"),
         ("Unbelievable café, naïve!", "x y")]
# CPUs as cpu_features reads them: with and without native bfloat16.
BF16_CPU = cpu_features.CpuInfo("Fake Sapphire Rapids", frozenset(
    {"avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}))
AVX2_CPU = cpu_features.CpuInfo("Fake EPYC", frozenset({"avx2", "fma"}))
# extract_features writes round(x, 6): each side is within 5e-7 of its float32 value.
JSON_ROUNDING = 1e-6


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """(config, vocab file, classifier checkpoint prefix, data dir with test.tsv)."""
    model_dir = golden_path("model")
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    root = tmp_path_factory.mktemp("predict_precision")
    tf.keras.utils.set_random_seed(100)
    model = BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size))
    load_original_checkpoint(model, str(model_dir / "bert_model.ckpt"))
    checkpoint = save_original_checkpoint(model, root / "ckpt" / "model.ckpt")
    data = root / "data"
    data.mkdir()
    (data / "test.tsv").write_text(
        "text_a\ttext_b\n" + "".join(f"{a}\t{b}\n" for a, b in PAIRS), encoding="utf-8")
    return config, str(model_dir / "vocab.txt"), checkpoint, data


def _classifier_options(golden, output_dir, **overrides):
    _, vocab_file, checkpoint, data = golden
    return ClassifierOptions(
        data_dir=str(data), task_name="custom", labels=",".join(LABELS), vocab_file=vocab_file,
        init_checkpoint=checkpoint, output_dir=str(output_dir), max_seq_length=MAX_SEQ_LENGTH,
        predict_batch_size=2, **overrides)


def _predict(golden, output_dir, **overrides):
    """test_results.tsv's bytes and probabilities [N, C] of a --do_predict run."""
    out = run(golden[0], _classifier_options(golden, output_dir, **overrides), do_predict=True)
    text = open(out["test_results"], "rb").read()
    rows = [[float(x) for x in line.split("\t")] for line in text.decode().splitlines()]
    return text, np.array(rows)


def _records(path):
    """{input_ids, input_mask, segment_ids}: int32 [N, MAX_SEQ_LENGTH] of a records file."""
    spec = {k: tf.io.FixedLenFeature([MAX_SEQ_LENGTH], tf.int64)
            for k in ("input_ids", "input_mask", "segment_ids")}
    rows = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(str(path))]
    return {k: tf.cast(tf.stack([r[k] for r in rows]), tf.int32) for k in spec}


def _mixed_model(build, checkpoint):
    """`build()` under mixed_bfloat16 (float32 variables cast to bfloat16 in the graph) with
    the checkpoint's weights: the bfloat16 model's arithmetic, its Dense weights' roundings as
    ops (not its embedding tables': `RoundingErrorBounds(..., rounded_variables=...)`)."""
    with precision.dtype_policy("bf16"):
        model = build()
    load_original_checkpoint(model, checkpoint)
    return model


@pytest.mark.slow  # three prediction runs and a traced bound: ~15 s
def test_classifier_bfloat16_predictions_within_rounding_bound_of_float32(golden, tmp_path,
                                                                         monkeypatch):
    """run_classifier.py --do_predict: bfloat16 probabilities within the derived bound of the
    float32 run's; labels agree wherever float32's margin exceeds both bounds; auto on a CPU
    with native bfloat16 is the bfloat16 run byte for byte."""
    config, _, checkpoint, _ = golden
    _, float32 = _predict(golden, tmp_path / "float32")
    bf16_text, bf16 = _predict(golden, tmp_path / "bfloat16", predict_precision="bfloat16")
    features = _records(tmp_path / "bfloat16" / "predict.tf_record")
    mixed = _mixed_model(
        lambda: BertTaskModel(config, ClassifierHead(len(LABELS), config.hidden_size)),
        checkpoint)
    bound = RoundingErrorBounds(lambda x: mixed(x, training=False), "bfloat16",
                                mixed.bert.embeddings.tables)(
        features, ("probabilities",))["probabilities"]
    # test_results.tsv holds str(np.float32): the shortest text that reads back as the same
    # float32, so the values compared are the runs' own.
    worst = assert_within_bounds(bf16, float32, bound, "--predict_precision=bfloat16")
    assert np.any(bf16 != float32), "bfloat16 predictions equal float32's: not bfloat16?"
    top2 = np.sort(float32, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * bound.max(axis=-1)
    np.testing.assert_array_equal(bf16.argmax(-1)[clear], float32.argmax(-1)[clear])
    print(f"classifier: worst |bf16 - float32| / bound {worst:.3f}")

    monkeypatch.setattr(cpu_features, "read_cpu_info", lambda *a: BF16_CPU)
    auto_text, _ = _predict(golden, tmp_path / "auto", predict_precision="auto")
    assert auto_text == bf16_text


@pytest.mark.slow  # four prediction runs: ~12 s
def test_default_prediction_is_the_trained_float32_model(golden, tmp_path, monkeypatch):
    """The default (and float32, and auto on a CPU without native bfloat16) predicts with the
    trainer's own model, as before --predict_precision existed: no second model is built,
    and the runs' files are the same bytes."""
    from bert_tf.tasks.classification import ClassificationTask
    from bert_tf.training.trainer import Trainer

    config = golden[0]
    default_text, _ = _predict(golden, tmp_path / "default")
    float32_text, _ = _predict(golden, tmp_path / "float32", predict_precision="float32")
    monkeypatch.setattr(cpu_features, "read_cpu_info", lambda *a: AVX2_CPU)
    auto_text, _ = _predict(golden, tmp_path / "auto", predict_precision="auto")
    assert default_text == float32_text == auto_text
    for name in ("float32", "auto"):
        options = _classifier_options(golden, tmp_path / "t", predict_precision=name)
        trainer = Trainer(config, ClassificationTask("custom", LABELS, MAX_SEQ_LENGTH), options)
        assert trainer.prediction_model() is trainer.model


@pytest.mark.slow  # two extract_features runs and a traced bound: ~15 s
def test_extract_features_bfloat16_within_rounding_bound_of_float32(golden, tmp_path):
    """extract_features.py --predict_precision=bfloat16: the last layer's vectors at the first
    two positions of every line within the derived bound of float32's (plus the JSON's
    rounding to 6 decimals), through the same `build_at_precision` as the export."""
    config, vocab_file, checkpoint, _ = golden
    lines = tmp_path / "in.txt"
    lines.write_text("".join(f"{a} ||| {b}\n" if b else f"{a}\n" for a, b in PAIRS),
                     encoding="utf-8")
    values = {}
    for name in ("float32", "bfloat16"):
        options = fe.ExtractFeaturesOptions(
            input_file=str(lines), output_file=str(tmp_path / f"{name}.jsonl"),
            bert_config_file=str(golden_path("model") / "bert_config.json"),
            init_checkpoint=checkpoint, vocab_file=vocab_file, layers="-1",
            max_seq_length=MAX_SEQ_LENGTH, batch_size=2, predict_precision=name)
        fe.run_extract_features(options)
        rows = [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        values[name] = np.array([[f["layers"][0]["values"] for f in row["features"][:2]]
                                 for row in rows])  # [N, 2, H]
    tokenizer = families.make_tokenizer(config, vocab_file, True)
    examples = fe.read_examples(str(lines))
    features = fe.convert_examples_to_features(examples, MAX_SEQ_LENGTH, tokenizer)
    inputs = {k: tf.constant([getattr(f, field) for f in features], tf.int32)
              for k, field in (("input_ids", "input_ids"), ("input_mask", "input_mask"),
                               ("segment_ids", "input_type_ids"))}
    encoder = _mixed_model(lambda: families.build_encoder(config), checkpoint)
    bound = RoundingErrorBounds(
        lambda x: {"head": encoder(x, training=False)["all_encoder_layers"][-1][:, :2]},
        "bfloat16", encoder.embeddings.tables)(inputs, ("head",))["head"]
    worst = assert_within_bounds(values["bfloat16"], values["float32"], bound + JSON_ROUNDING,
                                 "extract_features --predict_precision=bfloat16")
    assert np.any(values["bfloat16"] != values["float32"])
    print(f"features: worst |bf16 - float32| / bound {worst:.3f}")


def test_unknown_predict_precision_is_refused_in_one_line(golden, tmp_path):
    with pytest.raises(TrainingError, match=r"^--predict_precision='int4': expected one of "
                                            r"float32, bfloat16, auto$"):
        _classifier_options(golden, tmp_path, predict_precision="int4").validate(golden[0])
    # int8 is built for exports only (bert_tf.training.precision.PREDICT_PRECISIONS).
    with pytest.raises(TrainingError, match=r"^--predict_precision='int8': expected one of "
                                            r"float32, bfloat16, auto$"):
        _classifier_options(golden, tmp_path, predict_precision="int8").validate(golden[0])
    with pytest.raises(fe.FeatureExtractionError,
                       match=r"^--predict_precision='fp8': expected one of float32, bfloat16, "
                             r"auto$"):
        fe.check_predict_precision("fp8", "none")
    with pytest.raises(fe.FeatureExtractionError, match="--mixed_precision=bf16: choose one"):
        fe.check_predict_precision("bfloat16", "bf16")


@pytest.mark.slow  # one script run (~8 s)
def test_script_refuses_an_unknown_predict_precision_in_one_line(golden, tmp_path):
    config, vocab_file, checkpoint, data = golden
    proc = subprocess.run(
        [sys.executable, "run_classifier.py", "--task_name=custom", f"--data_dir={data}",
         f"--vocab_file={vocab_file}",
         f"--bert_config_file={golden_path('model') / 'bert_config.json'}",
         f"--init_checkpoint={checkpoint}", f"--output_dir={tmp_path}/out", "--do_predict",
         f"--max_seq_length={MAX_SEQ_LENGTH}", "--labels=neg,pos,mixed",
         "--predict_precision=half"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO))
    assert proc.returncode == 1
    errors = [x for x in proc.stderr.splitlines() if x.startswith("run_classifier.py")]
    assert errors == ["run_classifier.py: error: --predict_precision='half': expected one of "
                      "float32, bfloat16, auto"], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("cpu, want", [(BF16_CPU, "bfloat16"), (AVX2_CPU, "float32"),
                                       (cpu_features.CpuInfo(None, None), "float32")])
def test_auto_is_what_the_cpu_runs_natively(cpu, want, caplog):
    """auto: bfloat16 where the flags show AVX512_BF16 or AMX-BF16, else (flags unknown
    included) float32, in one log line naming the flags and the choice; a concrete precision
    passes unchanged and unlogged."""
    with caplog.at_level(logging.INFO, logger="absl"):  # whatever level an earlier test set
        assert precision.resolve_precision("auto", "--precision", cpu) == want
    lines = [r.getMessage() for r in caplog.records if "--precision=auto" in r.getMessage()]
    assert lines == [f"--precision=auto: {want}, the fastest precision this CPU runs natively "
                     f"({cpu.describe()})"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="absl"):  # whatever level an earlier test set
        for name in ("float32", "bfloat16", "int8"):
            assert precision.resolve_precision(name, "--precision", cpu) == name
    assert not caplog.records


@pytest.mark.slow  # ~5 s each: an export built and saved
@pytest.mark.parametrize("cpu, want", [(BF16_CPU, "bfloat16"), (AVX2_CPU, "float32")])
def test_export_auto_records_the_concrete_precision(cpu, want, golden, tmp_path, monkeypatch):
    """`python -m bert_tf.export --precision=auto` builds at the CPU's choice and writes it,
    not "auto", to bert_tf_export.json."""
    config, vocab_file, checkpoint, _ = golden
    monkeypatch.setattr(cpu_features, "read_cpu_info", lambda *a: cpu)
    module, info = export.build_export("classifier", config, checkpoint, vocab_file,
                                       max_seq_length=MAX_SEQ_LENGTH, labels=LABELS,
                                       precision="auto")
    assert info["precision"] == want
    kernel = original_variable_map(module.model)["bert/encoder/layer_0/attention/self/query/kernel"]
    assert kernel.dtype == want
    path = export.save_export(module, info, tmp_path / "export")
    assert json.loads((tmp_path / "export" / export.EXPORT_INFO_FILE).read_text())[
        "precision"] == want
    assert os.path.isdir(path)
