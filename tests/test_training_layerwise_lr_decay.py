"""Layer-wise learning-rate decay (--layerwise_lr_decay, ELECTRA's run_finetuning.py).

  * the multiplier of every variable of a real classifier's name table against the formula;
  * 1.0 (and <= 0, the original's "off") adds nothing: bit-identical updates;
  * 3 optimizer steps against the original ELECTRA optimizer with decay 0.8, recorded by
    tests/data/electra_optimizer/make_expected.py;
  * one Trainer step of a tiny classifier: each variable moves by its multiplier times what it
    moves without decay.
"""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.bert.config import BertConfig
from bert_tf.tasks.classification import ClassificationTask
from bert_tf.training.lamb import Lamb
from bert_tf.training.optimizer import AdamWeightDecay, layerwise_lr_multipliers
from bert_tf.training.trainer import Trainer, TrainerOptions

DATA = Path(__file__).resolve().parent / "data"
TRAIN_RECORDS = str(DATA / "classifier_model" / "train.tf_record")  # seq 32, ids < 509
TINY = dict(vocab_size=509, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
            intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, max_position_embeddings=32, type_vocab_size=2,
            initializer_range=0.02)


def _classifier_names():
    model = ClassificationTask("mrpc", ["0", "1"], 32).build_model(BertConfig(**TINY))
    return list(checkpoints.original_variable_map(model))


def test_multipliers_of_a_classifier_follow_the_formula():
    names = _classifier_names()
    decay, layers = 0.5, TINY["num_hidden_layers"]
    got = layerwise_lr_multipliers(names, layers, decay)
    assert sorted(got) == sorted(names)
    seen = set()
    for name in names:
        if name.startswith("bert/embeddings/"):
            want = decay ** (layers + 2)
        elif name.startswith("bert/encoder/layer_"):
            i = int(name.split("/")[2][len("layer_"):])
            want = decay ** (layers + 1 - i)
        else:  # the pooler and the task head
            assert name.startswith("bert/pooler/") or name in ("output_weights", "output_bias")
            want = 1.0
        assert got[name] == pytest.approx(want, rel=1e-15), name
        seen.add(want)
    assert len(seen) == layers + 2  # embeddings, each layer, the rest


def test_multipliers_of_electra_names():
    got = layerwise_lr_multipliers(
        ["electra/embeddings/word_embeddings", "electra/embeddings_project/kernel",
         "electra/encoder/layer_0/output/dense/bias", "electra/encoder/layer_11/output/dense/bias",
         "electra/encoder/layer_1/attention/self/key/kernel", "task_specific/squad/kernel"], 12, 0.8)
    assert got["electra/embeddings/word_embeddings"] == got["electra/embeddings_project/kernel"] == 0.8 ** 14
    assert got["electra/encoder/layer_0/output/dense/bias"] == 0.8 ** 13
    assert got["electra/encoder/layer_1/attention/self/key/kernel"] == 0.8 ** 12
    assert got["electra/encoder/layer_11/output/dense/bias"] == 0.8 ** 2
    assert got["task_specific/squad/kernel"] == 1.0
    with pytest.raises(ValueError, match="layer 11, but the config has num_hidden_layers=4"):
        layerwise_lr_multipliers(["electra/encoder/layer_11/output/dense/bias"], 4, 0.8)


def test_decay_one_or_off_changes_nothing():
    names = _classifier_names()
    assert layerwise_lr_multipliers(names, 3, 1.0) == {}
    assert layerwise_lr_multipliers(names, 3, 0.0) == {}
    assert layerwise_lr_multipliers(names, 3, -1) == {}
    assert TrainerOptions(output_dir="x").layerwise_lr_decay == 1.0
    # explicit factors of 1.0 give the same bits as no factors
    rng = np.random.RandomState(0)
    init = {"a/encoder/layer_0/kernel": rng.randn(3, 4).astype(np.float32),
            "a/embeddings/bias": rng.randn(4).astype(np.float32)}
    grads = [[rng.randn(*v.shape).astype(np.float32) for v in init.values()] for _ in range(3)]
    results = []
    for multipliers in (None, {name: 1.0 for name in init}):
        variables = {n: tf.Variable(v) for n, v in init.items()}
        opt = AdamWeightDecay(learning_rate_multipliers=multipliers)
        opt.build(variables)
        for g in grads:
            opt.apply_gradients([tf.constant(x) for x in g], tf.constant(1e-2))
        results.append({n: v.numpy() for n, v in variables.items()})
    for name in init:
        np.testing.assert_array_equal(results[0][name], results[1][name])


