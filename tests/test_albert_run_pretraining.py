"""`python -m bert_tf.albert.run_pretraining` (bert_tf/albert/run_pretraining.py) with bert_tf's
trainer flags, on the grouped ALBERT of tests/data/albert_model/grouped (L=4 over 2 groups of 2
inner blocks: each block's variables serve 2 layers) and the 16 records of
tests/data/albert_pretraining (6 to 16 pieces): a run SIGKILLed and restarted with the same
command ends bit for bit as the uninterrupted one; MirroredStrategy over 2 logical CPUs computes
the default strategy's losses and checkpoint; a run with bf16, gradient accumulation and
dynamic padding completes; dynamic padding computes the padded run's losses and weights;
bad command lines are one line.

The key biases' gradient is 0 in real arithmetic (softmax ignores a constant added to a query's
scores): their values are rounding noise that Adam amplifies, checked against the bounds of
tests/rounding_bounds.py, each of ALBERT's key biases summing the noise of the layers sharing
it (test_training_helpers.key_bias_noise)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.pretraining_task import (
    AlbertPretrainer, AlbertPretrainingOptions, AlbertPretrainingTask, run,
)
from test_training_helpers import (
    REPO, assert_checkpoints_identical, assert_close, env, kill_after_checkpoint, read_checkpoint,
    record_batches, state_lists, zero_gradient_bounds,
)

DATA = Path(__file__).resolve().parent / "data" / "albert_pretraining"
MODEL = Path(__file__).resolve().parent / "data" / "albert_model" / "grouped"
RECORDS = DATA / "records.tfrecord"
INIT = MODEL / "model.ckpt"
# The variables of the original's LAMB training graph: weights, adam_m/adam_v, global_step.
ORIGINAL_VARIABLES = {v["name"] for v in json.loads(
    (DATA / "expected.json").read_text())["runs"]["lamb"]["variables"]}
SEQ_LENGTH, PREDICTIONS, BATCH = 16, 3, 4

# The command in a fresh process, as `python -m bert_tf.albert.run_pretraining <argv>` (argv: the
# JSON list in sys.argv[1]); MIRRORED_DRIVER first splits the CPU into 2 logical devices, which
# must happen before TensorFlow starts (and must not leak into this pytest process).
COMMAND_DRIVER = """\
import json, runpy, sys
sys.argv = ["run_pretraining.py"] + json.loads(sys.argv[1])
runpy.run_module("bert_tf.albert.run_pretraining", run_name="__main__")
"""
MIRRORED_DRIVER = """\
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
""" + COMMAND_DRIVER


def command_line(output_dir, config_file=MODEL / "albert_config.json", input_file=RECORDS,
                 **flags):
    """The command's flags of a LAMB run from the grouped model's checkpoint (the schedule of
    tests/data/albert_pretraining's LAMB run: lr 0.01, polynomial decay of power 2, no
    warmup); `flags` add to or override them (True: a bare --flag)."""
    args = dict(albert_config_file=config_file, input_file=input_file, output_dir=output_dir,
                init_checkpoint=INIT, max_seq_length=SEQ_LENGTH,
                max_predictions_per_seq=PREDICTIONS, train_batch_size=BATCH,
                learning_rate=0.01, poly_power=2.0, num_warmup_steps=0, do_train=True)
    args.update(flags)
    return [f"--{k}" if v is True else f"--{k}={v}" for k, v in args.items()]


def run_command(argv, driver=COMMAND_DRIVER):
    """The command in a fresh process; returns its stderr (the log) after checking it ended
    well."""
    proc = subprocess.run([sys.executable, "-c", driver, json.dumps(argv)], capture_output=True,
                          text=True, env=env(), cwd=str(REPO), timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stderr


def options(output_dir, input_file=RECORDS, **overrides):
    """`AlbertPretrainingOptions` of `command_line`'s run (the flags' defaults where it
    gives none)."""
    args = dict(input_files=[str(input_file)], output_dir=str(output_dir),
                init_checkpoint=str(INIT), max_seq_length=SEQ_LENGTH,
                max_predictions_per_seq=PREDICTIONS, train_batch_size=BATCH,
                learning_rate=0.01, poly_power=2.0, num_warmup_steps=0,
                iterations_per_loop=1000, shuffle_buffer_size=100)
    args.update(overrides)
    return AlbertPretrainingOptions(**args)


def config(config_file=MODEL / "albert_config.json"):
    return AlbertConfig.from_json_file(config_file)


def run_here(options_, config_=None):
    """The run of `options_` (training) in this process, as the command's `run`; returns
    (last checkpoint, [(step, values)])."""
    history = []
    checkpoint, _ = run(config_ or config(), options_, do_train=True,
                        step_callback=lambda step, values: history.append((step, values)))
    return checkpoint, history


def event_scalars(logdir, tag):
    """{step: value} of the scalar `tag` in the TensorBoard events under `logdir`."""
    from tensorflow.core.util import event_pb2

    values = {}
    for path in Path(logdir).glob("events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(str(path)):
            event = event_pb2.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


def write_sorted_records(path):
    """The fixture's records, shortest first (6, 6, 7, 7 | 7, 9, 11, 12 | 13, 14, 14, 14 |
    15, 15, 16, 16 pieces): in file order, batches of 4 are cut to 8, 12, 16 and 16 pieces
    with --padding_width=4. Returns the path."""
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(RECORDS))]
    lengths = [sum(tf.train.Example.FromString(r).features.feature["input_mask"].int64_list
                   .value) for r in records]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _, record in sorted(zip(lengths, records), key=lambda pair: pair[0]):
            writer.write(record)
    return path


def key_bias_bounds(checkpoints, input_file, learning_rates, extra_additions=0):
    """rounding_bounds.ZeroGradientBounds of the key biases of a float32 run from INIT over
    `input_file`'s records in file order with `learning_rates` (whose end is each of
    `checkpoints`): the attention's magnitudes taken at INIT and at each checkpoint."""
    task = AlbertPretrainingTask(SEQ_LENGTH, PREDICTIONS)
    batches = record_batches([str(input_file)], task, BATCH, len(learning_rates))
    return zero_gradient_bounds(task, config(), [INIT, *checkpoints], batches, learning_rates,
                                extra_additions=extra_additions)


