"""bert_tf.hf: Hub snapshots in (forward equal to a NumPy reference of Transformers' BERT and
ALBERT), out, round trips bit for bit both ways, tokenizer files, and every untrusted-file case
refused in one line with nothing written. No torch, no transformers: snapshots are built by
tests/hub_fixtures.py; tests/data/albert_hub holds ALBERT snapshots Transformers saved, with its
outputs."""

import json
import os
import pickle
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import hub_fixtures as hub
from bert_tf import BertModel, BertTaskModel, FullTokenizer
from bert_tf import families
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.albert.pretraining import AlbertPretrainingModel
from bert_tf.albert.tokenization import AlbertTokenizer
from bert_tf.bert import hub_names
from bert_tf.bert.config import BertConfig
from bert_tf.bert.pretraining import BertPretrainingModel
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.hf import HubError, names
from bert_tf.hf.convert import export_checkpoint, import_snapshot
from bert_tf.hf.safetensors_io import SafetensorsFile
from bert_tf.hf.tokenizer_files import casing_from_folder_name, read_settings
from bert_tf.hf.torch_zip import read_state_dict
from bert_tf.layers.heads import ClassifierHead, SpanHead, TokenClassifierHead
from conftest import SHARED_DIR, tiny_config_dict

LABELS = ["pos", "neg", "neu"]  # not sorted: the id order must survive
CASES = {
    # id: (architecture, weights file, hub_state_dict options, config.json overrides)
    "bare": ("BertModel", "safetensors", {}, {}),
    "bare-prefixed-gamma-beta": ("BertModel", "bin", dict(prefix="bert.", old_layer_norm_names=True),
                                 {}),
    "bare-no-pooler": ("BertModel", "safetensors", dict(pooler=False), {}),
    "pretraining-bin-buffers-tied": ("BertForPreTraining", "bin",
                                     dict(buffers=True, tied_decoder=True), {}),
    "masked-lm-sharded": ("BertForMaskedLM", "sharded", {}, dict(hidden_act="gelu_new")),
    "classifier-eps": ("BertForSequenceClassification", "safetensors", {},
                       dict(layer_norm_eps=1e-3, id2label=dict(enumerate(LABELS)))),
    "qa-bin-sharded-gamma-beta": ("BertForQuestionAnswering", "bin_sharded",
                                  dict(old_layer_norm_names=True), {}),
    "tagging-relu": ("BertForTokenClassification", "safetensors", {},
                     dict(hidden_act="relu", id2label={str(i): x for i, x in enumerate(LABELS)})),
}
INPUT_IDS = np.array([[2, 5, 6, 7, 3, 8, 9, 10, 3, 0], [2, 11, 12, 3, 13, 3, 0, 0, 0, 0]])
SEGMENT_IDS = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]])
INPUT_MASK = (INPUT_IDS > 0).astype(np.int32)
POSITIONS = np.array([[1, 3, 6], [2, 4, 1]])


def build(tmp_path, case):
    arch, weights, options, overrides = CASES[case]
    config = hub.hub_config(arch, **overrides)
    tensors = hub.hub_state_dict(config, **options)
    folder = hub.write_snapshot(str(tmp_path / f"hub-{case}"), config, tensors, weights=weights)
    return config, tensors, folder


def checkpoint_tensors(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def assert_same_checkpoint(prefix, again, left_out=()):
    """The checkpoint `again` holds the tensors of checkpoint `prefix` bit for bit, less its
    global_step and the names `left_out` (a head the export does not carry)."""
    original = {n: v for n, v in checkpoint_tensors(prefix).items()
                if n != "global_step" and n not in left_out}
    back = checkpoint_tensors(again)
    assert sorted(back) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def inputs():
    return {"input_ids": INPUT_IDS, "input_mask": INPUT_MASK, "segment_ids": SEGMENT_IDS,
            "masked_lm_positions": POSITIONS}


@pytest.mark.parametrize("case", list(CASES))
def test_imported_forward_equals_transformers_reference(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    arch = config["architectures"][0]
    ref = hub.reference_outputs(config, tensors, INPUT_IDS, SEGMENT_IDS, INPUT_MASK.astype(float))
    if arch == "BertModel":
        out = BertModel.from_pretrained(folder)(inputs())
    elif arch in ("BertForPreTraining", "BertForMaskedLM"):
        import_snapshot(folder, tmp_path / "google")
        model = BertPretrainingModel(BertConfig.from_json_file(tmp_path / "google/bert_config.json"))
        load_original_checkpoint(model, tmp_path / "google")
        out = model(inputs())
        mlm = np.take_along_axis(ref["mlm_logits"], POSITIONS[..., None], axis=1)
        np.testing.assert_allclose(out["mlm_log_probs"].numpy(),
                                   hub.log_softmax(mlm).reshape(-1, mlm.shape[-1]), atol=1e-5)
        if "nsp_logits" in ref:
            np.testing.assert_allclose(out["nsp_log_probs"].numpy(),
                                       hub.log_softmax(ref["nsp_logits"]), atol=1e-5)
    else:
        model = BertTaskModel.from_pretrained(folder)
        out = model(inputs())
        for key in ("logits", "start_logits", "end_logits"):
            if key in ref:
                np.testing.assert_allclose(out[key].numpy(), ref[key], atol=1e-5)
    real = INPUT_MASK.astype(bool)  # Transformers' padded positions are not compared
    np.testing.assert_allclose(out["sequence_output"].numpy()[real], ref["sequence_output"][real],
                               atol=1e-5)
    if "pooled_output" in ref:
        np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=1e-5)


def test_the_activation_and_epsilon_are_part_of_the_model(tmp_path):
    """The mapping is checked, not assumed: the same weights under the other GELU, or the
    default epsilon, are more than 10 times outside the tolerance (1e-5) the forward test
    uses."""
    config, tensors, folder = build(tmp_path, "classifier-eps")
    import_snapshot(folder, tmp_path / "google")
    saved = json.loads((tmp_path / "google/bert_config.json").read_text())
    assert saved["hidden_act"] == "gelu_exact" and saved["layer_norm_eps"] == 1e-3
    ref = hub.reference_outputs(config, tensors, INPUT_IDS, SEGMENT_IDS, INPUT_MASK.astype(float))
    for change in (dict(hidden_act="gelu_new"), dict(layer_norm_eps=1e-12)):
        other = hub.reference_outputs(dict(config, **change), tensors, INPUT_IDS, SEGMENT_IDS,
                                      INPUT_MASK.astype(float))
        assert np.abs(other["logits"] - ref["logits"]).max() > 1e-4


@pytest.mark.parametrize("case", list(CASES))
def test_export_of_import_gives_the_snapshot_tensors_back(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    arch = config["architectures"][0]
    import_snapshot(folder, tmp_path / "google")
    export_checkpoint(tmp_path / "google", tmp_path / "google/bert_config.json",
                      tmp_path / "google/vocab.txt", tmp_path / "back")
    back = SafetensorsFile(tmp_path / "back/model.safetensors")
    got = back.read_all()
    # What the export cannot give back, by design: buffers and the tied decoder (named on
    # import), today's LayerNorm names, and the prefix convention of the class.
    expected = {}
    for name, value in tensors.items():
        bare = name.removeprefix("bert.")
        if bare in hub_names.LEFT_OUT:
            continue
        name = names.normalize_name(name)
        if arch == "BertModel":
            name = name.removeprefix("bert.")
        expected[name] = value
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert back.entries[name] == ("F32", value.shape), name
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    hub_config = json.loads((tmp_path / "back/config.json").read_text())
    assert hub_config["architectures"] == [arch]
    assert hub_config["hidden_act"] == config["hidden_act"]
    assert hub_config["layer_norm_eps"] == config["layer_norm_eps"]
    if "id2label" in config:
        assert hub_config["id2label"] == {str(i): x for i, x in enumerate(LABELS)}
        assert hub_config["label2id"] == {x: i for i, x in enumerate(LABELS)}
    assert (tmp_path / "back/vocab.txt").read_bytes() == (tmp_path / "google/vocab.txt").read_bytes()


def random_model(kind, config):
    """A model of `kind` (pretraining, encoder or a fine-tuning head) for `config`, every
    weight drawn (normal 0.5, seed 1)."""
    if kind == "pretraining":
        pretraining = {"albert": AlbertPretrainingModel}.get(config.model_type,
                                                             BertPretrainingModel)
        model = pretraining(config)
    elif kind == "encoder":
        model = families.build_encoder(config)
    else:
        head = {"classifier": ClassifierHead(3, config.hidden_size),
                "squad": SpanHead(config.hidden_size),
                "tagging": TokenClassifierHead(4, config.hidden_size)}[kind]
        model = BertTaskModel(config, head)
    rng = np.random.default_rng(1)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.5, variable.shape).astype(np.float32))
    return model


