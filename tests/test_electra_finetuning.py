"""The fine-tuning and inference scripts on an ELECTRA discriminator checkpoint, with the config
`bert_tf.electra.config` writes: extract_features and the features export equal the original
discriminator's forward pass (recorded by tests/data/electra_model/make_expected.py); the
classifier, SQuAD and tagging models load the checkpoint's encoder and train on it."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import feature_extraction as fe
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.electra.config import discriminator_config
from bert_tf.electra.hparams import PretrainingHparams
from bert_tf.tasks.classification import ClassifierOptions, run

DATA = Path(__file__).resolve().parent / "data" / "electra_model"
CASE = DATA / "electra"
CHECKPOINT = str(CASE / "init.ckpt")
VOCAB = str(DATA / "vocab.txt")


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    hparams = json.loads((CASE / "expected.json").read_text())["hparams"]
    config = discriminator_config(PretrainingHparams("m", str(DATA), **hparams))
    path = tmp_path_factory.mktemp("electra") / "bert_config.json"
    config.to_json_file(path)
    return str(path)


def original_layers():
    return dict(np.load(CASE / "discriminator_forward.npz"))


def test_extract_features_equals_the_originals_discriminator(config_file, tmp_path):
    out = tmp_path / "features.jsonl"
    fe.run_extract_features(fe.ExtractFeaturesOptions(
        input_file=str(DATA / "extract_input.txt"), output_file=str(out),
        bert_config_file=config_file, init_checkpoint=CHECKPOINT, vocab_file=VOCAB,
        layers="-1,-2", max_seq_length=16, batch_size=2))
    want = original_layers()
    layers = want["all_encoder_layers"]  # [L, n, S, H]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(want["input_ids"])
    for row, line in enumerate(lines):
        length = int((want["input_ids"][row] > 0).sum())
        assert len(line["features"]) == length
        for position, feature in enumerate(line["features"]):
            for entry in feature["layers"]:
                expected = layers[entry["index"], row, position]
                # Both round to 6 decimals after float32 sums in another order.
                np.testing.assert_allclose(entry["values"], expected, rtol=0, atol=1e-5)


def test_features_export_equals_the_originals_discriminator(config_file):
    from bert_tf.bert.config import BertConfig
    from bert_tf.serving.export import build_export

    module, info = build_export("features", BertConfig.from_json_file(config_file), CHECKPOINT,
                                VOCAB, max_seq_length=16, layers="-1")
    lines = (DATA / "extract_input.txt").read_text().splitlines()
    pairs = [line.split(" ||| ") + [""] for line in lines]
    got = module.serve(tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs]))
    want = original_layers()
    np.testing.assert_array_equal(got["input_ids"].numpy(), want["input_ids"])
    mask = got["input_mask"].numpy().astype(bool)
    np.testing.assert_allclose(got["layers"].numpy()[:, :, 0][mask],
                               want["all_encoder_layers"][-1][mask], rtol=0, atol=1e-5)


def test_run_classifier_fine_tunes_an_electra_checkpoint(config_file, tmp_path):
    from bert_tf.bert.config import BertConfig

    rng = np.random.RandomState(0)
    words = [f"w{i}" for i in range(5, 30)]
    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 8), ("dev", 5)):
        rows = ["\t".join([" ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 3)),
                           ["no", "yes"][i % 2]]) for i in range(n)]
        (data / f"{split}.tsv").write_text("text_a\ttext_b\tlabel\n" + "\n".join(rows) + "\n")
    options = ClassifierOptions(
        data_dir=str(data), task_name="custom", vocab_file=VOCAB, output_dir=str(tmp_path / "out"),
        init_checkpoint=CHECKPOINT, max_seq_length=16, train_batch_size=4, eval_batch_size=5,
        num_train_epochs=1.0, learning_rate=1e-3, save_checkpoints_steps=2,
        iterations_per_loop=2)
    config = BertConfig.from_json_file(config_file)
    out = run(config, options, do_train=True, do_eval=True)
    assert out["checkpoint"].endswith("model.ckpt-2")
    reader = tf.train.load_checkpoint(out["checkpoint"])
    names = set(reader.get_variable_to_shape_map())
    # The discriminator's names (no pooler), the classifier's head, Adam slots.
    assert "electra/embeddings_project/kernel/adam_m" in names
    assert "output_weights" in names and not [n for n in names if "pooler" in n]
    assert not [n for n in names if n.startswith(("generator", "discriminator_predictions"))]
    results = (tmp_path / "out" / "eval_results.txt").read_text()
    assert "global_step = 2" in results


@pytest.mark.parametrize("head", ["span", "tags"])
def test_squad_and_tagging_models_load_the_encoder(config_file, head):
    from bert_tf.bert.config import BertConfig
    from bert_tf.layers.heads import SpanHead, TokenClassifierHead
    from bert_tf.models import BertTaskModel

    config = BertConfig.from_json_file(config_file)
    layer = SpanHead(config.hidden_size) if head == "span" else TokenClassifierHead(
        3, config.hidden_size)
    model = BertTaskModel(config, layer)
    report = load_original_checkpoint(model, CHECKPOINT)
    assert {n for n in report.loaded if n.startswith("electra/")} == {
        n for n in report.loaded}
    assert len(report.not_in_checkpoint) == 2  # the new head's weights and bias
    # What the checkpoint holds beyond the discriminator: the generator and both heads.
    assert all(n.startswith(("generator", "discriminator_predictions"))
               for n in report.unused_in_checkpoint)
    want = original_layers()
    features = {"input_ids": want["input_ids"], "input_mask": (want["input_ids"] > 0) * 1,
                "segment_ids": np.zeros_like(want["input_ids"])}
    assert model(features)["sequence_output"].shape == (3, 16, config.hidden_size)