def assert_close_but_key_biases(a, b, bounds):
    """Every tensor of checkpoint `b` within 1e-5 of `a`'s, relative to the tensor's largest
    magnitude, but the key biases and their moments: within `bounds`."""
    assert sorted(a) == sorted(b)
    assert len(bounds.names()) == 4 * 3  # 2 groups x 2 inner blocks: 4 key biases, 2 slots each
    for name in a:
        if name not in bounds.names():
            assert_close(b[name], a[name], name)
    bounds.check(a, b)


@pytest.fixture(scope="module")
def sorted_records(tmp_path_factory):
    return write_sorted_records(tmp_path_factory.mktemp("records") / "sorted.tfrecord")


# The runs compared: 4 steps from INIT, float32, records in file order, at learning rate 1e-3
# (as BERT's tests): Adam normalises each element's step to about lr whatever the size of its
# gradient, so an element whose gradient is a cancelling sum (a LayerNorm beta's, 3000x below
# its tensor's largest, off by 2e-4 between two summation orders) moves by about lr times that
# error: at the fixture's 1e-2, 1.6e-5 of its tensor's magnitude after 4 steps.
FOUR_STEPS = dict(num_train_steps=4, save_checkpoints_steps=4, iterations_per_loop=2,
                  shuffle_buffer_size=0, padding_width=4, learning_rate=1e-3)