@pytest.mark.parametrize("kind,act,eps", [
    ("pretraining", "gelu", None), ("classifier", "gelu_exact", 1e-5), ("squad", "relu", None),
    ("tagging", "gelu", None), ("encoder", "gelu", 1e-7)])
def test_import_of_export_gives_the_checkpoint_back(tmp_path, kind, act, eps):
    overrides = dict(vocab_size=len(hub.VOCAB), hidden_act=act)
    if eps is not None:
        overrides["layer_norm_eps"] = eps
    config = BertConfig.from_dict(tiny_config_dict(**overrides))
    model = random_model(kind, config)
    run_dir = tmp_path / "run"
    prefix = save_original_checkpoint(
        model, run_dir / "model.ckpt-7", global_step=7,
        optimizer_state={"adam_m": {"bert/pooler/dense/bias": np.ones(16, np.float32)}})
    (run_dir / "vocab.txt").write_text("".join(t + "\n" for t in hub.VOCAB))
    labels = {"classifier": ["b", "a", "c"], "tagging": ["O", "B-X", "I-X", "B-Y"]}.get(kind)
    if labels:
        (run_dir / "task.json").write_text(json.dumps({"task": kind, "labels": labels}))
    result = export_checkpoint(prefix, run_dir / "bert_config.json", run_dir / "vocab.txt",
                               tmp_path / "hub", do_lower_case=False)
    assert any("global_step" in line for line in result.report)
    assert any("optimizer slots (adam_m)" in line for line in result.report)
    hub_config = json.loads((tmp_path / "hub/config.json").read_text())
    assert hub_config["hidden_act"] == names.ACTIVATION_TO_HUB[act]
    if labels:
        assert hub_config["id2label"] == {str(i): x for i, x in enumerate(labels)}
    settings = json.loads((tmp_path / "hub/tokenizer_config.json").read_text())
    assert settings["do_lower_case"] is False

    import_snapshot(tmp_path / "hub", tmp_path / "google")
    original = checkpoint_tensors(prefix)
    original = {n: v for n, v in original.items() if n != "global_step" and "adam_m" not in n}
    again = checkpoint_tensors(tmp_path / "google/bert_model.ckpt")
    assert sorted(again) == sorted(original)
    for name, value in original.items():
        assert again[name].dtype == value.dtype == np.float32
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    assert BertConfig.from_json_file(tmp_path / "google/bert_config.json") == config
    if labels:
        task = json.loads((tmp_path / "google/task.json").read_text())
        assert task["labels"] == labels


# --- tokenizer --------------------------------------------------------------------------------

TEXTS = ["Hello world, the cats sat!", "Über naïve models ran unable?", "the dog's park é"]


def test_tokenizer_from_imported_vocab_equals_the_original(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    import_snapshot(folder, tmp_path / "google")
    original = FullTokenizer(os.path.join(folder, "vocab.txt"), do_lower_case=True)
    for source in (folder, tmp_path / "google"):
        tokenizer = FullTokenizer.from_pretrained(source)
        assert tokenizer.do_lower_case is True
        for text in TEXTS:
            assert tokenizer.tokenize_to_ids(text) == original.tokenize_to_ids(text)


def _tokenizer_json_only(tmp_path, tokens, name="json-only", **kwargs):
    config = hub.hub_config("BertModel", vocab_size=len(tokens))
    tensors = hub.hub_state_dict(config)
    return hub.write_snapshot(str(tmp_path / name), config, tensors, tokens=tokens,
                              tokenizer=("json",), **kwargs)


def test_tokenizer_json_only_snapshot_gives_the_same_vocab(tmp_path):
    folder = _tokenizer_json_only(tmp_path, hub.VOCAB)
    result = import_snapshot(folder, tmp_path / "google")
    assert any("tokenizer.json (model.vocab)" in line for line in result.report)
    expected = "".join(t + "\n" for t in hub.VOCAB).encode()
    assert (tmp_path / "google/vocab.txt").read_bytes() == expected
    # max_input_chars_per_word 100 (Transformers') against the original's 200 is reported.
    assert any("max_input_chars_per_word=100" in line for line in result.report)
    a = FullTokenizer.from_pretrained(folder)
    b = FullTokenizer.from_pretrained(tmp_path / "google")
    assert [a.tokenize_to_ids(t) for t in TEXTS] == [b.tokenize_to_ids(t) for t in TEXTS]


def test_tokenizer_json_of_the_real_uncased_vocab(tmp_path):
    vocab_file = SHARED_DIR / "data" / "uncased_vocab.txt"
    if not vocab_file.exists():
        pytest.skip(f"{vocab_file} is absent (../shared comes with CI, not with a clone)")
    tokens = vocab_file.read_text(encoding="utf-8").split("\n")[:-1]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(hub.tokenizer_json(tokens), ensure_ascii=False), encoding="utf-8")
    from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
    from bert_tf.hf.tokenizer_files import vocab_from_tokenizer_json, vocab_text

    tokens = vocab_from_tokenizer_json(path, WORDPIECE_SPECIAL_TOKENS)
    assert vocab_text(tokens) == vocab_file.read_bytes()


