"""extract_features against the original's recordings (tests/data/extract_features)."""

import collections
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bert_tf import feature_extraction as fe
from bert_tf.bert.tokenization import FullTokenizer
from conftest import SHARED_DIR, golden_path

DATA = Path(__file__).parent / "data" / "extract_features"
ROOT = Path(__file__).resolve().parents[1]
# The recording's flags (make_expected.MODEL_FLAGS).
GOLDEN_FLAGS = dict(layers="-2,0", max_seq_length=16, batch_size=2, do_lower_case=True)
# Forward-pass parity with the original on the golden model is about 2e-6 (float32 sums in
# another order); both sides then round to 6 decimals, which can move a value across a
# rounding boundary by one unit (1e-6) more. 1e-5 bounds both with margin, and is far below
# what a wrong weight, layer or token would give (values are of order 1).
VALUE_TOLERANCE = 1e-5


def _golden_options(tmp_path, **overrides):
    model = golden_path("model")
    values = dict(
        input_file=str(DATA / "model_input.txt"),
        output_file=str(tmp_path / "out.jsonl"),
        bert_config_file=str(model / "bert_config.json"),
        init_checkpoint=str(model / "bert_model.ckpt"),
        vocab_file=str(model / "vocab.txt"),
        **GOLDEN_FLAGS,
    )
    values.update(overrides)
    return fe.ExtractFeaturesOptions(**values)


def test_read_examples_equals_the_original():
    expected = json.loads((DATA / "read_convert_expected.json").read_text())
    examples = fe.read_examples(DATA / "read_lines.txt")
    assert [list(e) for e in examples] == expected["examples"]
    # The §3 rules, spelled out: the last separator splits, strip first, blank lines count.
    by_text = {e.text_a: e.text_b for e in examples}
    assert by_text["a ||| b"] == "c"
    assert by_text["x|||y"] is None
    assert by_text["p |||"] is None
    assert by_text[""] is None


def test_convert_examples_equals_the_original():
    expected = json.loads((DATA / "read_convert_expected.json").read_text())
    tokenizer = FullTokenizer(str(SHARED_DIR / "data" / "uncased_vocab.txt"), do_lower_case=True)
    examples = fe.read_examples(DATA / "read_lines.txt")
    for length_key, features_key in (("max_seq_length", "features"),
                                     ("short_max_seq_length", "short_features")):
        features = fe.convert_examples_to_features(examples, expected[length_key], tokenizer)
        got = [{"unique_id": f.unique_id, "tokens": f.tokens, "input_ids": f.input_ids,
                "input_mask": f.input_mask, "input_type_ids": f.input_type_ids}
               for f in features]
        assert got == expected[features_key]
    # At max_seq_length 4 the pair "a ||| b ||| c" keeps one piece of a and none of b.
    assert expected["short_features"][5]["tokens"] == ["[CLS]", "a", "[SEP]"]


@pytest.mark.slow
def test_output_equals_the_original_on_the_golden_model(tmp_path):
    options = _golden_options(tmp_path)
    assert fe.run_extract_features(options) == 5
    ours = (tmp_path / "out.jsonl").read_text().splitlines()
    theirs = (DATA / "golden_output.jsonl").read_text().splitlines()
    assert len(ours) == len(theirs)
    worst = 0.0
    for our_line, their_line in zip(ours, theirs):
        a = json.loads(our_line, object_pairs_hook=collections.OrderedDict)
        b = json.loads(their_line, object_pairs_hook=collections.OrderedDict)
        # Same text layout as the original (key order, separators, escapes).
        assert json.dumps(a) == our_line
        assert list(a) == list(b) == ["linex_index", "features"]
        assert a["linex_index"] == b["linex_index"]
        assert [f["token"] for f in a["features"]] == [f["token"] for f in b["features"]]
        for fa, fb in zip(a["features"], b["features"]):
            assert list(fa) == ["token", "layers"]
            assert [layer["index"] for layer in fa["layers"]] == [-2, 0]
            assert [layer["index"] for layer in fb["layers"]] == [-2, 0]
            for la, lb in zip(fa["layers"], fb["layers"]):
                assert list(la) == ["index", "values"] and len(la["values"]) == 48
                diff = np.abs(np.array(la["values"]) - np.array(lb["values"])).max()
                worst = max(worst, diff)
    assert worst <= VALUE_TOLERANCE
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_writer_reproduces_the_original_lines_byte_for_byte():
    """Values of the recording, fed back as float32, are written exactly as the original did
    (a float32 is within 5e-7 of each recorded 6-decimal value, so rounding gives it back)."""
    for line in (DATA / "golden_output.jsonl").read_text().splitlines():
        record = json.loads(line)
        tokens = [f["token"] for f in record["features"]]
        indexes = [layer["index"] for layer in record["features"][0]["layers"]]
        values = np.array([[layer["values"] for layer in f["layers"]]
                           for f in record["features"]], np.float32).transpose(1, 0, 2)
        assert fe.json_line(record["linex_index"], tokens, indexes, values) == line


