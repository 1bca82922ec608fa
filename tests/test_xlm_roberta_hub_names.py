"""XLM-RoBERTa through the Hub bridge (bert_tf/xlm_roberta/hub_names.py on bert_tf.hf): snapshots
of every XLMRoberta* class (RoBERTa's tensors, `model_type` "xlm-roberta", the SentencePiece
model sentencepiece.bpe.model) import to models whose outputs at every position are within
1e-5 of the float64 NumPy forward of Transformers' RoBERTa (tests/hub_fixtures.py: XLM-R's
modules are RoBERTa's); round trips are bit for bit both ways; what cannot be held is refused in
one line. No torch."""

import gzip
import json
import os
import shutil

import numpy as np
import pytest

import hub_fixtures as hub
from bert_tf import checkpoints, families
from bert_tf.hf import HubError, names
from bert_tf.hf.convert import export_checkpoint, import_snapshot
from bert_tf.roberta import hub_names as roberta_hub_names
from bert_tf.xlm_roberta import hub_names
from bert_tf.xlm_roberta.config import XLMRobertaConfig
from bert_tf.xlm_roberta.model import XLMRobertaModel
from bert_tf.text import VocabError
from test_hf import (assert_same_checkpoint, checkpoint_tensors, one_line_error,
                     random_model)

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "data", "xlm_roberta", "sentencepiece.bpe.model")
VOCAB_SIZE = 602  # the model's 600 pieces + fairseq's offset + <mask>
MASK = 601
LABELS = ["pos", "neg", "neu"]
CASES = {
    # id: (XLMRoberta* class, weights file, roberta_state_dict options, config.json overrides)
    "bare": ("XLMRobertaModel", "safetensors", {}, {}),
    "masked-lm-tied": ("XLMRobertaForMaskedLM", "safetensors", dict(tied_decoder=True), {}),
    "classifier-types2": ("XLMRobertaForSequenceClassification", "bin", {},
                          dict(type_vocab_size=2, id2label=dict(enumerate(LABELS)))),
    "qa-relu-pad0": ("XLMRobertaForQuestionAnswering", "sharded", {},
                     dict(hidden_act="relu", pad_token_id=0)),
    "tagging-gelu-new": ("XLMRobertaForTokenClassification", "safetensors", {},
                         dict(hidden_act="gelu_new")),
}
XLMR_TOKENIZER_CONFIG = {"tokenizer_class": "XLMRobertaTokenizer", "add_prefix_space": True}


def roberta_name(architecture):
    return architecture.replace("XLMRoberta", "Roberta")


def build(tmp_path, case, tokenizer_config=None):
    """(config as Transformers computes it, tensors, snapshot folder) of a CASES case."""
    arch, weights, options, overrides = CASES[case]
    config = hub.roberta_hub_config(arch, model_type="xlm-roberta", vocab_size=VOCAB_SIZE,
                                    **overrides)
    # The same modules as RoBERTa's: draw them as Transformers' Roberta* class of that name.
    tensors = hub.roberta_state_dict(dict(config, architectures=[roberta_name(arch)]),
                                     **options)
    folder = str(tmp_path / f"xlmr-{case}")
    hub.write_snapshot(folder, config, tensors, weights=weights, tokenizer=(),
                       tokenizer_config=tokenizer_config or XLMR_TOKENIZER_CONFIG)
    shutil.copy(MODEL, os.path.join(folder, "sentencepiece.bpe.model"))
    return config, tensors, folder