def test_tokenizer_files_take_the_family_tokens(tmp_path):
    """tokenizer.json's continuation prefix and unknown token must be the family's; the
    exported special_tokens_map.json / tokenizer_config.json name the family's tokens."""
    import dataclasses

    from bert_tf.hf.tokenizer_files import (vocab_from_tokenizer_json,
                                            write_hub_tokenizer_files)

    wordpiece = hub_names.SPECIAL_TOKENS
    path = tmp_path / "tokenizer.json"

    def write(**model):
        model = {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##a": 2}, **model}
        path.write_text(json.dumps({"model": model}), encoding="utf-8")

    write(continuing_subword_prefix="##", unk_token="[UNK]")
    assert vocab_from_tokenizer_json(path, wordpiece) == ["[UNK]", "a", "##a"]
    write(continuing_subword_prefix="@@")
    with pytest.raises(HubError, match="tokenizer.json: model.continuing_subword_prefix is "
                                       "'@@'; the original tokenizer uses '##'"):
        vocab_from_tokenizer_json(path, wordpiece)
    write(unk_token="<unk>")
    with pytest.raises(HubError, match="model.unk_token is '<unk>'.*uses '\\[UNK\\]'"):
        vocab_from_tokenizer_json(path, wordpiece)
    assert len(vocab_from_tokenizer_json(path, dataclasses.replace(wordpiece, unk="<unk>"))) == 3

    out = tmp_path / "out"
    out.mkdir()
    write_hub_tokenizer_files(str(out), b"[UNK]\n", True, 512, "BertTokenizer", wordpiece)
    expected = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "cls_token": "[CLS]", "mask_token": "[MASK]"}
    assert json.loads((out / "special_tokens_map.json").read_text()) == expected
    config = json.loads((out / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "BertTokenizer"
    assert {k: config[k] for k in expected} == expected


def test_tokenizer_settings_are_found_and_unsupported_ones_warned(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "strip_accents": False, "tokenize_chinese_chars": False,
         "never_split": ["[X]"]}))
    do_lower_case, notes, warnings = read_settings(str(tmp_path))
    assert do_lower_case is True and "tokenizer_config.json" in notes[0]
    text = "\n".join(warnings)
    assert "strip_accents=False" in text and "tokenize_chinese_chars=False" in text
    assert "never_split" in text
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert read_settings(str(tmp_path))[:2] == (False, [f"do_lower_case=False "
                                                        f"({tmp_path}/tokenizer_config.json)"])
    assert casing_from_folder_name("/m/uncased_L-12_H-768_A-12") is True
    assert casing_from_folder_name("/m/multi_cased_L-12_H-768_A-12/") is False
    assert casing_from_folder_name("/m/my-model") is None
    # A cased snapshot gives a cased tokenizer: "Hello" is not lower-cased into "hello".
    folder = _tokenizer_json_only(tmp_path, hub.VOCAB, name="cased",
                                  tokenizer_config={"do_lower_case": False})
    assert FullTokenizer.from_pretrained(folder).tokenize("Hello") == ["[UNK]"]


def test_a_tokenizer_json_that_is_not_wordpiece_is_refused(tmp_path):
    folder = _tokenizer_json_only(tmp_path, hub.VOCAB)
    data = json.loads(open(os.path.join(folder, "tokenizer.json")).read())
    data["model"]["type"] = "BPE"
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(data, f)
    with pytest.raises(HubError, match=r"tokenizer.json: model type 'BPE', expected WordPiece"):
        import_snapshot(folder, tmp_path / "google")
    assert not (tmp_path / "google").exists()


# --- untrusted and malformed files --------------------------------------------------------------


def one_line_error(folder, output_dir, *fragments):
    with pytest.raises(HubError) as info:
        import_snapshot(folder, output_dir)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert not os.path.exists(output_dir)
    assert not [n for n in os.listdir(os.path.dirname(output_dir)) if ".tmp-" in n]
    return message


@pytest.mark.parametrize("module,name", [("posix", "system"), ("os", "system"),
                                         ("builtins", "exec")])
def test_a_pickle_calling_a_command_is_refused_and_nothing_runs(tmp_path, module, name):
    config, tensors, folder = build(tmp_path, "bare")
    os.remove(os.path.join(folder, "model.safetensors"))
    marker = tmp_path / "pwned"
    payload = (f"touch {marker}" if name == "system"
               else f"open({str(marker)!r}, 'w').close()")
    bin_path = os.path.join(folder, "pytorch_model.bin")
    hub.write_torch_zip(bin_path, tensors, extra_global=(module, name, payload))
    one_line_error(folder, str(tmp_path / "out"), bin_path, f"global {module}.{name}")
    assert not marker.exists()
    # The control: the payload is in the pickle (an unrestricted unpickler would call it).
    import zipfile

    with zipfile.ZipFile(bin_path) as z:
        data = z.read("pytorch_model/data.pkl")
    assert b"c" + module.encode() + b"\n" + name.encode() in data


