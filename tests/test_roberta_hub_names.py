"""RoBERTa through the Hub bridge (bert_tf/roberta/hub_names.py on bert_tf.hf): the table's rows
are our models' variables; snapshots of every Transformers class (pad id 1 and 0,
type_vocab_size 1 and 2, non-zero token-type rows, padded rows) import to models whose outputs
at every position are within 1e-5 of a float64 NumPy forward of Transformers' RoBERTa
(tests/hub_fixtures.py); round trips are bit for bit both ways; what cannot be held is refused
in one line. No torch: snapshots are written by tests/hub_fixtures.py; tests/data/roberta_hub
holds snapshots Transformers saved, with its outputs."""

import json
import os
import shutil

import numpy as np
import pytest

import hub_fixtures as hub
from bert_tf import BertModel, BertTaskModel, checkpoints, families
from bert_tf.bert.pretraining import BertPretrainingModel
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.hf import HubError, names
from bert_tf.hf.convert import export_checkpoint, import_snapshot
from bert_tf.hf.safetensors_io import SafetensorsFile
from bert_tf.roberta import hub_names
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.model import RobertaModel
from bert_tf.text import VocabError
from conftest import tiny_config_dict
from test_hf import (assert_same_checkpoint, checkpoint_tensors, one_line_error,
                     random_model)

LABELS = ["pos", "neg", "neu"]
CASES = {
    # id: (architecture, weights file, roberta_state_dict options, config.json overrides,
    #      tokenizer files)
    "bare": ("RobertaModel", "safetensors", {}, {}, "files"),
    # sentence-transformers' layout: the encoder with its prefix, no pooler; buffers saved.
    "bare-prefixed-no-pooler-bin": ("RobertaModel", "bin",
                                    dict(prefix="roberta.", pooler=False, buffers=True), {},
                                    "files"),
    "masked-lm-tied-sharded": ("RobertaForMaskedLM", "sharded",
                               dict(tied_decoder=True, buffers=True), {}, "files"),
    # lm_head's GELU is the exact one whatever hidden_act.
    "masked-lm-pad0-types2-gelu-new": ("RobertaForMaskedLM", "safetensors", {},
                                       dict(pad_token_id=0, type_vocab_size=2,
                                            hidden_act="gelu_new"), "json"),
    "classifier": ("RobertaForSequenceClassification", "safetensors", {},
                   dict(id2label=dict(enumerate(LABELS))), "files"),
    "classifier-pad0-types2-json": ("RobertaForSequenceClassification", "bin", {},
                                    dict(pad_token_id=0, type_vocab_size=2), "json"),
    "qa-relu-bin-sharded": ("RobertaForQuestionAnswering", "bin_sharded", {},
                            dict(hidden_act="relu"), "files"),
    "tagging-gelu-new-types2": ("RobertaForTokenClassification", "safetensors", {},
                                dict(hidden_act="gelu_new", type_vocab_size=2,
                                     id2label={str(i): x for i, x in enumerate(LABELS)}),
                                "files"),
    # Transformers' RobertaConfig defaults, not roberta-base's: type_vocab_size 2, epsilon
    # 1e-12, the exact GELU, pad id 1.
    "bare-defaults": ("RobertaModel", "safetensors", {},
                      dict(type_vocab_size=None, layer_norm_eps=None, hidden_act=None,
                           pad_token_id=None), "files"),
}
DEFAULTS = dict(type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu", pad_token_id=1)
# Two rows over 14 positions (12 usable with pad id 1): the first uses 11 (positions 2..12),
# the second 5 then padding; <mask> (1035) among them.
REAL = [[100, 200, 300, 2, 2, 400, 1035, 500, 600, 2], [700, 1035, 2]]
SEGMENTS_2 = [[0] * 5 + [1] * 6, [0, 1, 1, 1]]


def features(pad_token_id, type_vocab_size, length=12):
    """input_ids (<s> first, padded with pad_token_id), input_mask, segment_ids, and every
    position as masked_lm_positions."""
    start = 1 if pad_token_id == 0 else 0  # <s>'s id in the pad-0 vocab
    rows = [[start] + r for r in REAL]
    ids = np.full((2, length), pad_token_id, np.int64)
    segments = np.zeros((2, length), np.int64)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = row
        if type_vocab_size > 1:
            segments[i, :len(SEGMENTS_2[i])] = SEGMENTS_2[i]
    mask = (ids != pad_token_id).astype(np.int64)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": np.tile(np.arange(length), (2, 1))}


def build(tmp_path, case):
    arch, weights, options, overrides, tokenizer = CASES[case]
    config = hub.roberta_hub_config(arch, **overrides)
    config = {k: v for k, v in config.items() if v is not None}  # None: left to the default
    full = {**DEFAULTS, **config}  # what Transformers computes
    tensors = hub.roberta_state_dict(full, **options)
    folder = hub.write_roberta_snapshot(str(tmp_path / f"roberta-{case}"), config, tensors,
                                        weights=weights, tokenizer=tokenizer)
    return full, tensors, folder


def forward(tmp_path, arch, folder, feats):
    return hub.roberta_forward(tmp_path, arch, folder, feats, RobertaModel)


def compare(out, ref, feats):
    """Every output at every position (padding included) within 1e-5."""
    np.testing.assert_allclose(out["sequence_output"].numpy(), ref["sequence_output"], atol=1e-5)
    if "pooled_output" in ref:
        np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=1e-5)
    if "mlm_logits" in ref:
        mlm = np.take_along_axis(ref["mlm_logits"], feats["masked_lm_positions"][..., None], 1)
        np.testing.assert_allclose(out["mlm_log_probs"].numpy(),
                                   hub.log_softmax(mlm).reshape(-1, mlm.shape[-1]), atol=1e-5)
    for key in ("logits", "start_logits", "end_logits"):
        if key in ref:
            np.testing.assert_allclose(out[key].numpy(), ref[key], atol=1e-5)