def features(pad_token_id, type_vocab_size, length=12):
    """Two rows (<s> ... </s>, <mask> among them; the second padded with pad_token_id)."""
    bos, eos = (1, 2) if pad_token_id == 0 else (0, 2)
    rows = [[bos, 100, 200, 300, eos, eos, 400, MASK, 500, 600, eos], [bos, 7, MASK, eos]]
    ids = np.full((2, length), pad_token_id, np.int64)
    segments = np.zeros((2, length), np.int64)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
        if type_vocab_size > 1:
            segments[i, len(row) // 2:len(row)] = 1
    return {"input_ids": ids, "input_mask": (ids != pad_token_id).astype(np.int64),
            "segment_ids": segments, "masked_lm_positions": np.tile(np.arange(length), (2, 1))}


def forward(tmp_path, arch, folder, feats):
    return hub.roberta_forward(tmp_path, arch, folder, feats, XLMRobertaModel)


@pytest.mark.parametrize("case", list(CASES))
def test_imported_forward_equals_transformers_reference(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    arch = config["architectures"][0]
    feats = features(config["pad_token_id"], config["type_vocab_size"])
    ref = hub.roberta_reference_outputs(dict(config, architectures=[roberta_name(arch)]),
                                        tensors, feats["input_ids"], feats["segment_ids"],
                                        feats["input_mask"].astype(float))
    out = forward(tmp_path, arch, folder, feats)
    np.testing.assert_allclose(out["sequence_output"].numpy(), ref["sequence_output"], atol=1e-5)
    if "pooled_output" in ref:
        np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=1e-5)
    if "mlm_logits" in ref:
        mlm = ref["mlm_logits"]
        np.testing.assert_allclose(out["mlm_log_probs"].numpy(),
                                   hub.log_softmax(mlm).reshape(-1, mlm.shape[-1]), atol=1e-5)
    for key in ("logits", "start_logits", "end_logits"):
        if key in ref:
            np.testing.assert_allclose(out[key].numpy(), ref[key], atol=1e-5)


def test_table_is_robertas_under_xlm_roberta_class_names():
    assert sorted(hub_names.ARCHITECTURES) == sorted(
        "XLMRoberta" + name.removeprefix("Roberta") for name in roberta_hub_names.ARCHITECTURES)
    table = names.hub_table("xlm-roberta")
    assert table.MODEL_TYPE == "xlm-roberta" and table.CONFIG is XLMRobertaConfig
    config = XLMRobertaConfig(VOCAB_SIZE, hidden_size=16, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=24,
                              max_position_embeddings=14)
    for arch, layout in hub_names.ARCHITECTURES.items():
        assert table.rows_for(arch, config) == names.HubTable(roberta_hub_names).rows_for(
            roberta_name(arch), config)
        assert layout == roberta_hub_names.ARCHITECTURES[roberta_name(arch)]


def test_a_folder_with_tokenizer_json_alone(tmp_path):
    """What Transformers 5 saves (tests/data/xlm_roberta/tokenizer.json.gz, its save_pretrained
    of the committed model): the SentencePiece model rebuilt from it tokenizes as the original
    (all the goldens' texts), and the import and its export carry it."""
    _, tensors, folder = build(tmp_path, "classifier-types2")
    os.remove(os.path.join(folder, "sentencepiece.bpe.model"))
    with gzip.open(os.path.join(HERE, "data", "xlm_roberta", "tokenizer.json.gz"), "rb") as f:
        (tmp_path / folder / "tokenizer.json").write_bytes(f.read())
    result = import_snapshot(folder, tmp_path / "google")
    assert any("tokenizer.json (its Unigram vocabulary and normalizer rebuilt as "
               "sentencepiece.bpe.model)" in line for line in result.report)
    rebuilt = families.get("xlm-roberta").tokenizer(
        str(tmp_path / "google/sentencepiece.bpe.model"), False)
    original = families.get("xlm-roberta").tokenizer(MODEL, False)
    assert rebuilt.vocab == original.vocab
    with open(os.path.join(HERE, "data", "xlm_roberta", "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    for case in expected["texts"]:
        assert rebuilt.tokenize_to_ids(case["text"]) == case["fast"], case["name"]
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    assert (tmp_path / "back/sentencepiece.bpe.model").read_bytes() == (
        tmp_path / "google/sentencepiece.bpe.model").read_bytes()


def test_imported_folder(tmp_path):
    config, tensors, folder = build(tmp_path, "classifier-types2")
    result = import_snapshot(folder, tmp_path / "google")
    assert sorted(os.listdir(tmp_path / "google")) == sorted([
        "bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001",
        "sentencepiece.bpe.model", "tokenizer_config.json", "task.json", "hf_import.json"])
    assert (tmp_path / "google/sentencepiece.bpe.model").read_bytes() == open(MODEL,
                                                                              "rb").read()
    saved = json.loads((tmp_path / "google/bert_config.json").read_text())
    assert {k: saved[k] for k in ("model_type", "pad_token_id", "layer_norm_eps",
                                  "hidden_act")} == {
        "model_type": "xlm-roberta", "pad_token_id": 1, "layer_norm_eps": 1e-5,
        "hidden_act": "gelu_exact"}
    stored = checkpoint_tensors(tmp_path / "google/bert_model.ckpt")
    assert {n.split("/")[0] for n in stored} == {"roberta", "output_weights", "output_bias"}
    assert any(f"--vocab_file={tmp_path / 'google' / 'sentencepiece.bpe.model'}" in line
               for line in result.report)
    # XLMRobertaTokenizer's add_prefix_space=True is SentencePiece's own: no warning.
    assert not [line for line in result.report if "warning" in line]
    tokenizer = families.get("xlm-roberta").tokenizer(
        str(tmp_path / "google/sentencepiece.bpe.model"), False)
    assert tokenizer.vocab["<mask>"] == MASK and len(tokenizer.vocab) == VOCAB_SIZE


@pytest.mark.parametrize("case", list(CASES))
def test_export_of_import_gives_the_snapshot_tensors_back(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    arch = config["architectures"][0]
    import_snapshot(folder, tmp_path / "google")
    # No config or vocabulary flag: bert_config.json and sentencepiece.bpe.model beside it.
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    hub.assert_roberta_export(tmp_path / "back", tensors, config,
                              bare=arch == "XLMRobertaModel")
    assert (tmp_path / "back/sentencepiece.bpe.model").read_bytes() == open(MODEL, "rb").read()
    settings = json.loads((tmp_path / "back/tokenizer_config.json").read_text())
    assert settings["tokenizer_class"] == "XLMRobertaTokenizer"
    assert {int(i): t["content"] for i, t in settings["added_tokens_decoder"].items()} == {
        0: "<s>", 1: "<pad>", 2: "</s>", 3: "<unk>", MASK: "<mask>"}
    assert settings["added_tokens_decoder"][str(MASK)]["lstrip"] is True


@pytest.mark.parametrize("kind,overrides", [
    ("pretraining", {}), ("classifier", dict(type_vocab_size=2)),
    ("squad", dict(hidden_act="relu", layer_norm_eps=1e-7)), ("tagging", {}), ("encoder", {})])
def test_import_of_export_gives_the_checkpoint_back(tmp_path, kind, overrides):
    config = XLMRobertaConfig.from_dict(dict(dict(
        vocab_size=VOCAB_SIZE, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu_exact", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=14, type_vocab_size=1,
        initializer_range=0.02, model_type="xlm-roberta"), **overrides))
    model = random_model(kind, config)
    prefix = checkpoints.save_original_checkpoint(model, tmp_path / "run/model.ckpt-7",
                                                  global_step=7)
    result = export_checkpoint(prefix, None, MODEL, tmp_path / "hub")
    architecture = {"pretraining": "XLMRobertaForMaskedLM", "encoder": "XLMRobertaModel",
                    "classifier": "XLMRobertaForSequenceClassification",
                    "squad": "XLMRobertaForQuestionAnswering",
                    "tagging": "XLMRobertaForTokenClassification"}[kind]
    assert result.report[0].startswith(f"architecture: {architecture} ")
    import_snapshot(tmp_path / "hub", tmp_path / "google")
    nsp = ["cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights"]
    assert_same_checkpoint(prefix, tmp_path / "google/bert_model.ckpt", left_out=nsp)
    assert XLMRobertaConfig.from_json_file(tmp_path / "google/bert_config.json") == config


def test_refusals(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    config_path = os.path.join(folder, "config.json")
    data = json.load(open(config_path))
    json.dump(dict(data, position_embedding_type="relative_key"), open(config_path, "w"))
    one_line_error(folder, str(tmp_path / "out"), "position_embedding_type 'relative_key'")
    json.dump(data, open(config_path, "w"))
    # A tokenizer.json that is not XLM-R's SentencePiece (a WordPiece one).
    os.remove(os.path.join(folder, "sentencepiece.bpe.model"))
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}, f)
    with pytest.raises(VocabError, match=r"tokenizer.json: model type 'WordPiece' \(expected "
                                         "Unigram\)"):
        import_snapshot(folder, str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")
    os.remove(os.path.join(folder, "tokenizer.json"))
    one_line_error(folder, str(tmp_path / "out"), "no sentencepiece.bpe.model and no "
                   "tokenizer.json")
    # Other special tokens would give other ids.
    _, _, folder = build(tmp_path / "b", "bare", dict(XLMR_TOKENIZER_CONFIG,
                                                      mask_token="[MASK]"))
    one_line_error(folder, str(tmp_path / "out"), "mask_token is '[MASK]'; XLM-RoBERTa's "
                   "tokenizer uses '<mask>'")
    # An untied decoder.
    config = hub.roberta_hub_config("XLMRobertaForMaskedLM", model_type="xlm-roberta",
                                    vocab_size=VOCAB_SIZE)
    tensors = hub.roberta_state_dict(dict(config, architectures=["RobertaForMaskedLM"]),
                                     tied_decoder=True)
    tensors["lm_head.decoder.weight"] = tensors["lm_head.decoder.weight"] + 1
    folder = str(tmp_path / "untied")
    hub.write_snapshot(folder, config, tensors, tokenizer=(),
                       tokenizer_config=XLMR_TOKENIZER_CONFIG)
    shutil.copy(MODEL, os.path.join(folder, "sentencepiece.bpe.model"))
    one_line_error(folder, str(tmp_path / "out"), "lm_head.decoder.weight differs from the word "
                   "embeddings")


def test_segment_ids_past_type_vocab_size_and_lengths_are_refused(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    model = XLMRobertaModel.from_pretrained(folder)
    with pytest.raises(ValueError, match=r"segment_ids must be in \[0, type_vocab_size=1\)"):
        model(features(1, 2))
    with pytest.raises(ValueError, match="sequence length 13 is too long: RoBERTa takes at most "
                                         "12 tokens"):
        model(features(1, 1, length=13))


def test_a_vocabulary_larger_than_the_embeddings_is_refused(tmp_path):
    """601 rows for the model's 602 ids (<mask> has none)."""
    config = hub.roberta_hub_config("XLMRobertaModel", model_type="xlm-roberta",
                                    vocab_size=VOCAB_SIZE - 1)
    tensors = hub.roberta_state_dict(dict(config, architectures=["RobertaModel"]))
    folder = str(tmp_path / "small")
    hub.write_snapshot(folder, config, tensors, tokenizer=(),
                       tokenizer_config=XLMR_TOKENIZER_CONFIG)
    shutil.copy(MODEL, os.path.join(folder, "sentencepiece.bpe.model"))
    one_line_error(folder, str(tmp_path / "out"), "602 tokens", "more than vocab_size 601")