def test_torch_zip_views_byte_order_and_bfloat16(tmp_path):
    """What torch.save writes beyond one contiguous storage per tensor: tensors sharing a
    storage (a tied decoder), views at an offset or transposed, big-endian files, bfloat16."""
    rng = np.random.default_rng(0)
    storage = rng.normal(size=12).astype(np.float32)
    tensors = {
        "embeddings": hub.StorageView("0", storage, 0, (4, 3), (3, 1)),
        "decoder": hub.StorageView("0", storage, 0, (4, 3), (3, 1)),
        "transposed": hub.StorageView("0", storage, 0, (3, 4), (1, 3)),
        "slice": hub.StorageView("0", storage, 5, (2, 3), (3, 1)),
        "ids": np.arange(5, dtype=np.int64)[None],
    }
    for order in ("little", "big", None):
        path = tmp_path / f"{order}.bin"
        hub.write_torch_zip(path, tensors, byteorder=order)
        got = read_state_dict(path)
        assert list(got) == list(tensors)
        np.testing.assert_array_equal(got["embeddings"], storage.reshape(4, 3))
        np.testing.assert_array_equal(got["decoder"], storage.reshape(4, 3))
        np.testing.assert_array_equal(got["transposed"], storage.reshape(4, 3).T)
        np.testing.assert_array_equal(got["slice"], storage[5:11].reshape(2, 3))
        assert got["ids"].dtype == np.int64 and got["ids"].tolist() == [[0, 1, 2, 3, 4]]
    bf16 = np.array([1.0, -2.5, 0.15625, 2.0**127], np.float32)  # exact in bfloat16
    path = tmp_path / "bf16.bin"
    hub.write_torch_zip(path, {"w": hub.StorageView("0", bf16, 0, (4,), (1,))},
                        storage_names={"0": "BFloat16Storage"},
                        storage_bytes={"0": (bf16.view(np.uint32) >> 16).astype("<u2").tobytes()})
    np.testing.assert_array_equal(read_state_dict(path)["w"], bf16)
    path = tmp_path / "overrun.bin"
    hub.write_torch_zip(path, {"w": hub.StorageView("0", storage, 8, (2, 3), (3, 1))})
    with pytest.raises(HubError, match=r"overrun.bin: a tensor of size \[2, 3\], stride \[3, 1\] "
                                       r"at offset 8 overruns its storage of 12 elements"):
        read_state_dict(path)
    hub.write_torch_zip(path, {"w": hub.StorageView("0", storage, 0, (10**6, 10**6), (0, 0))})
    with pytest.raises(HubError, match=r"size \[1000000, 1000000\] is larger than its storage"):
        read_state_dict(path)
    expanded = hub.StorageView("0", np.arange(6, dtype=np.int64), 0, (1, 6), (0, 1))
    hub.write_torch_zip(path, {"position_ids": expanded})  # as Transformers' buffer
    assert read_state_dict(path)["position_ids"].tolist() == [[0, 1, 2, 3, 4, 5]]


def test_bfloat16_safetensors_are_widened_exactly(tmp_path):
    values = np.array([[1.0, -2.5], [0.15625, 2.0**127]], np.float32)
    path = tmp_path / "bf16.safetensors"
    data = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    _raw_safetensors(path, {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}},
                     data + np.float32(7).tobytes())
    got = SafetensorsFile(path).read_all()
    np.testing.assert_array_equal(got["w"], values)
    assert got["b"].tolist() == [7.0]


def test_a_legacy_torch_file_is_refused_in_one_line(tmp_path):
    config, tensors, folder = build(tmp_path, "bare")
    os.remove(os.path.join(folder, "model.safetensors"))
    bin_path = os.path.join(folder, "pytorch_model.bin")
    with open(bin_path, "wb") as f:
        pickle.dump(0x1950A86A20F9469CFC6C, f, protocol=2)
    one_line_error(folder, str(tmp_path / "out"), bin_path, "legacy (PyTorch < 1.6)")


def _raw_safetensors(path, header, data=b""):
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data)


def test_malformed_safetensors_give_one_line_errors(tmp_path):
    config, tensors, folder = build(tmp_path, "bare")
    path = os.path.join(folder, "model.safetensors")
    word = "embeddings.word_embeddings.weight"
    out = str(tmp_path / "out")

    with open(path, "wb") as f:
        f.write(struct.pack("<Q", 10**9) + b"{}")
    one_line_error(folder, out, path, "header length 1000000000 overruns the file")

    _raw_safetensors(path, {word: {"dtype": "F32", "shape": [37, 16],
                                   "data_offsets": [0, 37 * 16 * 4]}}, b"\0" * 100)
    one_line_error(folder, out, path, f"tensor {word}", "overrun the data section")

    _raw_safetensors(path, {word: {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}},
                     b"\0\0")
    one_line_error(folder, out, path, f"tensor {word}", "dtype 'F8_E4M3' is not one we convert")

    from safetensors.numpy import save_file

    save_file(dict(tensors, **{word: tensors[word].astype(np.int32)}), path)
    one_line_error(folder, out, path, f"tensor {word}", "dtype int32, expected a float weight")

    save_file(tensors, path)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(config, vocab_size=40), f)
    one_line_error(folder, out, path, f"tensor {word}", "shape [37, 16], config.json says [40, 16]")


def test_half_precision_weights_are_widened_exactly(tmp_path):
    config = hub.hub_config("BertModel")
    tensors = hub.hub_state_dict(config)
    half = {n: v.astype(np.float16) for n, v in tensors.items()}
    folder = hub.write_snapshot(str(tmp_path / "half"), config, half)
    import_snapshot(folder, tmp_path / "google")
    got = checkpoint_tensors(tmp_path / "google/bert_model.ckpt")
    np.testing.assert_array_equal(got["bert/embeddings/word_embeddings"],
                                  half["embeddings.word_embeddings.weight"].astype(np.float32))


@pytest.mark.parametrize("key,value,fragment", [
    ("model_type", "distilbert", "model_type 'distilbert' has no Hugging Face Hub names here "
                                 "(only model_type 'bert', 'albert', 'roberta', "
                                 "'xlm-roberta' convert"),
    # A family of bert_tf without a Hub name table (no hub_names module) is refused too.
    ("model_type", "electra", "model_type 'electra' has no Hugging Face Hub names here"),
    ("position_embedding_type", "relative_key", "position_embedding_type 'relative_key'"),
    ("hidden_act", "silu", "hidden_act 'silu' has no equivalent"),
    ("architectures", ["BertForMultipleChoice"], "architectures ['BertForMultipleChoice']"),
])
def test_configs_without_an_equivalent_are_refused(tmp_path, key, value, fragment):
    config, tensors, folder = build(tmp_path, "bare")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(config, **{key: value}), f)
    one_line_error(folder, str(tmp_path / "out"), os.path.join(folder, "config.json"), fragment)


