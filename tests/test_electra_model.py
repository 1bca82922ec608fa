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
from bert_tf.electra.config import discriminator_config, generator_config
from bert_tf.electra.hparams import PretrainingHparams
from bert_tf.electra.pretraining import ElectraPretrainingModel, electra_loss
from bert_tf.electra.pretraining_task import ElectraPretrainingTask, objective_from_hparams
from conftest import load_recorder, shared_random_draws
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


RECORDER = load_recorder("electra_model")
FixedDraws = RECORDER.fixed_draws_class()


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


@pytest.mark.parametrize("case", ("electra", "untied_disallow"))
def test_every_random_weight_is_drawn_independently(case):
    """The generator's and the discriminator's weights too (see the test of the same name in
    test_layers.py)."""
    hp = hparams(case)
    model = ElectraPretrainingModel(discriminator_config(hp), generator_config(hp),
                                    objective(case))
    assert len(model.weights) > 20
    assert shared_random_draws(model.weights) == []


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
    init_checkpoint = str(DATA / case / "init.ckpt") if init else None
    return RECORDER.our_trainer(expected(case)["hparams"], DATA, output_dir, draws,
                                init_checkpoint)


def run_steps(trainer, fixed, draws, steps):
    return RECORDER.our_steps(trainer, fixed, draws, list(steps))


def assert_steps_match(history, recorded, keys):
    for ours, want in zip(history, recorded, strict=True):
        for key in keys:
            assert ours[key] == pytest.approx(want[key], rel=1e-5), (want["step"], key)
        assert ours["learning_rate"] == pytest.approx(want["learning_rate"], rel=1e-6,
                                                      abs=1e-12), want["step"]


def zero_gradient_bounds(case, draws, prefixes, steps, learning_rates, start):
    """rounding_bounds.ZeroGradientBounds of the key biases of the generator and the
    discriminator over recording `steps` (their true gradient is zero: softmax ignores a
    constant added to all scores of a query, so Adam turns rounding noise into their moves).
    The attention's magnitudes are taken at the weights of each checkpoint of `prefixes` (the
    run's first and last) and the larger noise kept; `start` is the run's start ({name: value},
    with slots for a resumed run)."""
    from rounding_bounds import ZeroGradientBounds, capture_attention, key_bias_gradient_noise
    from test_training_helpers import largest_noise

    noises = []
    for prefix in prefixes:
        fixed = FixedDraws(draws)
        model = model_of(case, fixed)
        checkpoints.load_original_checkpoint(model, prefix)
        names = {id(v): n for n, v in checkpoints.original_variable_map(model).items()}

        def loss_fn(outputs, features):
            return electra_loss(outputs, features["input_mask"], objective(case))["total_loss"]

        noise = {}
        for step in steps:
            fixed.set_step(step)
            for capture in capture_attention(model, loss_fn, batch(draws, step)):
                layer = capture["layer"]
                noise.setdefault(names[id(layer.key.bias)], []).append(
                    key_bias_gradient_noise(capture, layer.num_attention_heads))
        noises.append(noise)
    return ZeroGradientBounds(largest_noise(*noises), learning_rates, start)


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
    init = str(DATA / case / "init.ckpt")
    bounds = zero_gradient_bounds(case, draws, [init, prefix], range(RECORDED_STEPS),
                                  [s["learning_rate"] for s in want["steps"]],
                                  read_checkpoint(init))
    assert_matches_golden(ours, original, zero_gradients=bounds)
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
    prefix = trainer.save()
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / case / "after_6_steps.npz"))
    original["global_step"] = np.int64(want["continued_global_step"])
    start = str(tmp_path / "model.ckpt-3")
    bounds = zero_gradient_bounds(case, draws, [start, prefix],
                                  range(RECORDED_STEPS, 2 * RECORDED_STEPS),
                                  [s["learning_rate"] for s in want["continued_steps"]],
                                  read_checkpoint(start))
    assert_matches_golden(ours, original, zero_gradients=bounds)


def test_our_checkpoint_trains_on_in_the_original():
    """Recorded by make_expected.py: the original's Saver restored bert_tf's checkpoint after
    bert_tf's 3 steps (every variable of its graph found, shapes and dtypes matching) and its
    steps 4-6 from there equal its steps 4-6 from its own checkpoint."""
    want = expected("electra")
    for ours, own in zip(want["ours_then_original_steps"], want["continued_steps"], strict=True):
        assert ours["step"] == own["step"]
        for key in ("total_loss", "masked_lm_loss", "disc_loss", "learning_rate"):
            assert ours[key] == pytest.approx(own[key], rel=1e-5), (own["step"], key)
    assert len(want["ours_then_original_max_difference"]) == len(want["variables"]) - 1
    worst = {k: v for k, v in want["ours_then_original_max_difference"].items() if v > 1e-5}
    # Only the key biases' Adam moments (rounding noise, see assert_matches_golden) may differ.
    assert all("/key/bias/adam_" in k for k in worst), worst


def test_eval_metrics_of_a_cut_batch_are_the_full_batchs():
    """Dynamic padding cuts eval batches to their longest row; the original's disc_auc counts
    the padding (label 0, prob 0), so the task adds the positions the cut removed."""
    case = "electra"
    # Rows 1 and 2 are padded; without row 0 (full length) the batch can be cut.
    draws = {k: v[:, 1:] for k, v in draws_of(case).items()}
    fixed = FixedDraws(draws)
    fixed.set_step(1)
    model = model_of(case, fixed)
    task = ElectraPretrainingTask(objective(case), model.generator_config, 16)
    features = batch(draws, 1)
    length = int(tf.reduce_max(tf.reduce_sum(features["input_mask"], 1)))
    results = []
    for part in (features, {k: v[:, :length] for k, v in features.items()}):
        outputs = model(part, training=False)
        normalizers = task.local_normalizers(part)
        losses = task.compute_loss(outputs, part, normalizers)
        sums = task.eval_outputs(outputs, part, losses, normalizers)
        results.append(task.finalize_eval([{k: v.numpy() for k, v in sums.items()}], 0))
    assert length < 16 and sorted(results[0]) == sorted(results[1])
    for key in results[0]:
        assert float(results[1][key]) == pytest.approx(float(results[0][key]), rel=1e-5), key