# --- the table ------------------------------------------------------------------------------


def tiny_config(**overrides):
    return RobertaConfig.from_dict(dict(dict(
        vocab_size=hub.ROBERTA_VOCAB_SIZE, hidden_size=16, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=24, hidden_act="gelu_exact",
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=14,
        type_vocab_size=1, initializer_range=0.02), **overrides))


@pytest.mark.parametrize("architecture", list(hub_names.ARCHITECTURES))
def test_rows_are_the_variables_of_our_models(architecture):
    """Names and shapes (Transformers' [out, in] transposed) of every row are our model's."""
    config = tiny_config()
    table = names.HubTable(hub_names)
    _, heads, _ = hub_names.ARCHITECTURES[architecture]
    if heads == ("mlm",):
        model = BertPretrainingModel(config)
    elif heads:
        model = BertTaskModel(config, FINE_TUNING_HEADS[heads[0]].build(config, 3))
    else:
        model = RobertaModel(config)
    ours = {name: tuple(v.shape) for name, v in model.checkpoint_variables().items()}
    rows = table.rows_for(architecture, config, pooler=True)
    sizes = names.sizes_of(config, 3)
    from_rows = {}
    for _, original, transposed, letters in rows:
        shape = names.hub_shape(letters, sizes)
        from_rows[original] = shape[::-1] if transposed else shape
    nsp = {"cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"}
    assert from_rows == {n: s for n, s in ours.items() if n not in nsp}
    assert len({hub_name for hub_name, *_ in rows}) == len(rows) == len(from_rows)


def test_hub_names():
    rows = names.HubTable(hub_names).rows_for("RobertaForSequenceClassification", tiny_config())
    by_hub = {hub_name: original for hub_name, original, _, _ in rows}
    assert by_hub["roberta.embeddings.position_embeddings.weight"] == (
        "roberta/embeddings/position_embeddings")
    assert by_hub["roberta.encoder.layer.1.output.LayerNorm.weight"] == (
        "roberta/encoder/layer_1/output/LayerNorm/gamma")
    assert by_hub["classifier.dense.weight"] == "roberta/pooler/dense/kernel"
    assert by_hub["classifier.out_proj.weight"] == "output_weights"
    assert "roberta.pooler.dense.weight" not in by_hub  # the pooler is classifier.dense
    mlm = dict((h, o) for h, o, _, _ in names.HubTable(hub_names).rows_for(
        "RobertaForMaskedLM", tiny_config()))
    assert mlm["lm_head.dense.weight"] == "cls/predictions/transform/dense/kernel"
    assert mlm["lm_head.layer_norm.bias"] == "cls/predictions/transform/LayerNorm/beta"
    assert mlm["lm_head.bias"] == "cls/predictions/output_bias"
    assert sorted(hub_names.ARCHITECTURES) == sorted([
        "RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
        "RobertaForQuestionAnswering", "RobertaForTokenClassification"])