def test_tensors_that_cannot_be_placed_are_refused(tmp_path):
    config = hub.hub_config("BertForPreTraining")
    tensors = hub.hub_state_dict(config, tied_decoder=True)
    tensors["cls.predictions.decoder.weight"] = tensors["cls.predictions.decoder.weight"] + 1
    folder = hub.write_snapshot(str(tmp_path / "untied"), config, tensors)
    one_line_error(folder, str(tmp_path / "out"), "cls.predictions.decoder.weight differs",
                   "untied")
    tensors = hub.hub_state_dict(config)
    tensors["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = np.zeros(
        (39, 4), np.float32)
    folder = hub.write_snapshot(str(tmp_path / "extra"), config, tensors)
    one_line_error(folder, str(tmp_path / "out"), "distance_embedding.weight is not a weight of "
                   "BertForPreTraining", "refusing to drop it")


def test_a_non_empty_output_dir_is_refused_and_kept(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    with pytest.raises(HubError, match="exists and is not an empty folder"):
        import_snapshot(folder, out)
    assert os.listdir(out) == ["mine.txt"]


# --- the command lines: import, run_classifier.py on the import, export of its checkpoint ------

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, tmp_path):
    proc = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                                PYTHONPATH=REPO))
    return proc


def _classifier_features(tokenizer, text_a, text_b, max_seq_length):
    tokens = ["[CLS]"] + tokenizer.tokenize(text_a) + ["[SEP]"]
    segments = [0] * len(tokens)
    b = tokenizer.tokenize(text_b) + ["[SEP]"]
    tokens += b
    segments += [1] * len(b)
    ids = tokenizer.convert_tokens_to_ids(tokens)
    pad = max_seq_length - len(ids)
    return ids + [0] * pad, segments + [0] * pad, [1] * len(ids) + [0] * pad