@pytest.fixture(scope="module")
def padded_run(tmp_path_factory, sorted_records):
    """FOUR_STEPS with every batch at 16 pieces, default strategy, in this process: (its
    output_dir, [(step, values)])."""
    output_dir = tmp_path_factory.mktemp("padded")
    _, history = run_here(options(output_dir, sorted_records, dynamic_padding=False,
                                  **FOUR_STEPS))
    return output_dir, history


@pytest.mark.slow  # a 12-step run here, the command killed after step 4, the restart here
def test_sigkill_and_restart_with_the_same_command_is_uninterrupted(tmp_path, caplog):
    """Dropout on (so its seeds resume too), the records shuffled (so the input position):
    the command killed at a random moment after its step-4 checkpoint (mid-step, mid-save or
    between) and started again with the same options, the run (3 epochs of the 16 records)
    ends with the uninterrupted run's model.ckpt-12, bit for bit. The restart runs in this
    process (the command's `run` with `options`, which the uninterrupted run shares: a
    command whose flags made other options would have trained the killed steps otherwise);
    the command's own restart over the killed run's lock file is that of every pretraining
    command (bert_tf/flags.py), tested by tests/test_run_pretraining.py."""
    config_file = tmp_path / "albert_config.json"
    config_file.write_text(json.dumps(dict(
        json.loads((MODEL / "albert_config.json").read_text()), hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1)))
    steps = dict(num_train_steps=12, save_checkpoints_steps=2, iterations_per_loop=1)
    reference, history = run_here(options(tmp_path / "reference", **steps), config(config_file))
    assert reference.endswith("model.ckpt-12") and history[0][0] == 0

    killed = tmp_path / "killed"
    argv = command_line(killed, config_file, **steps)
    kill_after_checkpoint(argv, killed, 4, random.Random(os.getpid()), driver=COMMAND_DRIVER)
    assert not state_lists(killed, 12)
    resumed_from = int(tf.train.latest_checkpoint(str(killed)).rsplit("-", 1)[1])
    assert 4 <= resumed_from < 12
    caplog.set_level("INFO", logger="absl")  # whatever verbosity an earlier test left
    run_here(options(killed, **steps), config(config_file))
    assert f"model.ckpt-{resumed_from} at global_step {resumed_from}" in caplog.text
    assert_checkpoints_identical(tmp_path / "reference" / "model.ckpt-12",
                                 killed / "model.ckpt-12")
    assert set(read_checkpoint(killed / "model.ckpt-12")) == ORIGINAL_VARIABLES


@pytest.mark.slow  # the command under MirroredStrategy in a fresh process, 4 steps
def test_mirrored_on_two_cpus_equals_the_default_strategy(tmp_path, sorted_records, padded_run):
    """The command with --strategy=mirrored over 2 logical CPUs (2 records per replica) gives
    the default strategy's losses within 1e-5 and its checkpoint within 1e-5, the key biases
    within the bounds of their rounding noise (the replicas' sum: 1 more addition)."""
    default_dir, history = padded_run
    log = run_command(command_line(tmp_path / "mirrored", input_file=sorted_records,
                                   strategy="mirrored", dynamic_padding="false", **FOUR_STEPS),
                      driver=MIRRORED_DRIVER)
    assert "over 2 replica(s)" in log
    mirrored = event_scalars(tmp_path / "mirrored" / "train", "loss")
    assert sorted(mirrored) == [1, 2, 3, 4]
    np.testing.assert_allclose([mirrored[s + 1] for s, _ in history],
                               [v["total_loss"] for _, v in history], rtol=1e-5)
    prefixes = [default_dir / "model.ckpt-4", tmp_path / "mirrored" / "model.ckpt-4"]
    a, b = (read_checkpoint(p) for p in prefixes)
    assert set(a) == ORIGINAL_VARIABLES
    bounds = key_bias_bounds(prefixes, sorted_records, [v["learning_rate"] for _, v in history],
                             extra_additions=1)
    assert_close_but_key_biases(a, b, bounds)