def test_config_defaults_are_transformers_roberta_configs():
    """Transformers 5.24's RobertaConfig (configuration_roberta.py), not roberta-base's
    config.json (type_vocab_size 1, max_position_embeddings 514, layer_norm_eps 1e-5)."""
    assert hub_names.CONFIG_KEYS == {
        "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072, "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
        "type_vocab_size": 2, "initializer_range": 0.02, "pad_token_id": 1}
    assert hub_names.DEFAULT_EPS == 1e-12
    assert names.HubTable(hub_names).DEFAULT_HIDDEN_ACT == "gelu"


# --- snapshots in ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_imported_forward_equals_transformers_reference(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    feats = features(config["pad_token_id"], config["type_vocab_size"])
    ref = hub.roberta_reference_outputs(config, tensors, feats["input_ids"],
                                        feats["segment_ids"], feats["input_mask"].astype(float))
    compare(forward(tmp_path, config["architectures"][0], folder, feats), ref, feats)


def test_the_reference_sees_positions_and_the_token_type_row():
    """The reference is not blind to what RoBERTa adds: BERT's positions 0..S-1, or no
    token-type row (as KerasHub drops it), are far outside the forward test's tolerance."""
    config = hub.roberta_hub_config("RobertaModel")
    tensors = hub.roberta_state_dict(config)
    feats = features(1, 1)
    args = (feats["input_ids"], feats["segment_ids"], feats["input_mask"].astype(float))
    ref = hub.roberta_reference_outputs(config, tensors, *args)["sequence_output"]
    shifted = dict(tensors)
    table = tensors["embeddings.position_embeddings.weight"]
    shifted["embeddings.position_embeddings.weight"] = np.concatenate([table[2:], table[:2]])
    no_types = dict(tensors, **{"embeddings.token_type_embeddings.weight": np.zeros_like(
        tensors["embeddings.token_type_embeddings.weight"])})
    for other in (shifted, no_types):
        out = hub.roberta_reference_outputs(config, other, *args)["sequence_output"]
        assert np.abs(out - ref).max() > 1e-2


def test_imported_folder(tmp_path):
    config, tensors, folder = build(tmp_path, "classifier")
    result = import_snapshot(folder, tmp_path / "google")
    assert sorted(os.listdir(tmp_path / "google")) == sorted([
        "bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001",
        "vocab.json", "merges.txt", "tokenizer_config.json", "task.json", "hf_import.json"])
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "google" / name).read_bytes() == open(
            os.path.join(folder, name), "rb").read()
    saved = json.loads((tmp_path / "google/bert_config.json").read_text())
    assert {k: saved[k] for k in ("model_type", "pad_token_id", "layer_norm_eps", "hidden_act",
                                  "type_vocab_size", "max_position_embeddings")} == {
        "model_type": "roberta", "pad_token_id": 1, "layer_norm_eps": 1e-5,
        "hidden_act": "gelu_exact", "type_vocab_size": 1, "max_position_embeddings": 14}
    stored = checkpoint_tensors(tmp_path / "google/bert_model.ckpt")
    # The scope is roberta/: the original BERT code (bert/...) finds nothing to load.
    assert not [n for n in stored if n.startswith("bert/")]
    assert {n.split("/")[0] for n in stored} == {"roberta", "output_weights", "output_bias"}
    # The whole position table, the rows before the first position included.
    np.testing.assert_array_equal(stored["roberta/embeddings/position_embeddings"],
                                  tensors["roberta.embeddings.position_embeddings.weight"])
    assert json.loads((tmp_path / "google/task.json").read_text())["labels"] == LABELS
    assert any(f"--merges_file={tmp_path / 'google' / 'merges.txt'}" in line
               for line in result.report)
    with pytest.raises(HubError, match=r"holds a model of model_type 'roberta': load it with "
                                       r"RobertaModel.from_pretrained"):
        BertModel.from_pretrained(tmp_path / "google")