@pytest.mark.slow  # four scripts in subprocesses, one of them trains: ~75 s at load 10 on 2 cores
def test_run_classifier_fine_tunes_an_imported_snapshot_and_exports_back(tmp_path):
    config, tensors, folder = build(tmp_path, "classifier-eps")
    google, hub_out = tmp_path / "google", tmp_path / "hub-out"
    proc = _run(["-m", "bert_tf.hf", "import", f"--hf_dir={folder}", f"--output_dir={google}"],
                tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "architecture: BertForSequenceClassification" in proc.stdout
    data = tmp_path / "data"
    data.mkdir()
    words = hub.WORDS[:12]
    rng = np.random.default_rng(0)
    rows = [(" ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 3)), LABELS[i % 3])
            for i in range(8)]
    (data / "train.tsv").write_text("text_a\ttext_b\tlabel\n"
                                    + "".join("\t".join(r) + "\n" for r in rows))
    (data / "test.tsv").write_text("text_a\ttext_b\n"
                                   + "".join("\t".join(r[:2]) + "\n" for r in rows[:5]))
    common = ["run_classifier.py", "--task_name=custom", f"--data_dir={data}",
              f"--vocab_file={google}/vocab.txt", f"--bert_config_file={google}/bert_config.json",
              f"--init_checkpoint={google}/bert_model.ckpt", "--max_seq_length=12",
              "--predict_batch_size=2"]

    # Prediction with the imported head: the probabilities of Transformers' model, in the
    # snapshot's label order (task.json), with no --labels flag.
    proc = _run(common + [f"--output_dir={tmp_path}/predict", "--do_predict"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    tokenizer = FullTokenizer(str(google / "vocab.txt"), do_lower_case=True)
    feats = np.array([_classifier_features(tokenizer, a, b, 12) for a, b, _ in rows[:5]])
    ref = hub.reference_outputs(config, tensors, feats[:, 0], feats[:, 1],
                                feats[:, 2].astype(float))
    expected = np.exp(hub.log_softmax(ref["logits"]))
    got = np.loadtxt(tmp_path / "predict/test_results.tsv", delimiter="\t")
    np.testing.assert_allclose(got, expected, atol=1e-5)

    proc = _run(common + [f"--output_dir={tmp_path}/train", "--do_train",
                          "--train_batch_size=4", "--num_train_epochs=1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "train/task.json").read_text())["labels"] == LABELS

    proc = _run(["-m", "bert_tf.hf", "export", f"--checkpoint={tmp_path}/train",
                 f"--bert_config_file={google}/bert_config.json",
                 f"--vocab_file={google}/vocab.txt", f"--output_dir={hub_out}"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "left out global_step (2)" in proc.stdout
    exported = json.loads((hub_out / "config.json").read_text())
    assert exported["architectures"] == ["BertForSequenceClassification"]
    assert exported["id2label"] == {str(i): x for i, x in enumerate(LABELS)}
    assert exported["hidden_act"] == "gelu" and exported["layer_norm_eps"] == 1e-3
    # No --do_lower_case: the imported folder's tokenizer_config.json (beside the vocab) says.
    assert json.loads((hub_out / "tokenizer_config.json").read_text())["do_lower_case"] is True
    trained = checkpoint_tensors(tmp_path / "train/model.ckpt-2")
    weights = SafetensorsFile(hub_out / "model.safetensors").read_all()
    np.testing.assert_array_equal(weights["classifier.weight"], trained["output_weights"])
    np.testing.assert_array_equal(weights["bert.encoder.layer.1.output.dense.weight"],
                                  trained["bert/encoder/layer_1/output/dense/kernel"].T)
    assert not np.array_equal(weights["classifier.weight"], tensors["classifier.weight"])



def test_cli_flags_of_the_other_verb_are_refused_in_one_line(tmp_path):
    proc = _run(["-m", "bert_tf.hf", "export", f"--hf_dir={tmp_path}",
                 f"--output_dir={tmp_path}/out"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "bert_tf.hf: error: --hf_dir does not apply to export"
    proc = _run(["-m", "bert_tf.hf", "import", f"--output_dir={tmp_path}/out"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "bert_tf.hf: error: import needs --hf_dir"


def test_the_bridge_finds_a_familys_hub_names_through_the_registry(tmp_path):
    """BERT's (ALBERT's, RoBERTa's) table is its package's hub_names module; ELECTRA has none,
    so exporting an ELECTRA checkpoint is refused in one line naming the config file."""
    assert families.hub_names("bert") is hub_names
    assert families.hub_names("electra") is None and families.hub_names("xlnet") is None
    config = BertConfig.from_dict(dict(
        vocab_size=len(hub.VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=20, type_vocab_size=2,
        initializer_range=0.02, model_type="electra"))
    folder = tmp_path / "electra"
    save_original_checkpoint(families.build_encoder(config), str(folder / "bert_model.ckpt"))
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(hub.VOCAB) + "\n")
    with pytest.raises(HubError, match=r"bert_config.json: model_type 'electra' has no Hugging "
                                       r"Face Hub names here \(only model_type 'bert', 'albert', "
                                       r"'roberta', 'xlm-roberta' convert\)"):
        export_checkpoint(str(folder), str(folder / "bert_config.json"), str(vocab),
                          str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


# --- ALBERT -----------------------------------------------------------------------------------


ALBERT_HUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "albert_hub")
ALBERT_CASES = {
    # id: (architecture, weights file, albert_state_dict options, config.json overrides)
    "pretraining-bin-buffers-tied": ("AlbertForPreTraining", "bin",
                                     dict(buffers=True, tied_decoder=True), {}),
    "masked-lm-sharded": ("AlbertForMaskedLM", "sharded", {}, {}),
    "classifier-e-equals-h-gelu-eps": (
        "AlbertForSequenceClassification", "safetensors", {},
        dict(embedding_size=16, num_hidden_groups=3, inner_group_num=1, hidden_act="gelu",
             layer_norm_eps=1e-5, id2label=dict(enumerate(LABELS)))),
    "qa-relu": ("AlbertForQuestionAnswering", "safetensors", {}, dict(hidden_act="relu")),
    "tagging": ("AlbertForTokenClassification", "bin_sharded", {},
                dict(id2label={str(i): x for i, x in enumerate(LABELS)})),
    "bare-default-act": ("AlbertModel", "safetensors", {}, dict(hidden_act=None)),
    # More groups than layers: Transformers' groups 1 and 3 run at no layer.
    "bare-sparse-groups": ("AlbertModel", "safetensors", {},
                           dict(num_hidden_layers=2, num_hidden_groups=4, inner_group_num=1)),
}
ALBERT_INPUT_IDS = np.array([[2, 15, 48, 120, 3, 201, 77, 1500, 3, 0],
                             [2, 33, 9, 3, 640, 3, 0, 0, 0, 0]])


def albert_inputs():
    return {"input_ids": ALBERT_INPUT_IDS, "input_mask": INPUT_MASK, "segment_ids": SEGMENT_IDS,
            "masked_lm_positions": POSITIONS}


def build_albert(tmp_path, case):
    arch, weights, options, overrides = ALBERT_CASES[case]
    config = hub.albert_hub_config(arch, **overrides)
    config = {k: v for k, v in config.items() if v is not None}  # None: left to the default
    tensors = hub.albert_state_dict(config, **options)
    folder = hub.write_snapshot(str(tmp_path / f"albert-{case}"), config, tensors,
                                weights=weights, spiece_model=hub.ALBERT_SPM)
    return dict(config, hidden_act=config.get("hidden_act", "gelu_new")), tensors, folder


def _albert_forward(tmp_path, arch, folder):
    if arch == "AlbertModel":
        return AlbertModel.from_pretrained(folder)(albert_inputs())
    if arch in ("AlbertForPreTraining", "AlbertForMaskedLM"):
        import_snapshot(folder, tmp_path / "google")
        model = AlbertPretrainingModel(AlbertConfig.from_json_file(
            tmp_path / "google/albert_config.json"))
        load_original_checkpoint(model, tmp_path / "google")
        return model(albert_inputs())
    return BertTaskModel.from_pretrained(folder)(albert_inputs())


def _compare(out, ref):
    real = INPUT_MASK.astype(bool)
    np.testing.assert_allclose(out["sequence_output"].numpy()[real],
                               ref["sequence_output"][real], atol=1e-5)
    if "pooled_output" in ref:
        np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=1e-5)
    if "mlm_logits" in ref:
        mlm = np.take_along_axis(ref["mlm_logits"], POSITIONS[..., None], axis=1)
        np.testing.assert_allclose(out["mlm_log_probs"].numpy(),
                                   hub.log_softmax(mlm).reshape(-1, mlm.shape[-1]), atol=1e-5)
    if "sop_logits" in ref:
        np.testing.assert_allclose(out["nsp_log_probs"].numpy(),
                                   hub.log_softmax(ref["sop_logits"]), atol=1e-5)
    for key in ("logits", "start_logits", "end_logits"):
        if key in ref:
            np.testing.assert_allclose(out[key].numpy(), ref[key], atol=1e-5)


@pytest.mark.parametrize("case", list(ALBERT_CASES))
def test_albert_imported_forward_equals_transformers_reference(tmp_path, case):
    config, tensors, folder = build_albert(tmp_path, case)
    arch = config["architectures"][0]
    ref = hub.albert_reference_outputs(config, tensors, ALBERT_INPUT_IDS, SEGMENT_IDS,
                                       INPUT_MASK.astype(float))
    _compare(_albert_forward(tmp_path, arch, folder), ref)


def test_albert_reference_depends_on_the_group_layout():
    """The reference is not blind to the sharing: the same weights run by one layer fewer (layer
    2 on group 1 alone) or one inner block fewer are far outside the forward test's tolerance."""
    config = hub.albert_hub_config("AlbertModel")
    tensors = hub.albert_state_dict(config)
    args = (ALBERT_INPUT_IDS, SEGMENT_IDS, INPUT_MASK.astype(float))
    ref = hub.albert_reference_outputs(config, tensors, *args)["sequence_output"]
    for change in (dict(num_hidden_layers=2), dict(inner_group_num=1)):
        other = hub.albert_reference_outputs(dict(config, **change), tensors, *args)
        assert np.abs(other["sequence_output"] - ref).max() > 1e-2


@pytest.mark.parametrize("case", list(ALBERT_CASES))
def test_albert_export_of_import_gives_the_snapshot_tensors_back(tmp_path, case):
    config, tensors, folder = build_albert(tmp_path, case)
    arch = config["architectures"][0]
    result = import_snapshot(folder, tmp_path / "google")
    assert sorted(os.listdir(tmp_path / "google")) == sorted([
        "albert_config.json", "model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001",
        "spiece.model", "tokenizer_config.json", "hf_import.json"]
        + (["task.json"] if "id2label" in config else []))
    assert (tmp_path / "google/spiece.model").read_bytes() == open(hub.ALBERT_SPM, "rb").read()
    assert families.read_config(tmp_path / "google/albert_config.json").model_type == "albert"
    # No vocab or config flag: albert_config.json and spiece.model beside the checkpoint.
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    got = SafetensorsFile(tmp_path / "back/model.safetensors").read_all()
    unused_groups = "sparse" in case
    expected = {}
    for name, value in tensors.items():
        if name.removeprefix("albert.") in ("embeddings.position_ids",
                                            "predictions.decoder.weight",
                                            "predictions.decoder.bias"):
            continue
        if unused_groups and any(f"albert_layer_groups.{g}." in name for g in (1, 3)):
            value = np.zeros_like(value)  # computes nothing: left out, written back as zeros
        expected[name] = value
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    if unused_groups:
        assert any("albert_layer_groups.1.albert_layers.0.ffn.weight: num_hidden_groups=4 > "
                   "num_hidden_layers=2" in line for line in result.report)
    hub_config = json.loads((tmp_path / "back/config.json").read_text())
    assert hub_config["architectures"] == [arch] and hub_config["model_type"] == "albert"
    for key in ("hidden_act", "layer_norm_eps", "embedding_size", "num_hidden_groups",
                "inner_group_num", "num_hidden_layers"):
        assert hub_config[key] == config[key], key
    assert "position_embedding_type" not in hub_config
    if "id2label" in config:
        assert hub_config["id2label"] == {str(i): x for i, x in enumerate(LABELS)}
    assert (tmp_path / "back/spiece.model").read_bytes() == open(hub.ALBERT_SPM, "rb").read()
    settings = json.loads((tmp_path / "back/tokenizer_config.json").read_text())
    assert settings == {
        "tokenizer_class": "AlbertTokenizer", "do_lower_case": True, "remove_space": True,
        "keep_accents": False, "model_max_length": 20, "bos_token": "[CLS]", "eos_token": "[SEP]",
        "unk_token": "<unk>", "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
        "mask_token": "[MASK]"}


def _recorded(tmp_path, case):
    """The recorded snapshot with its spiece.model, and Transformers' inputs and outputs."""
    folder = tmp_path / case
    shutil.copytree(os.path.join(ALBERT_HUB, case), folder,
                    ignore=shutil.ignore_patterns("outputs.npz"))
    shutil.copy(hub.ALBERT_SPM, folder / "spiece.model")
    return str(folder), dict(np.load(os.path.join(ALBERT_HUB, case, "outputs.npz")))


@pytest.mark.parametrize("case", ["pretraining", "classifier"])
def test_albert_snapshots_saved_by_transformers(tmp_path, case):
    """Snapshots Transformers 5.24 saved, and its outputs (tests/data/albert_hub/
    make_expected.py): our forward of the import within 1e-5, the export bit for bit."""
    folder, want = _recorded(tmp_path, case)
    features = {"input_ids": want["input_ids"], "input_mask": want["attention_mask"],
                "segment_ids": want["token_type_ids"]}
    real = want["attention_mask"].astype(bool)
    import_snapshot(folder, tmp_path / "google")
    if case == "pretraining":
        model = AlbertPretrainingModel(families.read_config(tmp_path / "google/albert_config.json"))
        load_original_checkpoint(model, tmp_path / "google")
        positions = np.tile(np.arange(want["input_ids"].shape[1]), (2, 1))
        out = model(dict(features, masked_lm_positions=positions))
        mlm = hub.log_softmax(want["prediction_logits"].astype(np.float64))
        np.testing.assert_allclose(out["mlm_log_probs"].numpy().reshape(mlm.shape)[real],
                                   mlm[real], atol=1e-5)
        np.testing.assert_allclose(out["nsp_log_probs"].numpy(),
                                   hub.log_softmax(want["sop_logits"].astype(np.float64)),
                                   atol=1e-5)
    else:
        out = BertTaskModel.from_pretrained(tmp_path / "google")(features)
        np.testing.assert_allclose(out["logits"].numpy(), want["logits"], atol=1e-5)
    np.testing.assert_allclose(out["sequence_output"].numpy()[real],
                               want["last_hidden_state"][real], atol=1e-5)
    np.testing.assert_allclose(out["pooled_output"].numpy(), want["pooler_output"], atol=1e-5)
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    saved = SafetensorsFile(os.path.join(folder, "model.safetensors")).read_all()
    back = SafetensorsFile(tmp_path / "back/model.safetensors").read_all()
    assert sorted(back) == sorted(saved)
    for name, value in saved.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def test_albert_tokenizer_ids_against_transformers():
    """Our AlbertTokenizer on the imported spiece.model against the ids Transformers'
    AlbertTokenizer gave (recorded): equal, except where the two codes differ by design (the
    original does not turn `` and '' into ", and keeps the "▁" it re-encodes before a
    digit-comma piece)."""
    recorded = json.loads(open(os.path.join(ALBERT_HUB, "tokens.json"), encoding="utf-8").read())
    tokenizer = AlbertTokenizer(hub.ALBERT_SPM, do_lower_case=True)
    differ = {"``Quoted'' text", "In 1990, then 2, 33"}
    for text, ids in recorded.items():
        ours = [2, *tokenizer.tokenize_to_ids(text), 3]
        assert (ours != ids) == (text in differ), (text, ours, ids)


@pytest.mark.parametrize("kind", ["pretraining", "classifier", "squad", "tagging", "encoder"])
def test_albert_import_of_export_gives_the_checkpoint_back(tmp_path, kind):
    config = AlbertConfig.from_dict(dict(
        vocab_size=hub.ALBERT_VOCAB_SIZE, embedding_size=8, hidden_size=16,
        num_hidden_layers=3, num_hidden_groups=2, inner_group_num=2, num_attention_heads=4,
        intermediate_size=24, max_position_embeddings=20,
        hidden_act={"classifier": "gelu_exact", "squad": "relu"}.get(kind, "gelu")))
    model = random_model(kind, config)
    run_dir = tmp_path / "run"
    prefix = save_original_checkpoint(model, run_dir / "model.ckpt-7", global_step=7)
    shutil.copy(hub.ALBERT_SPM, run_dir / "30k-clean.model")
    result = export_checkpoint(prefix, run_dir / "bert_config.json", run_dir / "30k-clean.model",
                               tmp_path / "hub", do_lower_case=False)
    architecture = {"pretraining": "AlbertForPreTraining", "encoder": "AlbertModel",
                    "classifier": "AlbertForSequenceClassification",
                    "squad": "AlbertForQuestionAnswering",
                    "tagging": "AlbertForTokenClassification"}[kind]
    assert result.report[0].startswith(f"architecture: {architecture} ")
    hub_config = json.loads((tmp_path / "hub/config.json").read_text())
    assert hub_config["hidden_act"] == names.ACTIVATION_TO_HUB[config.hidden_act]
    import_snapshot(tmp_path / "hub", tmp_path / "google")
    original = {n: v for n, v in checkpoint_tensors(prefix).items() if n != "global_step"}
    again = checkpoint_tensors(tmp_path / "google/model.ckpt-best")
    assert sorted(again) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    assert AlbertConfig.from_json_file(tmp_path / "google/albert_config.json") == config
    assert json.loads((tmp_path / "google/tokenizer_config.json").read_text()) == {
        "do_lower_case": False}


def test_google_albert_release_folder_loads_and_exports(tmp_path):
    """albert_base_v2.tar.gz's layout: albert_config.json (no model_type), model.ckpt-best.*,
    30k-clean.model; AlbertModel.from_pretrained and export take it as it is."""
    config, tensors, folder = build_albert(tmp_path, "bare-default-act")
    import_snapshot(folder, tmp_path / "imported")
    release = tmp_path / "albert_base"
    release.mkdir()
    google = json.loads((tmp_path / "imported/albert_config.json").read_text())
    google.pop("model_type")
    google.update(net_structure_type=0, layers_to_keep=[], gap_size=0, num_memory_blocks=0,
                  down_scale_factor=1)
    (release / "albert_config.json").write_text(json.dumps(google))
    for suffix in (".index", ".data-00000-of-00001"):
        os.rename(tmp_path / f"imported/model.ckpt-best{suffix}",
                  release / f"model.ckpt-best{suffix}")
    os.rename(tmp_path / "imported/spiece.model", release / "30k-clean.model")
    ref = hub.albert_reference_outputs(config, tensors, ALBERT_INPUT_IDS, SEGMENT_IDS,
                                       INPUT_MASK.astype(float))
    _compare(AlbertModel.from_pretrained(release)(albert_inputs()), ref)
    with pytest.raises(HubError, match=r"albert_base: holds a model of model_type 'albert': "
                                       r"load it with AlbertModel.from_pretrained"):
        BertModel.from_pretrained(release)
    result = export_checkpoint(release, None, None, tmp_path / "back")
    assert any("do_lower_case=True" in line for line in result.report)
    assert (tmp_path / "back/spiece.model").read_bytes() == open(hub.ALBERT_SPM, "rb").read()
    got = SafetensorsFile(tmp_path / "back/model.safetensors").read_all()
    np.testing.assert_array_equal(got["embeddings.word_embeddings.weight"],
                                  tensors["embeddings.word_embeddings.weight"])


def test_albert_mapping_that_is_not_the_identity_is_refused(tmp_path):
    """E == H: the original has no embedding_hidden_mapping_in; a snapshot whose mapping does
    something cannot be held."""
    config = hub.albert_hub_config("AlbertModel", embedding_size=16)
    tensors = hub.albert_state_dict(config, identity_mapping=False)
    folder = hub.write_snapshot(str(tmp_path / "mapped"), config, tensors,
                                spiece_model=hub.ALBERT_SPM)
    one_line_error(folder, str(tmp_path / "out"),
                   "tensor encoder.embedding_hidden_mapping_in.bias is not the zero vector",
                   "embedding_size == hidden_size")


@pytest.mark.parametrize("layers,groups,fragment", [
    (18, 14, "layer 9 runs group 7 in the original (int(l / L * G)) and group 6 in Transformers"),
    (22, 22, "layer 15 runs group 14 in the original (int(l / L * G)) and group 15 in "
             "Transformers")])
def test_albert_layouts_the_two_codes_compute_differently_are_refused(tmp_path, layers, groups,
                                                                      fragment):
    config = hub.albert_hub_config("AlbertModel", num_hidden_layers=layers,
                                   num_hidden_groups=groups, inner_group_num=1)
    tensors = hub.albert_state_dict(config)
    folder = hub.write_snapshot(str(tmp_path / "layout"), config, tensors,
                                spiece_model=hub.ALBERT_SPM)
    one_line_error(folder, str(tmp_path / "out"), "config.json: num_hidden_layers=", fragment)
    # The same layout exported from one of our checkpoints.
    ours = AlbertConfig.from_dict(dict(vocab_size=hub.ALBERT_VOCAB_SIZE, embedding_size=8,
                                       hidden_size=16, num_attention_heads=4,
                                       intermediate_size=24, max_position_embeddings=20,
                                       num_hidden_layers=layers, num_hidden_groups=groups))
    prefix = save_original_checkpoint(AlbertModel(ours), tmp_path / "run/model.ckpt-1")
    shutil.copy(hub.ALBERT_SPM, tmp_path / "run/spiece.model")
    with pytest.raises(HubError, match=r"bert_config.json: num_hidden_layers=.*" + fragment[:30]):
        export_checkpoint(prefix, None, None, tmp_path / "hub")
    assert not (tmp_path / "hub").exists()


def test_albert_tokenizer_files_refused_and_warned(tmp_path):
    config, tensors, folder = build_albert(tmp_path, "bare-default-act")
    os.rename(os.path.join(folder, "spiece.model"), os.path.join(folder, "moved.model"))
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "Unigram", "vocab": [["<pad>", 0.0]]}}, f)
    one_line_error(folder, str(tmp_path / "out"), "no spiece.model",
                   "tokenizer.json is Transformers' rewrite of the model")
    os.rename(os.path.join(folder, "moved.model"), os.path.join(folder, "spiece.model"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False, "keep_accents": True, "remove_space": False}, f)
    result = import_snapshot(folder, tmp_path / "google")
    text = "\n".join(result.report)
    assert "do_lower_case=False" in text and "(use --do_lower_case=false)" in text
    assert "keep_accents=True: no equivalent" in text and "remove_space=False" in text
    assert "config: hidden_act 'gelu_new' (Transformers default) -> 'gelu'" in text