@pytest.mark.slow  # a 4-step run of a tiny model here
def test_bf16_with_accumulation_and_dynamic_padding(tmp_path, sorted_records, padded_run,
                                                    caplog):
    """bf16, 2 micro-batches per step and batches cut to their longest record (8 and 12 of 16
    pieces for the first two), in this process: the run completes with finite losses, not
    float32's (bf16 computed them), and writes the original's variables (adam_m/adam_v slots,
    no loss scale), finite. (Under MirroredStrategy this composition is run by
    tests/test_electra_pretraining.py and tests/test_training_composition.py; ALBERT's
    mirrored run by the test above: the strategy does not depend on the model.)"""
    caplog.set_level("INFO", logger="absl")  # whatever verbosity an earlier test left
    _, history = run_here(options(tmp_path / "out", sorted_records, mixed_precision="bf16",
                                  gradient_accumulation_steps=2, dynamic_padding=True,
                                  **FOUR_STEPS))
    assert "dynamic padding: each batch cut to its longest sequence" in caplog.text
    losses = [v["total_loss"] for _, v in history]
    assert [s for s, _ in history] == [0, 1, 2, 3] and np.all(np.isfinite(losses))
    float32_loss = padded_run[1][0][1]["total_loss"]  # the same weights and records
    assert abs(losses[0] - float32_loss) > 1e-5 * float32_loss
    saved = read_checkpoint(tmp_path / "out" / "model.ckpt-4")
    assert set(saved) == ORIGINAL_VARIABLES and int(saved["global_step"]) == 4
    assert all(np.all(np.isfinite(v)) for v in saved.values())
    init = read_checkpoint(INIT)
    assert not np.array_equal(saved["bert/embeddings/word_embeddings"],
                              init["bert/embeddings/word_embeddings"])


@pytest.mark.slow  # a 4-step run of a tiny model here
def test_dynamic_padding_equals_the_padded_run(tmp_path, sorted_records, padded_run):
    """Batches cut to multiples of 4 (8, 12, 16, 16 pieces): the losses of batches of 16 pieces
    within 1e-5, and their weights."""
    padded_dir, padded = padded_run
    stream = AlbertPretrainer(config(), options(tmp_path / "unused", sorted_records,
                                                **FOUR_STEPS)) \
        .input_stream([str(sorted_records)], BATCH, is_training=True)
    assert [stream.get_next()["input_ids"].shape[1] for _ in range(4)] == [8, 12, 16, 16]
    _, cut = run_here(options(tmp_path / "cut", sorted_records, dynamic_padding=True,
                              **FOUR_STEPS))
    for key in AlbertPretrainingTask.step_keys:
        np.testing.assert_allclose([v[key] for _, v in cut], [v[key] for _, v in padded],
                                   rtol=1e-5, err_msg=key)
    prefixes = [padded_dir / "model.ckpt-4", tmp_path / "cut" / "model.ckpt-4"]
    bounds = key_bias_bounds(prefixes, sorted_records, [v["learning_rate"] for _, v in padded])
    assert_close_but_key_biases(*(read_checkpoint(p) for p in prefixes), bounds)


@pytest.mark.parametrize("extra, message", [
    (["--masked_lm_budget=0.2"], "run_pretraining.py: error: --masked_lm_budget=0.2"),
    (["--learning_rat=1"], "Unknown command line flag 'learning_rat'"),
])
def test_command_line_refuses_in_one_line(tmp_path, extra, message):
    proc = subprocess.run(
        [sys.executable, "-m", "bert_tf.albert.run_pretraining",
         f"--albert_config_file={MODEL / 'albert_config.json'}",
         f"--input_file={RECORDS}", f"--output_dir={tmp_path / 'out'}",
         "--max_seq_length=16", "--max_predictions_per_seq=3", *extra],
        capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("model.ckpt*"))
