"""bert_tf.albert.finetuning: what the ALBERT fine-tuning commands' checkpoint loops share. (The
trainer's checkpoints and the loops themselves are tested through the commands:
tests/test_albert_run_classifier.py, test_albert_run_squad_v1.py, test_albert_run_squad_v2.py,
test_albert_run_race.py.)"""

from pathlib import Path

import pytest

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.finetuning import load_scored_checkpoint
from bert_tf.albert.squad_v2_task import SquadV2Model
from bert_tf.checkpoints import save_original_checkpoint

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v2"


class ScoreError(ValueError):
    pass


def test_load_scored_checkpoint_reads_the_step_and_refuses_a_checkpoint_without_the_head(
        tmp_path):
    """The weights and global_step of a checkpoint with the task's head (0 without a step);
    one line naming the checkpoint (or its flag) and the head's first missing variables when
    it has none; an unreadable checkpoint is the task's error too."""
    model = SquadV2Model(AlbertConfig.from_json_file(DATA / "albert_config.json"))
    assert load_scored_checkpoint(model, str(DATA / "init.ckpt"), "SQuAD 2.0", "predict",
                                  ScoreError) == 0
    weights = [w.numpy().copy() for w in model.weights]
    trained = save_original_checkpoint(model, tmp_path / "out" / "model.ckpt-7", global_step=7)
    model.head.start_dense.kernel.assign(model.head.start_dense.kernel * 2)
    assert load_scored_checkpoint(model, trained, "SQuAD 2.0", "predict", ScoreError) == 7
    assert all((w.numpy() == v).all() for w, v in zip(model.weights, weights))

    encoder = save_original_checkpoint(model.bert, tmp_path / "encoder" / "model.ckpt")
    with pytest.raises(ScoreError, match=(
            rf"^--init_checkpoint={encoder} has no SQuAD 2.0 head \(start_logits/dense/kernel, "
            r"[^,]+, [^,]+, \.\.\.\): nothing to predict with; fine-tune it first "
            r"\(--do_train\)$")):
        load_scored_checkpoint(model, encoder, "SQuAD 2.0", "predict", ScoreError,
                               flag="init_checkpoint")
    with pytest.raises(ScoreError, match=rf"^checkpoint {encoder} has no RACE head "):
        load_scored_checkpoint(model, encoder, "RACE", "evaluate", ScoreError)
    (tmp_path / "broken.index").write_bytes(b"not a checkpoint")
    with pytest.raises(ScoreError) as error:
        load_scored_checkpoint(model, str(tmp_path / "broken"), "RACE", "evaluate", ScoreError)
    assert "broken" in str(error.value) and "\n" not in str(error.value)
