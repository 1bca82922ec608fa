"""The tagging model side (TaggingTask through the Trainer) against the reference tagger on
the ORIGINAL modeling.BertModel and create_optimizer, recorded by
tests/data/tagging_model/make_expected.py on the golden tiny model (issue 22's recipe): the
records, the forward pass, and three optimizer steps with warmup (losses, learning rates,
every weight and Adam moment); and each replica's share of the loss (averaged over the
predicted words of the global batch, not of the replica's part), which mirrored runs rely on.
So the two taggers differ only where docs/tagging.md says."""

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import golden_path

from bert_tf.bert.config import BertConfig
from bert_tf.bert.tokenization import FullTokenizer
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.data import conll
from bert_tf.tasks.tagging import TaggingTask
from bert_tf.training.trainer import Trainer, TrainerOptions
from test_training_helpers import (
    assert_close, assert_matches_golden, assert_replica_shares_add_up, init_checkpoint_with_head,
    read_checkpoint, record_batches, zero_gradient_bounds,
)

DATA = Path(__file__).resolve().parent / "data" / "tagging_model"
EXPECTED = json.loads((DATA / "expected.json").read_text())
LABELS = EXPECTED["labels"]
MAX_SEQ_LENGTH = EXPECTED["max_seq_length"]
RECORDED_STEPS = len(EXPECTED["steps"])


def golden_config():
    return BertConfig.from_json_file(golden_path("train", "bert_config.json"))


def windows():
    sentences = conll.read_conll(DATA / "train.txt")
    assert conll.label_list(sentences) == LABELS
    tokenizer = FullTokenizer(str(golden_path("train", "vocab.txt")), do_lower_case=True)
    return conll.convert_sentences(sentences, LABELS, tokenizer, MAX_SEQ_LENGTH, 64)


def make_task():
    # The recording has no head dropout (and the golden config none in the encoder).
    return TaggingTask(LABELS, MAX_SEQ_LENGTH, dropout_rate=0.0)


@pytest.fixture(scope="module")
def init_checkpoint(tmp_path_factory):
    """The golden init.ckpt with the recording's head (head_init.npz)."""
    prefix, lacking = init_checkpoint_with_head(
        make_task().build_model(golden_config()), DATA / "head_init.npz",
        tmp_path_factory.mktemp("init") / "bert_model.ckpt")
    assert lacking == ["bert_tf/tagging/output_bias", "bert_tf/tagging/output_weights"]
    return prefix


def test_records_are_the_references_features():
    """One window per sentence here: ids, mask, and label id and weight 1 at each word's
    first piece, as the reference builds them."""
    ours = windows()
    for name, expected in EXPECTED["features"].items():
        np.testing.assert_array_equal([getattr(w, name) for w in ours], expected, err_msg=name)


def test_forward_matches_the_reference(init_checkpoint):
    model = make_task().build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    features = {k: np.array(v, np.int32) for k, v in EXPECTED["features"].items()
                if k in ("input_ids", "input_mask")}
    features["segment_ids"] = np.zeros_like(features["input_ids"])
    assert_close(model(features, training=False)["logits"], EXPECTED["forward"], "logits")


@pytest.mark.slow  # a Trainer run (about 10 s)
def test_three_steps_match_the_reference(tmp_path, init_checkpoint):
    records = str(tmp_path / "train.tf_record")
    conll.write_windows(records, windows())
    trainer = Trainer(golden_config(), make_task(), TrainerOptions(
        output_dir=str(tmp_path / "out"), init_checkpoint=init_checkpoint,
        train_batch_size=EXPECTED["batch_size"], learning_rate=EXPECTED["learning_rate"],
        num_train_steps=EXPECTED["num_train_steps"],
        num_warmup_steps=EXPECTED["num_warmup_steps"], save_checkpoints_steps=RECORDED_STEPS,
        iterations_per_loop=RECORDED_STEPS, shuffle_buffer_size=0, keep_checkpoint_max=0))
    history = []
    trainer.train([records], step_callback=lambda step, values: history.append((step, values)))
    for (step, ours), expected in zip(history, EXPECTED["steps"]):
        assert step == expected["step"]
        assert ours["total_loss"] == pytest.approx(expected["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(expected["learning_rate"], rel=1e-6,
                                                      abs=1e-12), step
    prefix = tmp_path / "out" / f"model.ckpt-{RECORDED_STEPS}"
    ours = read_checkpoint(prefix)
    reference = {name.replace("|", "/"): value
                 for name, value in np.load(DATA / "after_3_steps.npz").items()}
    # The pooler gets no gradient in either: no Adam slots, weights unchanged.
    assert not [n for n in reference if n.startswith("bert/pooler/") and "adam" in n]
    # The key biases' true gradient is zero: bounded by the rounding noise Adam amplifies.
    task = make_task()
    bounds = zero_gradient_bounds(
        task, golden_config(), [init_checkpoint, prefix],
        record_batches([records], task, EXPECTED["batch_size"], RECORDED_STEPS),
        [s["learning_rate"] for s in EXPECTED["steps"]])
    assert_matches_golden(ours, reference, zero_gradients=bounds)


def test_replica_shares_of_the_loss_add_up_to_the_batch_loss(tmp_path, init_checkpoint):
    """Batches of 4 sentences split 2 + 2 over two replicas, whose shares hold different
    numbers of predicted words: each replica's loss is its words' cross-entropy over the
    global batch's word count, so the shares add up to the one-device loss. (This replaces a
    mirrored run: the trainer's mirrored step itself is task-independent, tested by
    tests/test_classification.py, tests/test_training_loop.py and
    tests/test_training_composition.py.)"""
    records = str(tmp_path / "train.tf_record")
    conll.write_windows(records, windows())
    per_window = [sum(w.label_weights) for w in windows()]
    assert per_window[0] + per_window[1] != per_window[2] + per_window[3]
    task = make_task()
    model = task.build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    (features,) = record_batches([records], task, EXPECTED["batch_size"], 1)
    assert_replica_shares_add_up(task, model(features, training=False), features, split=2)