# --- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_export_of_import_gives_the_snapshot_tensors_back(tmp_path, case):
    config, tensors, folder = build(tmp_path, case)
    arch = config["architectures"][0]
    import_snapshot(folder, tmp_path / "google")
    # No config or vocabulary flag: bert_config.json, vocab.json and merges.txt beside it.
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    hub_config = hub.assert_roberta_export(tmp_path / "back", tensors, config,
                                           bare=arch == "RobertaModel")
    assert "position_embedding_type" not in hub_config
    if "id2label" in config:
        assert hub_config["id2label"] == {str(i): x for i, x in enumerate(LABELS)}
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "back" / name).read_bytes() == (
            tmp_path / "google" / name).read_bytes()
    if CASES[case][4] == "files":
        assert (tmp_path / "back/vocab.json").read_bytes() == open(
            os.path.join(folder, "vocab.json"), "rb").read()


@pytest.mark.parametrize("kind,overrides", [
    ("pretraining", {}), ("classifier", dict(pad_token_id=0, type_vocab_size=2)),
    ("squad", dict(hidden_act="relu", layer_norm_eps=1e-7)), ("tagging", {}),
    ("encoder", dict(hidden_act="gelu"))])
def test_import_of_export_gives_the_checkpoint_back(tmp_path, kind, overrides):
    config = tiny_config(**overrides)
    model = random_model(kind, config)
    run_dir = tmp_path / "run"
    prefix = checkpoints.save_original_checkpoint(model, run_dir / "model.ckpt-7", global_step=7)
    vocab = hub.roberta_vocab(config.pad_token_id)
    (run_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer_dir = tmp_path / "tokenizer"
    tokenizer_dir.mkdir()
    shutil.copy(os.path.join(hub.ROBERTA_TOKENIZER_DIR, "merges.txt"), tokenizer_dir)
    result = export_checkpoint(prefix, None, run_dir / "vocab.json", tmp_path / "hub",
                               merges_file=tokenizer_dir / "merges.txt")
    architecture = {"pretraining": "RobertaForMaskedLM", "encoder": "RobertaModel",
                    "classifier": "RobertaForSequenceClassification",
                    "squad": "RobertaForQuestionAnswering",
                    "tagging": "RobertaForTokenClassification"}[kind]
    assert result.report[0].startswith(f"architecture: {architecture} ")
    nsp = ["cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights"]
    if kind == "pretraining":  # RoBERTa has no next-sentence head
        for name in nsp:
            assert f"left out {name}: not a weight of RobertaForMaskedLM" in result.report
    hub_config = json.loads((tmp_path / "hub/config.json").read_text())
    assert hub_config["hidden_act"] == names.ACTIVATION_TO_HUB[config.hidden_act]
    assert hub_config["pad_token_id"] == config.pad_token_id
    settings = json.loads((tmp_path / "hub/tokenizer_config.json").read_text())
    assert settings["model_max_length"] == config.max_sequence_length
    import_snapshot(tmp_path / "hub", tmp_path / "google")
    assert_same_checkpoint(prefix, tmp_path / "google/bert_model.ckpt", left_out=nsp)
    assert RobertaConfig.from_json_file(tmp_path / "google/bert_config.json") == config


def test_the_masked_lm_export_reloads(tmp_path):
    """An MLM checkpoint of ours, exported and imported again, computes the same
    log-probabilities (its head: dense, the exact GELU whatever hidden_act, the config's
    epsilon, the tied word embeddings)."""
    config = tiny_config(hidden_act="relu")
    model = random_model("pretraining", config)
    prefix = checkpoints.save_original_checkpoint(model, tmp_path / "run/model.ckpt-1")
    (tmp_path / "run/vocab.json").write_text(json.dumps(hub.roberta_vocab()), encoding="utf-8")
    shutil.copy(os.path.join(hub.ROBERTA_TOKENIZER_DIR, "merges.txt"), tmp_path / "run")
    export_checkpoint(prefix, None, None, tmp_path / "hub")
    import_snapshot(tmp_path / "hub", tmp_path / "google")
    again = BertPretrainingModel(families.read_config(tmp_path / "google/bert_config.json"))
    checkpoints.load_original_checkpoint(again, tmp_path / "google")
    feats = features(1, 1)
    want, got = model(feats), again(feats)
    np.testing.assert_array_equal(got["mlm_log_probs"].numpy(), want["mlm_log_probs"].numpy())
    # ... and they are Transformers' RobertaForMaskedLM's on the exported snapshot.
    hub_config = json.loads((tmp_path / "hub/config.json").read_text())
    tensors = SafetensorsFile(tmp_path / "hub/model.safetensors").read_all()
    ref = hub.roberta_reference_outputs(hub_config, tensors, feats["input_ids"],
                                        feats["segment_ids"], feats["input_mask"].astype(float))
    compare(got, {"sequence_output": ref["sequence_output"], "mlm_logits": ref["mlm_logits"]},
            feats)


# --- refused ---------------------------------------------------------------------------------


def _rewrite_config(folder, **changes):
    path = os.path.join(folder, "config.json")
    config = json.loads(open(path).read())
    config.update(changes)
    with open(path, "w") as f:
        json.dump(config, f)


@pytest.mark.parametrize("change,fragments", [
    (dict(position_embedding_type="relative_key"),
     ("position_embedding_type 'relative_key' has no equivalent",)),
    (dict(pad_token_id=13), ("max_position_embeddings (14) must be larger than "
                             "pad_token_id + 1 (14)",)),
    (dict(architectures=["RobertaForCausalLM"]), ("architectures ['RobertaForCausalLM']",)),
    (dict(is_decoder=True), ("is_decoder=true",)),
])
def test_configs_without_an_equivalent_are_refused(tmp_path, change, fragments):
    _, _, folder = build(tmp_path, "bare")
    _rewrite_config(folder, **change)
    one_line_error(folder, str(tmp_path / "out"), "config.json", *fragments)


def test_decoders_that_are_not_the_tied_embeddings_are_refused(tmp_path):
    config = hub.roberta_hub_config("RobertaForMaskedLM")
    tensors = hub.roberta_state_dict(config, tied_decoder=True)
    untied = dict(tensors, **{"lm_head.decoder.weight": tensors["lm_head.decoder.weight"] + 1})
    folder = hub.write_roberta_snapshot(str(tmp_path / "untied"), config, untied)
    one_line_error(folder, str(tmp_path / "out"), "lm_head.decoder.weight differs from the word "
                   "embeddings", "untied")
    biased = dict(tensors, **{"lm_head.decoder.bias": tensors["lm_head.decoder.bias"] * 2})
    folder = hub.write_roberta_snapshot(str(tmp_path / "biased"), config, biased)
    one_line_error(folder, str(tmp_path / "out"), "lm_head.decoder.bias differs from "
                   "lm_head.bias")


def test_a_classifier_with_a_pooler_too_is_refused(tmp_path):
    """classifier.dense is the pooler: a snapshot with roberta.pooler.dense as well holds two
    values for one weight."""
    config = hub.roberta_hub_config("RobertaForSequenceClassification")
    tensors = hub.roberta_state_dict(config, pooler=True)
    folder = hub.write_roberta_snapshot(str(tmp_path / "both"), config, tensors)
    one_line_error(folder, str(tmp_path / "out"), "are both roberta/pooler/dense/")


def test_tokenizer_files_refused(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    os.remove(os.path.join(folder, "merges.txt"))
    one_line_error(folder, str(tmp_path / "out"), "vocab.json without merges.txt")
    _, _, folder = build(tmp_path, "masked-lm-pad0-types2-gelu-new")  # tokenizer.json only
    path = os.path.join(folder, "tokenizer.json")
    data = json.loads(open(path, encoding="utf-8").read())
    data["model"]["type"] = "WordPiece"
    open(path, "w", encoding="utf-8").write(json.dumps(data))
    # The tokenizer's own reader of tokenizer.json refuses it (a VocabError, one line).
    with pytest.raises(VocabError, match=r"tokenizer.json: model type 'WordPiece', not BPE") as e:
        import_snapshot(folder, str(tmp_path / "out"))
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()
    data["model"]["type"] = "BPE"
    data["pre_tokenizer"]["add_prefix_space"] = True
    open(path, "w", encoding="utf-8").write(json.dumps(data))
    result = import_snapshot(folder, tmp_path / "prefixed")
    assert any("pre_tokenizer.add_prefix_space=true" in line for line in result.report)
    _, _, folder = build(tmp_path, "classifier")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(dict(hub.ROBERTA_TOKENIZER_CONFIG, mask_token="[MASK]"), f)
    one_line_error(folder, str(tmp_path / "out"), "tokenizer_config.json: mask_token is "
                   "'[MASK]'; RoBERTa's tokenizer uses '<mask>'")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(dict(hub.ROBERTA_TOKENIZER_CONFIG, add_prefix_space=True), f)
    result = import_snapshot(folder, tmp_path / "google")
    assert any("add_prefix_space=True" in line for line in result.report)


def test_a_pad_token_id_that_is_not_the_vocabularys_pad_is_warned(tmp_path):
    config, tensors, folder = build(tmp_path, "bare")
    _rewrite_config(folder, pad_token_id=0)  # vocab.json's <pad> is 1
    result = import_snapshot(folder, tmp_path / "google")
    assert any(line.startswith("warning: pad_token_id 0 of the config is not the id of <pad> in")
               for line in result.report)


def test_segment_ids_past_type_vocab_size_are_refused(tmp_path):
    _, _, folder = build(tmp_path, "bare")
    model = RobertaModel.from_pretrained(folder)
    feats = features(1, 2)  # segment 1, but type_vocab_size is 1
    with pytest.raises(ValueError, match=r"segment_ids must be in \[0, type_vocab_size=1\) of "
                                         r"the roberta config .*got 0\.\.1"):
        model(feats)


def test_the_usable_length_and_no_more(tmp_path):
    """14 positions, pad id 1: 12 tokens use rows 2..13; 13 are refused (with pad id 0, 13)."""
    for case, usable in (("bare", 12), ("classifier-pad0-types2-json", 13)):
        config, tensors, folder = build(tmp_path, case)
        feats = features(config["pad_token_id"], 1, length=usable)
        feats["input_ids"][0] = feats["input_ids"][0, :2].tolist() + [300] * (usable - 2)
        feats["input_mask"][0] = 1
        ref = hub.roberta_reference_outputs(config, tensors, feats["input_ids"],
                                            feats["segment_ids"],
                                            feats["input_mask"].astype(float))
        compare(forward(tmp_path, config["architectures"][0], folder, feats), ref, feats)
        longer = {k: np.pad(v, ((0, 0), (0, 1)), constant_values=config["pad_token_id"]
                            if k == "input_ids" else 0) for k, v in feats.items()}
        model = RobertaModel.from_pretrained(folder)
        with pytest.raises(ValueError, match=f"sequence length {usable + 1} is too long: "
                                             f"RoBERTa takes at most {usable} tokens"):
            model(longer)


def test_export_needs_the_merges(tmp_path):
    """RoBERTa's export takes merges.txt beside the vocabulary or the checkpoint, or
    --merges_file; another family's refuses --merges_file."""
    prefix = checkpoints.save_original_checkpoint(RobertaModel(tiny_config()),
                                                  tmp_path / "m/model.ckpt")
    (tmp_path / "v").mkdir()
    (tmp_path / "v/vocab.json").write_text(json.dumps(hub.roberta_vocab()), encoding="utf-8")
    with pytest.raises(HubError, match=r"no merges.txt beside checkpoint .*: pass --merges_file"):
        export_checkpoint(prefix, None, tmp_path / "v/vocab.json", tmp_path / "out")
    (tmp_path / "v/merges.txt").write_text("#version: 0.2\nĠ t\nnot-a-merge\n", encoding="utf-8")
    with pytest.raises(VocabError, match=r"merges file .*merges.txt:3: expected two symbols"):
        export_checkpoint(prefix, None, tmp_path / "v/vocab.json", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    bert = BertModel(tiny_config_dict(vocab_size=5))
    prefix = checkpoints.save_original_checkpoint(bert, tmp_path / "b/model.ckpt")
    (tmp_path / "b/vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    with pytest.raises(HubError, match="--merges_file: .*bert_config.json is a bert model, whose "
                                       "tokenizer has no merges"):
        export_checkpoint(prefix, None, None, tmp_path / "out", merges_file=tmp_path / "x.txt")


# --- recorded from Transformers (tests/data/roberta_hub/make_expected.py) ---------------------

ROBERTA_HUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "roberta_hub")
RECORDED = {"masked_lm": "RobertaForMaskedLM", "classifier": "RobertaForSequenceClassification",
            "tagging": "RobertaForTokenClassification", "qa": "RobertaForQuestionAnswering",
            "model_pad0": "RobertaModel"}


@pytest.mark.parametrize("case", list(RECORDED))
def test_snapshots_saved_by_transformers(tmp_path, case):
    """Snapshots Transformers 5.24 saved, and its outputs: our forward of the import within
    1e-5 at every position, the export bit for bit (so Transformers loads it with the same
    outputs: make_expected.py --check measured 0 difference)."""
    folder = tmp_path / case
    shutil.copytree(os.path.join(ROBERTA_HUB, case), folder,
                    ignore=shutil.ignore_patterns("outputs.npz"))
    want = dict(np.load(os.path.join(ROBERTA_HUB, case, "outputs.npz")))
    pad = json.loads((folder / "config.json").read_text())["pad_token_id"]
    (folder / "vocab.json").write_text(json.dumps(hub.roberta_vocab(pad), ensure_ascii=False),
                                       encoding="utf-8")
    shutil.copy(os.path.join(hub.ROBERTA_TOKENIZER_DIR, "merges.txt"), folder)
    feats = {"input_ids": want["input_ids"], "input_mask": want["attention_mask"],
             "segment_ids": want["token_type_ids"],
             "masked_lm_positions": np.tile(np.arange(want["input_ids"].shape[1]), (2, 1))}
    out = forward(tmp_path, RECORDED[case], str(folder), feats)
    ref = {"sequence_output": want["last_hidden_state"].astype(np.float64)}
    for key in ("pooler_output", "start_logits", "end_logits"):
        if key in want:
            ref[key.replace("pooler_", "pooled_")] = want[key]
    ref["mlm_logits" if case == "masked_lm" else "logits"] = want.get("logits")
    compare(out, {k: v for k, v in ref.items() if v is not None}, feats)
    if not (tmp_path / "google").exists():  # (forward imported the masked LM there)
        import_snapshot(folder, tmp_path / "google")
    export_checkpoint(tmp_path / "google", None, None, tmp_path / "back")
    saved = SafetensorsFile(folder / "model.safetensors").read_all()
    back = SafetensorsFile(tmp_path / "back/model.safetensors").read_all()
    assert sorted(back) == sorted(saved)
    for name, value in saved.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def test_tokenizer_ids_against_autotokenizer_on_our_export():
    """AutoTokenizer (Transformers 5.24, RobertaTokenizer) read the tokenizer files our export
    writes (vocab.json, merges.txt, tokenizer_config.json with <mask>'s left strip) and gave
    these ids: ours are the same, special tokens and pairs included."""
    from bert_tf.roberta.tokenization import RobertaTokenizer

    recorded = json.loads(open(os.path.join(ROBERTA_HUB, "tokens.json"), encoding="utf-8").read())
    assert recorded["class"] == "RobertaTokenizer"
    tokenizer = RobertaTokenizer(os.path.join(hub.ROBERTA_TOKENIZER_DIR, "vocab.json"))
    special = tokenizer.special_tokens
    cls, sep = tokenizer.vocab[special.cls], tokenizer.vocab[special.sep]
    for text, ids in recorded["texts"].items():
        assert special.lay_out(tokenizer.tokenize_to_ids(text), [], cls, sep)[0] == ids, text
    for a, b, ids in recorded["pairs"]:
        laid_out, _ = special.lay_out(tokenizer.tokenize_to_ids(a), tokenizer.tokenize_to_ids(b),
                                      cls, sep)
        assert laid_out == ids, (a, b)
