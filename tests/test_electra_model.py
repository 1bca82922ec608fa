"""ELECTRA's model and objective against google-research/electra, recorded by
tests/data/electra_model/make_expected.py with the same random draws: the forward pass (masking,
generator logits, samples, discriminator logits, losses), 3 optimizer steps through the trainer,
the eval metrics, the checkpoint's variables, and the original's training checkpoint continued by
ours. Cases: ELECTRA with and without embedding_size, untied generator embeddings with
disallow_correct, a uniform generator, one network for generator and discriminator
(untied_generator false), and the masked LM alone (electra_objective false).
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.electra import masking
from bert_tf.electra.config import discriminator_config, generator_config
from bert_tf.electra.hparams import PretrainingHparams
from bert_tf.electra.model import ElectraPretrainingModel, electra_loss
from bert_tf.tasks.electra_pretraining import (
    ElectraOptions, ElectraPretrainer, ElectraPretrainingTask, objective_from_hparams,
)
from test_training_helpers import assert_close, assert_matches_golden, read_checkpoint

DATA = Path(__file__).resolve().parent / "data" / "electra_model"
CASES = ("electra", "electra_no_embedding_size", "untied_disallow", "uniform_generator",
         "tied_generator", "masked_lm")
VOCAB = (DATA / "vocab.txt").read_text().split()
RECORDED_STEPS = 3


def expected(case):
    return json.loads((DATA / case / "expected.json").read_text())


def draws_of(case):
    return dict(np.load(DATA / case / "draws.npz"))


class FixedDraws(masking.RandomDraws):
    """The recording's draws: positions, the [MASK] uniforms and the Gumbel uniforms of one
    step, held in variables so a traced step reads the ones assigned before it."""

    def __init__(self, draws, **kwargs):
        super().__init__(**kwargs)
        self.all = draws
        self.positions = tf.Variable(draws["positions"][0], trainable=False)
        self.mask_uniform = tf.Variable(draws["mask_uniform"][0], trainable=False)
        self.gumbel_uniform = tf.Variable(draws["gumbel_uniform"][0], trainable=False)

    def set_step(self, step):
        for name in ("positions", "mask_uniform", "gumbel_uniform"):
            getattr(self, name).assign(self.all[name][step])

    def categorical(self, logits, num_samples):
        assert num_samples == self.positions.shape[1]
        return tf.identity(self.positions)

    def uniform(self, shape):
        rank = shape.shape[0] if isinstance(shape, tf.Tensor) else len(shape)
        return tf.identity(self.mask_uniform if rank == 2 else self.gumbel_uniform)


def hparams(case):
    return PretrainingHparams("m", str(DATA), **expected(case)["hparams"])


def objective(case):
    return objective_from_hparams(hparams(case), {token: i for i, token in enumerate(VOCAB)})


def batch(draws, step):
    return {k: tf.constant(draws[k][step]) for k in ("input_ids", "input_mask", "segment_ids")}


def model_of(case, draws):
    hp = hparams(case)
    model = ElectraPretrainingModel(discriminator_config(hp), generator_config(hp),
                                    objective(case), draws=draws)
    checkpoints.load_original_checkpoint(model, DATA / case / "init.ckpt")
    return model


@pytest.mark.parametrize("case", CASES)
def test_configs_are_the_originals(case):
    """The configs of h21a's functions are the ones the original built (with ELECTRA's
    "gelu" named gelu_exact), so the recording tests them too."""
    want = expected(case)
    hp = hparams(case)
    for ours, original in ((discriminator_config(hp), want["bert_config"]),
                           (generator_config(hp), want["generator_config"])):
        if ours is None:
            assert hp.uniform_generator
            continue
        got = ours.to_dict()
        assert got.pop("model_type") == "electra"
        got.pop("embedding_size", None)
        assert got.pop("hidden_act") == "gelu_exact" and original.pop("hidden_act") == "gelu"
        if not (hp.electra_objective and hp.untied_generator):
            original = want["bert_config"]
            original.pop("hidden_act", None)
        assert got == original


@pytest.mark.parametrize("case", CASES)
def test_forward_matches_the_original(case):
    draws = draws_of(case)
    model = model_of(case, FixedDraws(draws))
    outputs = model(batch(draws, 0), training=True)
    want = dict(np.load(DATA / case / "forward.npz"))
    for name in ("masked_input_ids", "masked_lm_positions", "masked_lm_ids", "sampled_ids",
                 "fake_input_ids", "disc_labels"):
        if name in want:
            np.testing.assert_array_equal(outputs[name].numpy(), want[name], err_msg=name)
    np.testing.assert_array_equal(outputs["masked_lm_weights"].numpy(),
                                  want["masked_lm_weights"])
    for name in ("mlm_logits", "disc_logits"):
        if name in want:
            assert_close(outputs[name].numpy(), want[name], name)
    assert sorted(outputs) == sorted(set(want) | {"masked_lm_weights"})
    losses = electra_loss(outputs, batch(draws, 0)["input_mask"], objective(case))
    for name, value in expected(case)["forward_losses"].items():
        assert float(losses[name]) == pytest.approx(value, rel=1e-5), name


@pytest.mark.parametrize("case", CASES)
def test_eval_metrics_match_the_original(case):
    draws = draws_of(case)
    fixed = FixedDraws(draws)
    model = model_of(case, fixed)
    task = ElectraPretrainingTask(objective(case), model.generator_config, 16)
    batches = []
    for step in (0, 1):
        fixed.set_step(step)
        features = batch(draws, step)
        outputs = model(features, training=False)
        normalizers = task.local_normalizers(features)
        losses = task.compute_loss(outputs, features, normalizers)
        batches.append({k: v.numpy() for k, v in
                        task.eval_outputs(outputs, features, losses, normalizers).items()})
    results = task.finalize_eval(batches, 0)
    want = expected(case)["eval"]
    assert sorted(results) == sorted(want)
    for key, value in want.items():
        assert float(results[key]) == pytest.approx(value, rel=1e-5, abs=1e-6), key


def trainer_for(case, output_dir, draws, init=True):
    hp = hparams(case)
    task = ElectraPretrainingTask(objective(case), generator_config(hp), hp.max_seq_length,
                                  draws=draws)
    opts = ElectraOptions(
        output_dir=str(output_dir), input_files=[],
        init_checkpoint=str(DATA / case / "init.ckpt") if init else None,
        train_batch_size=3, learning_rate=hp.learning_rate, num_train_steps=hp.num_train_steps,
        num_warmup_steps=hp.num_warmup_steps, lr_decay_power=hp.lr_decay_power,
        weight_decay_rate=hp.weight_decay_rate, max_seq_length=hp.max_seq_length,
        save_checkpoints_steps=1000, iterations_per_loop=1, keep_checkpoint_max=0)
    return ElectraPretrainer(discriminator_config(hp), task, opts)


class Batches:
    """The recording's batches, one per call of get_next, from `first`."""

    def __init__(self, draws, first):
        data = {k: draws[k][first:] for k in ("input_ids", "input_mask", "segment_ids")}
        self.iterator = iter(tf.data.Dataset.from_tensor_slices(data))

    def get_next(self):
        return next(self.iterator)