def _python_rows(values):
    return [", ".join(json.dumps(round(float(x), 6)) for x in row) for row in values]


def test_value_text_equals_python_round_and_json():
    rng = np.random.RandomState(0)
    parts = [rng.normal(0, s, 4000) for s in (1e-6, 1e-4, 1e-2, 1.0, 30.0, 1e5)]
    grid = np.arange(-300, 300) * 1e-6
    thousandths = np.arange(-3000, 3000) * 1e-3  # decimals ending in 000 or 0
    special = [0.0, -0.0, 1e-7, -1e-7, 0.1234565, 2.5e-6, -2.5e-6, 5e-7, -5e-7, 1.5e-6, 9.95e-5,
               1e-4, -1e-4, 9.9999e-5, 0.5, 1.0, -1.0, 123456.7, 999999999.0, 1e9, -3e10,
               np.float32(np.finfo(np.float32).max), np.nan, np.inf, -np.inf,
               np.float32(np.finfo(np.float32).tiny), 1e-45, 999.0, 999.9994, 999.9995,
               -999.9996, 1000.0, 100.5, 10.000001]
    values = np.concatenate(parts + [grid, grid + 5e-7, grid - 5e-7, thousandths, special]).astype(np.float32)
    values = values[: len(values) // 16 * 16].reshape(-1, 16)
    assert fe.format_value_rows(values) == _python_rows(values)


def test_json_line_equals_json_dumps_of_the_original_structure():
    rng = np.random.RandomState(1)
    tokens = ["[CLS]", "caf\u00e9", "\u529b", '"q"', "back\\slash", "[SEP]"]
    indexes = [-1, 0, 3]
    values = rng.normal(0, 1, (3, len(tokens), 5)).astype(np.float32)
    expected = collections.OrderedDict(linex_index=7, features=[
        collections.OrderedDict(token=t, layers=[
            collections.OrderedDict(index=idx, values=[round(float(x), 6) for x in values[j, i]])
            for j, idx in enumerate(indexes)])
        for i, t in enumerate(tokens)])
    assert fe.json_line(7, tokens, indexes, values) == json.dumps(expected)


@pytest.mark.parametrize("layers, message", [
    ("-1,x", "entry 'x' is not an integer"),
    ("-1,-4", "layer -4 does not exist; the model has 3 encoder layers"),
    ("3", "layer 3 does not exist"),
    ("", "entry '' is not an integer"),
])
def test_bad_layers(tmp_path, layers, message):
    with pytest.raises(fe.FeatureExtractionError, match="--layers=.*" + message):
        fe.run_extract_features(_golden_options(tmp_path, layers=layers))


def test_default_layers_parse():
    assert fe.parse_layer_indexes("-1,-2,-3,-4", 12) == [-1, -2, -3, -4]
    assert fe.parse_layer_indexes("0, 11", 12) == [0, 11]


def test_missing_input_file(tmp_path):
    options = _golden_options(tmp_path, input_file=str(tmp_path / "nope.txt"))
    with pytest.raises(fe.FeatureExtractionError, match=r"--input_file=.*nope.txt: no such file"):
        fe.run_extract_features(options)


def test_input_line_not_utf8(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(fe.FeatureExtractionError, match="in.txt line 2: not valid UTF-8"):
        fe.read_examples(path)


def test_max_seq_length_above_position_table(tmp_path):
    with pytest.raises(fe.FeatureExtractionError,
                       match="--max_seq_length=65: the model has only max_position_embeddings=64"):
        fe.run_extract_features(_golden_options(tmp_path, max_seq_length=65))


def test_checkpoint_of_another_shape(tmp_path):
    config = json.loads(golden_path("model", "bert_config.json").read_text())
    config["hidden_size"] = 32
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    options = _golden_options(tmp_path, bert_config_file=str(tmp_path / "bert_config.json"))
    with pytest.raises(fe.FeatureExtractionError,
                       match=r"(?s)--init_checkpoint=.*bert_model.ckpt: .*expected shape"):
        fe.run_extract_features(options)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow
def test_command_line_error_is_one_line(tmp_path):
    model = golden_path("model")
    result = subprocess.run(
        [sys.executable, str(ROOT / "extract_features.py"),
         f"--input_file={DATA / 'model_input.txt'}", f"--output_file={tmp_path / 'o.jsonl'}",
         f"--vocab_file={model / 'vocab.txt'}", f"--bert_config_file={model / 'bert_config.json'}",
         f"--init_checkpoint={model / 'bert_model.ckpt'}"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(
        "extract_features.py: error: --layers='-1,-2,-3,-4': layer -4 does not exist")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_empty_and_blank_inputs(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    options = _golden_options(tmp_path, input_file=str(tmp_path / "empty.txt"))
    assert fe.run_extract_features(options) == 0
    assert (tmp_path / "out.jsonl").read_text() == ""
    (tmp_path / "blank.txt").write_text("\n\n")
    options = _golden_options(tmp_path, input_file=str(tmp_path / "blank.txt"))
    assert fe.run_extract_features(options) == 2
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [[f["token"] for f in line["features"]] for line in lines] == [["[CLS]", "[SEP]"]] * 2


@pytest.mark.slow
def test_bf16_and_mirrored_strategy(tmp_path):
    import tensorflow as tf

    fe.run_extract_features(_golden_options(tmp_path))
    reference = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    options = _golden_options(tmp_path, mixed_precision="bf16")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    fe.run_extract_features(options, strategy)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    for ours, ref in zip(lines, reference, strict=True):
        assert [f["token"] for f in ours["features"]] == [f["token"] for f in ref["features"]]
        for fa, fb in zip(ours["features"], ref["features"]):
            for la, lb in zip(fa["layers"], fb["layers"]):
                # bfloat16 keeps 8 significant bits: values of order 1 move by a few 1e-2.
                assert np.abs(np.array(la["values"]) - np.array(lb["values"])).max() < 0.25


def test_damaged_init_checkpoint_is_one_line(tmp_path):
    """Issue 18: --init_checkpoint cut short."""
    from bert_tf import BertConfig, BertModel
    from bert_tf.checkpoints import save_original_checkpoint
    from conftest import tiny_config_dict

    config = BertConfig.from_dict(tiny_config_dict())
    prefix = str(tmp_path / "bert_model.ckpt")
    save_original_checkpoint(BertModel(config), prefix)
    data = prefix + ".data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) // 2)
    with pytest.raises(fe.FeatureExtractionError) as err:
        fe.build_model(config, prefix)
    assert str(err.value).startswith(f"--init_checkpoint={prefix}: checkpoint {prefix} is "
                                     f"damaged: {data} (")
    assert "is cut short" in str(err.value) and "\n" not in str(err.value)


class _CountingModel:
    """A BertModel that adds the positions (batch x length) of every call to `positions`."""

    def __init__(self, model):
        import tensorflow as tf

        self.model = model
        self.config = model.config
        self.positions = tf.Variable(0, dtype=tf.int64)

    def __call__(self, inputs, training=False):
        import tensorflow as tf

        self.positions.assign_add(tf.size(inputs["input_ids"], out_type=tf.int64))
        return self.model(inputs, training=training)


def _varied_lines(path, count=37):
    """`count` lines of 1 to ~50 words of sample_text.txt, a third of them pairs."""
    words = (SHARED_DIR / "data" / "sample_text.txt").read_text(encoding="utf-8").split()
    lines = []
    for i in range(count):
        n = 1 + (i * 17) % 50
        text = " ".join(words[i * 7:i * 7 + n])
        lines.append(f"{text} ||| {' '.join(words[i:i + 3])}" if i % 3 == 0 else text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_sorted_batches_cut_to_their_length_give_the_padded_output(tmp_path):
    """Lines sorted by length in windows, each batch cut to its longest (rounded up to 16):
    the same JSON lines in the same order as every batch at max_seq_length in input order,
    for fewer positions. Padding adds exact zeros to every sum, but the kernels of another
    shape may sum a row's dot products in another order: a few float32 ulps (2**-24 relative)
    per layer, at the scale of the line's largest value (each layer ends in a LayerNorm of the
    whole row). 1e-6 x that scale (16 ulps) bounds it, and rounding to 6 decimals moves a value
    by one unit more."""
    from bert_tf.bert.config import BertConfig
    from bert_tf.training import padding

    _varied_lines(tmp_path / "in.txt")
    options = _golden_options(tmp_path, input_file=str(tmp_path / "in.txt"),
                              max_seq_length=64, batch_size=4)
    config = BertConfig.from_json_file(options.bert_config_file)
    tokenizer = FullTokenizer(options.vocab_file)
    features = fe.convert_examples_to_features(fe.read_examples(options.input_file), 64,
                                               tokenizer)
    lengths = [len(f.tokens) for f in features]
    assert min(lengths) < 8 and max(lengths) > 48
    model = _CountingModel(fe.build_model(config, options.init_checkpoint))
    layers = [-1, 0]
    values_per_token = len(layers) * config.hidden_size

    def run(**kwargs):
        model.positions.assign(0)
        out = list(fe.extract_layers(model, features, layers, 4, **kwargs))
        assert [f.unique_id for f, _ in out] == list(range(len(features)))
        return [v for _, v in out], int(model.positions.numpy())

    padded, padded_positions = run(dynamic_padding=False)
    assert padded_positions == 64 * len(features)
    # Windows of about 12 lines (3 batches): several, the last one shorter.
    window_bytes = 4 * values_per_token * sum(lengths) * 12 / len(lengths)
    for kwargs in ({}, {"window_bytes": window_bytes}):
        got, positions = run(**kwargs)
        order = fe.inference_order(features, 4, values_per_token, True,
                                   kwargs.get("window_bytes", fe.SORT_WINDOW_BYTES))
        expected_positions = sum(
            len(order[b:b + 4]) * padding.padded_length(max(lengths[i] for i in order[b:b + 4]),
                                                        64)
            for b in range(0, len(order), 4))
        assert positions == expected_positions < 0.7 * padded_positions
        for a, b in zip(got, padded, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, atol=_tolerance(b), rtol=0)
    windowed = fe.inference_order(features, 4, values_per_token, True, window_bytes)
    whole = fe.inference_order(features, 4, values_per_token)
    assert sorted(windowed) == sorted(whole) == list(range(len(features)))
    assert list(windowed) != list(whole)  # the windows sort apart
    assert [lengths[i] for i in whole] == sorted(lengths, reverse=True)

    # The script's JSON: the same lines, byte for byte where the rounding agrees.
    fe.run_extract_features(options)
    sorted_lines = (tmp_path / "out.jsonl").read_text().splitlines()
    fe.run_extract_features(dataclasses.replace(options, dynamic_padding=False))
    padded_lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(sorted_lines) == len(padded_lines) == len(features)
    for a, b, values in zip(sorted_lines, padded_lines, padded):
        a, b = json.loads(a), json.loads(b)
        assert a["linex_index"] == b["linex_index"]
        assert [f["token"] for f in a["features"]] == [f["token"] for f in b["features"]]
        for fa, fb in zip(a["features"], b["features"]):
            for la, lb in zip(fa["layers"], fb["layers"]):
                assert la["index"] == lb["index"]
                np.testing.assert_allclose(la["values"], lb["values"],
                                           atol=_tolerance(values) + 1e-6 + 1e-9, rtol=0)


def _tolerance(values):
    """1e-6 at the scale of a line's values (see the test above)."""
    return 1e-6 * max(1.0, float(np.abs(values).max()))


def test_albert_checkpoint_and_sentencepiece_model(tmp_path):
    """An ALBERT checkpoint (albert_config.json as Google ships it, without model_type) with its
    SentencePiece model as --vocab_file: the pieces are the family tokenizer's (preprocess_text,
    then SentencePiece) and the values its encoder's; --layers counts the L * inner_group_num
    block outputs (8 here, for L=4 and 2 inner blocks)."""
    import tensorflow as tf

    from bert_tf import checkpoints
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.model import AlbertModel
    from bert_tf.albert.tokenization import AlbertTokenizer

    spm_model = Path(__file__).parent / "data" / "albert_spm" / "albert.model"
    config = AlbertConfig(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                          num_hidden_groups=2, inner_group_num=2, num_attention_heads=2,
                          intermediate_size=32, max_position_embeddings=32)
    model = AlbertModel(config)
    prefix = checkpoints.save_original_checkpoint(model, tmp_path / "model.ckpt-best",
                                                  update_state=False)
    google_style = config.to_dict()
    del google_style["model_type"]
    (tmp_path / "albert_config.json").write_text(json.dumps(google_style))
    lines = ["Hello  World, 1,000 Cafés ||| Second  sentence.", "ÅNGSTRÖM naïve"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = fe.ExtractFeaturesOptions(
        input_file=str(tmp_path / "in.txt"), output_file=str(tmp_path / "out.jsonl"),
        bert_config_file=str(tmp_path / "albert_config.json"), init_checkpoint=str(prefix),
        vocab_file=str(spm_model), layers="-1,0,7", max_seq_length=32, batch_size=2,
        do_lower_case=True)
    assert fe.run_extract_features(options) == 2
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    tokenizer = AlbertTokenizer(str(spm_model), do_lower_case=True)
    for row, line in zip(rows, lines):
        parts = line.split(" ||| ")
        pieces = [tokenizer.tokenize(p) for p in parts]
        want_tokens = ["[CLS]", *pieces[0], "[SEP]"] + ([*pieces[1], "[SEP]"] if len(parts) > 1 else [])
        assert [f["token"] for f in row["features"]] == want_tokens
        ids = tokenizer.convert_tokens_to_ids(want_tokens)
        segments = [0] * (len(pieces[0]) + 2) + [1] * (len(want_tokens) - len(pieces[0]) - 2)
        outputs = model({"input_ids": tf.constant([ids]), "input_mask": tf.ones([1, len(ids)], tf.int32),
                         "segment_ids": tf.constant([segments])})
        for index in (-1, 0, 7):
            got = np.array([[layer["values"] for layer in f["layers"] if layer["index"] == index][0]
                            for f in row["features"]])
            want = outputs["all_encoder_layers"][index][0].numpy()
            np.testing.assert_allclose(got, want, rtol=0, atol=VALUE_TOLERANCE)
    # preprocess_text ran: lower-cased, accents (combining marks after NFKD) dropped.
    text = "".join(f["token"] for row in rows for f in row["features"][1:]
                   if f["token"] != "[SEP]")
    assert text == text.lower() and not set("éåöï") & set(text)
    with pytest.raises(fe.FeatureExtractionError, match="layer 8 does not exist; the model has 8"):
        fe.run_extract_features(dataclasses.replace(options, layers="8"))