def test_unknown_multiplier_names_are_refused():
    opt = Lamb(learning_rate_multipliers={"not/a/variable": 0.5})
    with pytest.raises(ValueError, match="not/a/variable"):
        opt.build({"x/kernel": tf.Variable(np.zeros(2, np.float32))})


def test_three_steps_equal_the_original_electra_optimizer():
    expected = np.load(DATA / "electra_optimizer" / "expected.npz")
    names = [k[len("init/"):] for k in expected.files if k.startswith("init/")]
    variables = {n: tf.Variable(expected[f"init/{n}"]) for n in names}
    opt = AdamWeightDecay(weight_decay_rate=0.01,
                          learning_rate_multipliers=layerwise_lr_multipliers(names, 2, 0.8))
    opt.build(variables)
    for k, lr in enumerate(expected["lr"]):
        opt.apply_gradients([tf.constant(expected[f"grad{k}/{n}"]) for n in names],
                            tf.constant(lr, tf.float32))
    slots = opt.slot_variables()
    for n in names:
        # The same float32 operations in the same order as the original; a few ulps allowed
        # for kernels that fuse or reorder them (3 steps of ~8 rounded operations each).
        final = expected[f"final/{n}"]
        np.testing.assert_allclose(variables[n].numpy(), final, rtol=0,
                                   atol=float(32 * np.spacing(np.abs(final).max())), err_msg=n)
        for slot in ("adam_m", "adam_v"):
            want = expected[f"{slot}/{n}"]
            np.testing.assert_allclose(slots[slot][n].numpy(), want, rtol=1e-6,
                                       atol=float(8 * np.spacing(np.abs(want).max())), err_msg=n)


def _one_step(tmp_path, decay):
    options = TrainerOptions(output_dir=str(tmp_path / f"out{decay}"), train_batch_size=4,
                             learning_rate=1e-3, num_train_steps=1, num_warmup_steps=0,
                             save_checkpoints_steps=1, iterations_per_loop=1,
                             shuffle_buffer_size=0, seed=7, layerwise_lr_decay=decay)
    trainer = Trainer(BertConfig(**TINY), ClassificationTask("mrpc", ["0", "1"], 32), options)
    table = checkpoints.original_variable_map(trainer.model)
    before = {n: np.array(v.numpy()) for n, v in table.items()}
    trainer.train([TRAIN_RECORDS])
    return before, {n: np.array(v.numpy()) for n, v in table.items()}


@pytest.mark.slow
def test_one_trainer_step_scales_each_update_by_its_multiplier(tmp_path):
    before_off, after_off = _one_step(tmp_path, 1.0)
    before, after = _one_step(tmp_path, 0.5)
    multipliers = layerwise_lr_multipliers(list(before), TINY["num_hidden_layers"], 0.5)
    for name in before:
        np.testing.assert_array_equal(before[name], before_off[name])  # same seed, same init
        delta, delta_off = after[name] - before[name], after_off[name] - before_off[name]
        assert np.abs(delta_off).max() > 0, name  # every variable trains
        # each weight's update is lr * factor * u, rounded into a weight of size |w|
        atol = float(4 * np.spacing(np.abs(before[name]).max() + 1e-2))
        np.testing.assert_allclose(delta, multipliers[name] * delta_off, rtol=1e-3, atol=atol,
                                   err_msg=name)


def test_the_fine_tuning_flag_reaches_the_trainer_options():
    """run_classifier.py, run_squad.py and run_tagging.py define their shared flags with
    define_fine_tuning_flags; trainer_kwargs hands --layerwise_lr_decay to TrainerOptions."""
    import subprocess
    import sys

    script = (
        "import tensorflow as tf\n"
        "from absl import flags\n"
        "from bert_tf import flags as shared\n"
        "shared.define_fine_tuning_flags(); shared.define_tpu_flags(); shared.define_trainer_flags()\n"
        "flags.DEFINE_integer('train_batch_size', 32, '')\n"
        "FLAGS = flags.FLAGS\n"
        "FLAGS(['x', '--layerwise_lr_decay=0.8', '--output_dir=o'])\n"
        "print(shared.trainer_kwargs(FLAGS, tf.distribute.get_strategy())['layerwise_lr_decay'])\n"
        "print(FLAGS['layerwise_lr_decay'].default)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0.8", "1.0"]