def run_steps(trainer, fixed, draws, steps):
    train = trainer.make_train_function(Batches(draws, steps[0]))
    history = []
    for step in steps:
        fixed.set_step(step)
        values = train(tf.constant(1, tf.int32))
        history.append({k: float(v.numpy()[0]) for k, v in values.items()})
    return history


def assert_steps_match(history, recorded, keys):
    for ours, want in zip(history, recorded, strict=True):
        for key in keys:
            assert ours[key] == pytest.approx(want[key], rel=1e-5), (want["step"], key)
        assert ours["learning_rate"] == pytest.approx(want["learning_rate"], rel=1e-6,
                                                      abs=1e-12), want["step"]


# The key biases' true gradient is zero (softmax ignores a constant added to all scores of a
# query): assert_matches_golden compares their Adam moments with the scale of the slot.
@pytest.mark.parametrize("case", CASES)
def test_three_steps_match_the_original(case, tmp_path):
    draws = draws_of(case)
    fixed = FixedDraws(draws)
    trainer = trainer_for(case, tmp_path, fixed)
    assert trainer.restore() is None  # weights of init.ckpt, fresh moments, step 0
    history = run_steps(trainer, fixed, draws, range(RECORDED_STEPS))
    want = expected(case)
    assert_steps_match(history, want["steps"], trainer.task.step_keys)
    prefix = trainer.save()
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / case / "after_3_steps.npz"))
    original["global_step"] = np.int64(want["global_step"])
    assert_matches_golden(ours, original)
    # Name, shape and dtype of every variable the original's training graph has.
    reader = tf.train.load_checkpoint(prefix)
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    assert {n: (list(shapes[n]), dtypes[n].name) for n in shapes} == {
        v["name"]: (v["shape"], v["dtype"]) for v in want["variables"]}


def test_the_originals_training_checkpoint_continues_in_ours(tmp_path):
    """model.ckpt-3 written by the original's Saver: ours resumes from it (weights, Adam
    moments, global_step) and takes the original's steps 4-6."""
    case = "electra"
    for path in (DATA / case).glob("model.ckpt-3.*"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-3"\n')
    draws = draws_of(case)
    fixed = FixedDraws(draws)
    trainer = trainer_for(case, tmp_path, fixed, init=False)
    assert trainer.restore() == str(tmp_path / "model.ckpt-3")
    assert int(trainer.global_step.numpy()) == RECORDED_STEPS
    history = run_steps(trainer, fixed, draws, range(RECORDED_STEPS, 2 * RECORDED_STEPS))
    want = expected(case)
    assert_steps_match(history, want["continued_steps"], trainer.task.step_keys)
    ours = read_checkpoint(trainer.save())
    original = dict(np.load(DATA / case / "after_6_steps.npz"))
    original["global_step"] = np.int64(want["continued_global_step"])
    assert_matches_golden(ours, original)
