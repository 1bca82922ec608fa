"""Shared helpers of the training tests: tiny configs, synthetic pretraining records, subprocess
drivers of pretraining and fine-tuning (strategies need the CPU split into logical devices
before TensorFlow starts, which must not leak into other tests of the same pytest process), a
SIGKILL of a run mid-way, and the comparison of checkpoints with the original's."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DIR

REPO = Path(__file__).resolve().parents[1]
SHARED = SHARED_DIR
GOLDEN_TRAIN = SHARED / "golden" / "train"

TINY_CONFIG = {
    "vocab_size": 97,
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 32,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}


def write_config(path, **overrides):
    config = dict(TINY_CONFIG, **overrides)
    Path(path).write_text(json.dumps(config))
    return str(path)


def write_records(path, num_records, max_seq_length=16, max_predictions_per_seq=3,
                  vocab_size=97, seed=0):
    """Random but well-formed pretraining records (tf.train.Example) at `path`."""
    import tensorflow as tf

    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(num_records):
            length = rng.randint(6, max_seq_length + 1)
            ids = np.zeros(max_seq_length, np.int64)
            ids[:length] = rng.randint(5, vocab_size, size=length)
            mask = np.zeros(max_seq_length, np.int64)
            mask[:length] = 1
            segments = np.zeros(max_seq_length, np.int64)
            segments[length // 2:length] = 1
            k = rng.randint(1, max_predictions_per_seq + 1)
            positions = np.zeros(max_predictions_per_seq, np.int64)
            positions[:k] = np.sort(rng.choice(np.arange(1, length), size=k, replace=False))
            labels = np.zeros(max_predictions_per_seq, np.int64)
            labels[:k] = rng.randint(5, vocab_size, size=k)
            weights = np.zeros(max_predictions_per_seq, np.float32)
            weights[:k] = 1.0

            def ints(values):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

            feature = {
                "input_ids": ints(ids),
                "input_mask": ints(mask),
                "segment_ids": ints(segments),
                "masked_lm_positions": ints(positions),
                "masked_lm_ids": ints(labels),
                "masked_lm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=list(weights))),
                "next_sentence_labels": ints([rng.randint(0, 2)]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return str(path)


def tiny_options(tmp_path, output_dir, **overrides):
    """Driver arguments of a small run on synthetic data."""
    data = tmp_path / "data.tfrecord"
    if not data.exists():
        write_records(data, 64)
    args = {
        "bert_config_file": str(tmp_path / "bert_config.json"),
        "input_files": [str(data)],
        "output_dir": str(output_dir),
        "max_seq_length": 16,
        "max_predictions_per_seq": 3,
        "train_batch_size": 4,
        "eval_batch_size": 4,
        "learning_rate": 1e-3,
        "num_warmup_steps": 2,
        "num_train_steps": 6,
        "save_checkpoints_steps": 3,
        "iterations_per_loop": 2,
        "shuffle_buffer_size": 10,
        "seed": 7,
    }
    if not Path(args["bert_config_file"]).exists():
        write_config(args["bert_config_file"])
    args.update(overrides)
    return args


# The driver scripts run one training job in a fresh process; argv[1] is a JSON dict of the
# trainer's options plus "bert_config_file", "strategy", "cpus", "do_train", "do_eval" and
# "dump_weights" (an .npz path for the final weights). The start (devices, strategy, config)
# and the end (train or restore, eval, RESULT line) are shared; the middle builds the task's
# trainer, `train_args` and `evaluate`.
_DRIVER_START = r"""
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
args = json.loads(sys.argv[1])
import tensorflow as tf
cpus = args.pop("cpus", 1)
if cpus > 1:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * cpus)
from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import original_variable_map
from bert_tf.training.strategy import create_strategy
import numpy as np
import pytest
strategy = create_strategy(args.pop("strategy", "default"))
do_train, do_eval = args.pop("do_train", True), args.pop("do_eval", False)
dump = args.pop("dump_weights", None)
config = BertConfig.from_json_file(args.pop("bert_config_file"))
"""

_DRIVER_END = r"""
history = []
if do_train:
    checkpoint = trainer.train(*train_args, step_callback=lambda s, v: history.append([s, v]))
else:
    checkpoint = trainer.restore(weights_only=True)
results = evaluate() if do_eval else None
if dump:
    np.savez(dump, **{n.replace("/", "|"): v.numpy()
                      for n, v in original_variable_map(trainer.model).items()})
print("RESULT " + json.dumps({"checkpoint": checkpoint, "history": history,
                              "results": {k: float(v) for k, v in (results or {}).items()}}),
      flush=True)
"""

# Pretraining (bert_tf.bert.pretraining_task): the arguments are PretrainingOptions.
DRIVER = _DRIVER_START + r"""
from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions
from bert_tf.training import input_pipeline
options = PretrainingOptions(**args)
input_pipeline.check_records(options.input_files, options.max_seq_length,
                             options.max_predictions_per_seq)
trainer = Pretrainer(config, options, strategy)
train_args = ()
evaluate = trainer.evaluate
""" + _DRIVER_END

# Fine-tuning: "task" holds the task's arguments and "task_class" its class as
# "module:Class" (ClassificationTask when absent), "input_files" the training records,
# "eval_files" the eval records (every record, the last batch padded); the rest are
# TrainerOptions.
FINETUNE_DRIVER = _DRIVER_START + r"""
from bert_tf.training.trainer import Trainer, TrainerOptions
from test_training_helpers import make_task
task = make_task(args)
train_args = (args.pop("input_files"),)
eval_files = args.pop("eval_files", None)
trainer = Trainer(config, task, TrainerOptions(**args), strategy)
evaluate = lambda: trainer.evaluate(eval_files, pad_final_batch=True)
""" + _DRIVER_END

DEFAULT_TASK_CLASS = "bert_tf.tasks.classification:ClassificationTask"


def make_task(args):
    """The task of FINETUNE_DRIVER's arguments; pops "task" and "task_class" from `args`."""
    import importlib

    module, _, name = args.pop("task_class", DEFAULT_TASK_CLASS).partition(":")
    return getattr(importlib.import_module(module), name)(**args.pop("task"))


def run_in_process(args, pretraining=False):
    """What FINETUNE_DRIVER (DRIVER when `pretraining`) does under the default strategy, in
    this process (one process start, about 5 s, less): train, or restore the weights when
    "do_train" is false, then eval if asked. Returns the driver's RESULT dict."""
    from bert_tf.bert.config import BertConfig
    from bert_tf.training.trainer import Trainer, TrainerOptions

    args = dict(args)
    config = BertConfig.from_json_file(args.pop("bert_config_file"))
    do_train, do_eval = args.pop("do_train", True), args.pop("do_eval", False)
    if pretraining:
        from bert_tf.training import input_pipeline
        from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions

        options = PretrainingOptions(**args)
        input_pipeline.check_records(options.input_files, options.max_seq_length,
                                     options.max_predictions_per_seq)
        trainer = Pretrainer(config, options)
        train_args, evaluate = (), trainer.evaluate
    else:
        task = make_task(args)
        train_files, eval_files = args.pop("input_files"), args.pop("eval_files", None)
        trainer = Trainer(config, task, TrainerOptions(**args))
        train_args = (train_files,)
        evaluate = lambda: trainer.evaluate(eval_files, pad_final_batch=True)  # noqa: E731
    history = []
    if do_train:
        checkpoint = trainer.train(*train_args,
                                   step_callback=lambda s, v: history.append([s, v]))
    else:
        checkpoint = trainer.restore(weights_only=True)
    results = evaluate() if do_eval else {}
    return {"checkpoint": checkpoint, "history": history,
            "results": {k: float(v) for k, v in results.items()}}


def finetune_driver_args(output_dir, bert_config_file, task, input_files, batch_size,
                         **overrides):
    """FINETUNE_DRIVER's arguments (see above) of a 2-step run in file order, learning rate
    1e-3 with 1 warmup step; `task` is the task's arguments (and "task_class" may be among
    `overrides`)."""
    args = {
        "bert_config_file": str(bert_config_file),
        "task": task,
        "input_files": list(input_files),
        "output_dir": str(output_dir),
        "train_batch_size": batch_size,
        "eval_batch_size": batch_size,
        "learning_rate": 1e-3,
        "num_warmup_steps": 1,
        "num_train_steps": 2,
        "save_checkpoints_steps": 2,
        "iterations_per_loop": 1,
        "shuffle_buffer_size": 0,
    }
    args.update(overrides)
    return args


def assert_mirrored_equals_default(tmp_path, driver_args):
    """`driver_args(output_dir, **overrides)`'s 2-step run (from its init_checkpoint, records in
    file order) under the default strategy (in this process) and mirrored over 2 logical CPUs
    (FINETUNE_DRIVER): the same checkpoint and losses. Returns both RESULT dicts (default,
    mirrored)."""
    from bert_tf.bert.config import BertConfig
    from bert_tf.tasks.squad import SquadTask

    single = run_in_process(driver_args(tmp_path / "single"))
    mirrored = run_driver(driver_args(tmp_path / "mirrored", strategy="mirrored", cpus=2),
                          driver=FINETUNE_DRIVER)
    prefixes = [tmp_path / name / "model.ckpt-2" for name in ("single", "mirrored")]
    a, b = (read_checkpoint(prefix) for prefix in prefixes)
    assert sorted(a) == sorted(b)
    # The variables whose gradient is 0 in real arithmetic are rounding noise, which the two
    # replicas' sums change: bounded by tests/rounding_bounds.py (1 more addition).
    args = driver_args(tmp_path / "single")
    task = make_task(args)
    bounds = zero_gradient_bounds(
        task, BertConfig.from_json_file(args["bert_config_file"]),
        [args["init_checkpoint"]] + prefixes,
        record_batches(args["input_files"], task, args["train_batch_size"],
                       args["num_train_steps"]),
        [v["learning_rate"] for _, v in single["history"]],
        span_head=isinstance(task, SquadTask), extra_additions=1)
    for name in a:
        if name not in bounds.names():
            np.testing.assert_allclose(b[name], a[name], rtol=1e-5, atol=1e-7, err_msg=name)
    bounds.check(a, b)
    np.testing.assert_allclose([v["total_loss"] for _, v in mirrored["history"]],
                               [v["total_loss"] for _, v in single["history"]], rtol=1e-5)
    return single, mirrored


def assert_sigkill_and_resume_is_uninterrupted(tmp_path, driver_args, total):
    """`driver_args(output_dir)`'s run of `total` steps (a checkpoint every 2): killed in
    another process after its step-4 checkpoint and resumed, it ends with the uninterrupted
    run's checkpoint, bit for bit."""
    reference = run_in_process(driver_args(tmp_path / "reference"))
    assert reference["checkpoint"].endswith(f"model.ckpt-{total}")
    interrupted = tmp_path / "interrupted"
    kill_after_checkpoint(driver_args(interrupted), interrupted, 4,
                          random.Random(os.getpid()), driver=FINETUNE_DRIVER)
    assert not state_lists(interrupted, total)
    resumed = run_in_process(driver_args(interrupted))
    assert resumed["history"][0][0] >= 4  # it did resume
    assert_checkpoints_identical(tmp_path / "reference" / f"model.ckpt-{total}",
                                 interrupted / f"model.ckpt-{total}")


def env(extra=None):
    out = dict(os.environ)
    out["TF_CPP_MIN_LOG_LEVEL"] = "2"
    out.pop("TF_CONFIG", None)
    # The repository for bert_tf, tests/ for this module (FINETUNE_DRIVER imports it).
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests"),
                                         out.get("PYTHONPATH", "")])
    out.update(extra or {})
    return out


def run_driver(args, timeout=300, extra_env=None, driver=DRIVER):
    """Runs `driver` with `args`; returns the parsed RESULT dict (fails with the output)."""
    proc = subprocess.run(
        [sys.executable, "-c", driver, json.dumps(args)], capture_output=True, text=True,
        timeout=timeout, env=env(extra_env), cwd=str(REPO),
    )
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"driver failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return json.loads(lines[-1][len("RESULT "):])


def read_checkpoint(prefix):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def assert_checkpoints_identical(prefix_a, prefix_b):
    """The two checkpoints hold the same tensors, bit for bit."""
    a, b = read_checkpoint(prefix_a), read_checkpoint(prefix_b)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)


def state_lists(output_dir, step):
    """Whether output_dir's `checkpoint` state file lists model.ckpt-<step>."""
    state = Path(output_dir) / "checkpoint"
    return state.exists() and f"model.ckpt-{step}\"" in state.read_text()


def _latest_listed(output_dir):
    """The model_checkpoint_path line of output_dir's `checkpoint` state file, or None."""
    state = Path(output_dir) / "checkpoint"
    try:
        lines = state.read_text().splitlines()
    except FileNotFoundError:
        return None
    return next((line for line in lines if line.startswith("model_checkpoint_path")), None)


def kill_after_checkpoint(args, output_dir, step, rng, driver=DRIVER, timeout=180):
    """Starts `driver` with `args` and SIGKILLs it at a random moment (0 to 0.2 s) after the
    checkpoint of `step` appears in output_dir: mid-step, mid-save or between them; but no
    later than when the next checkpoint is listed, so that a fast run (a tiny model on a fast
    CPU) is still killed before its end. The driver is killed whatever happens here (a
    timeout, an interrupt): a failed test leaves no run behind to take the CPU of the next."""
    proc = subprocess.Popen([sys.executable, "-c", driver, json.dumps(args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
    try:
        deadline = time.time() + timeout
        while not state_lists(output_dir, step) and proc.poll() is None:
            assert time.time() < deadline, f"no checkpoint of step {step} within {timeout} s"
            time.sleep(0.01)
        listed = _latest_listed(output_dir)
        kill_at = time.time() + rng.uniform(0.0, 0.2)
        while time.time() < kill_at and _latest_listed(output_dir) == listed:
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"


def init_checkpoint_with_head(model, head_file, prefix):
    """The golden init.ckpt loaded into `model`, the head's output_weights and output_bias set
    from `head_file` (a recorder's head_init.npz), saved at `prefix`. Returns the prefix and
    the sorted names the init checkpoint lacked (the head's, for the caller to check)."""
    from conftest import golden_path

    from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint

    report = load_original_checkpoint(model, golden_path("train", "init.ckpt"))
    head = np.load(head_file)
    model.head.output_weights.assign(head["output_weights"])
    model.head.output_bias.assign(head["output_bias"])
    return save_original_checkpoint(model, prefix), sorted(report.not_in_checkpoint)


def assert_close(ours, expected, name):
    """Within 1e-5 relative to the largest magnitude of the expected values."""
    expected = np.asarray(expected, np.float32)
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(np.asarray(ours, np.float32), expected, rtol=0,
                               atol=1e-5 * scale, err_msg=name)


def assert_matches_golden(ours, golden, zero_gradients=None):
    """Every tensor within 1e-5 of the golden one, relative to the largest magnitude of that
    tensor; but the variables whose gradient is exactly zero in real arithmetic (the key
    biases, and a task's others: `zero_gradients`, a rounding_bounds.ZeroGradientBounds of the
    run) are rounding noise amplified by Adam: they and their moments are checked against the
    bounds derived in tests/rounding_bounds.py instead. Returns the worst ratios to those
    bounds."""
    assert sorted(ours) == sorted(golden)
    assert int(ours["global_step"]) == int(golden["global_step"])
    bounded = zero_gradients.names() if zero_gradients is not None else set()
    unbounded = [n for n in golden if "/key/bias" in n and n not in bounded]
    assert not unbounded, f"no rounding bounds given for the zero-gradient {unbounded}"
    for name, expected in golden.items():
        if name == "global_step" or name in bounded:
            continue
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(ours[name], expected, rtol=0, atol=1e-5 * scale, err_msg=name)
    return zero_gradients.check(ours, golden) if zero_gradients is not None else {}


def assert_checkpoint_variables(prefix, variables):
    """The checkpoint `prefix` holds exactly `variables` (a recording's list of {name, shape,
    dtype}: every variable of the original's training graph, with its dtype)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(prefix))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    assert {n: (list(shapes[n]), dtypes[n].name) for n in shapes} == {
        v["name"]: (v["shape"], v["dtype"]) for v in variables}


def assert_steps_match(steps, recorded):
    """`steps` ([(step, {total_loss, learning_rate})] of a run) are the `recorded` ones
    ([{step, loss, learning_rate}] of the original's run): the losses within 1e-5 relative,
    the learning rates 1e-6."""
    for (step, ours), want in zip(steps, recorded, strict=True):
        assert step == want["step"]
        assert ours["total_loss"] == pytest.approx(want["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(want["learning_rate"], rel=1e-6,
                                                      abs=1e-12), step


def assert_adam_steps_match(ours, original, start, steps, bounded, v_as_gradients=False,
                            beta_1=0.9, beta_2=0.999, bias_corrected=False):
    """`ours` and `original` (name -> array, after the recorded `steps`, each with its
    learning_rate, of Adam from the checkpoint `start`): every tensor within 1e-5 relative to
    the original's largest magnitude (with `v_as_gradients`, the square roots of the adam_v
    slots), but the variables `bounded` (zero gradient in real arithmetic: their moves are
    Adam's rounding noise) and their slots: their weights, ours and the original's, within
    Adam's largest move over the steps (Cauchy-Schwarz) of `start`'s.

    Adam divides each element's first moment by the square root of its own second moment, so
    an error of 1e-5 of the tensor's largest gradient is, relative to an element's update,
    A = sqrt(v_max) / (sqrt(v) + epsilon) times larger at an element whose gradients are A
    times smaller (the original's adam_v after the steps; epsilon 1e-6, the optimizers'): a
    weight's tolerance is 1e-5 of the tensor's largest magnitude times max(1, A) of its
    element (the limit, A -> infinity at v = 0, is the `bounded` variables' case). `beta_1`,
    `beta_2`, `bias_corrected`: the Adam whose largest move bounds the `bounded` weights."""
    from rounding_bounds import adam_step_bound

    largest_move = sum(s["learning_rate"] * adam_step_bound(t + 1, beta_1, beta_2, bias_corrected)
                       for t, s in enumerate(steps))
    for name, expected in original.items():
        if name == "global_step":
            continue
        base = name.rsplit("/adam_", 1)[0]
        if base in bounded:
            if name == base:
                for values in (ours[name], expected):
                    assert np.all(np.abs(values - start[name]) <= largest_move * (1 + 1e-6))
            continue
        actual = ours[name]
        if v_as_gradients and name.endswith("/adam_v"):
            # v sums squared gradients: compare it in the gradients' units.
            actual, expected = np.sqrt(actual), np.sqrt(expected)
        scale = float(np.max(np.abs(expected)))
        tolerance = 1e-5 * scale
        if name == base and f"{name}/adam_v" in original:
            root_v = np.sqrt(original[f"{name}/adam_v"].astype(np.float64))
            tolerance = tolerance * np.maximum(1.0, np.max(root_v) / (root_v + 1e-6))
        violations = np.abs(actual.astype(np.float64) - expected) > tolerance
        assert not np.any(violations), (
            f"{name}: {int(np.sum(violations))} of {violations.size} elements differ more than "
            f"their tolerance; first at {np.argwhere(violations)[0].tolist()}: ours "
            f"{actual[violations][0]!r}, the original's {expected[violations][0]!r}, tolerance "
            f"{np.broadcast_to(tolerance, actual.shape)[violations][0]!r}")


def task_loss(task):
    """loss_fn(outputs, features) of `task` on a batch that is the whole global batch."""
    def loss_fn(outputs, features):
        losses = task.compute_loss(outputs, features, task.local_normalizers(features))
        return losses[task.step_keys[0]]
    return loss_fn


def key_bias_noise(model, task, batches, extra_additions=0):
    """{key bias name: [G of each step]} (rounding_bounds.key_bias_gradient_noise) of a float32
    run of `task` over `batches` (the global batch of each step: a dict of tensors), from the
    attention's magnitudes at `model`'s current weights.

    A key bias that n > 1 layers share (ALBERT's groups) gets the sum of its n uses' gradients:
    their roundings plus n - 1 more additions, whose partial sums are at most the sum of the
    uses' A (rounding_bounds.key_bias_gradient_noise); as (sum of n A)**2 <= n * sum of A**2,
    each use counts n * (n - 1 + extra_additions) extra additions, and the uses' G add in
    quadrature (independent roundings)."""
    from bert_tf.checkpoints import original_variable_map
    from rounding_bounds import capture_attention, key_bias_gradient_noise

    heads = model.bert.config.num_attention_heads
    names = {id(variable): name for name, variable in original_variable_map(model).items()}
    noise = {}
    for batch in batches:
        uses = {}
        for capture in capture_attention(model, task_loss(task), batch):
            name = names[id(capture["layer"].key.bias)]
            assert re.search(r"/attention(_1)?/self/key/bias$", name), name
            uses.setdefault(name, []).append(capture)
        for name, captures in uses.items():
            n = len(captures)
            extra = n * (n - 1 + extra_additions)
            noise.setdefault(name, []).append(np.sqrt(sum(
                key_bias_gradient_noise(c, heads, extra_additions=extra) ** 2
                for c in captures)))
    return noise


def record_batches(input_files, task, batch_size, steps):
    """The global batches of `steps` training steps over `input_files` read in file order
    (shuffle_buffer_size 0), as int32 (and float) tensors."""
    import tensorflow as tf

    spec = task.feature_spec(is_training=True)
    dataset = tf.data.TFRecordDataset(list(input_files)).repeat().map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(batch_size)
    return [{k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in batch.items()}
            for batch in dataset.take(steps)]


def largest_noise(*noises):
    """The element-wise largest of several {name: [G of each step]} (magnitudes taken at
    several weights of one run)."""
    return {name: [np.maximum.reduce([n[name][t] for n in noises])
                   for t in range(len(noises[0][name]))] for name in noises[0]}


def trainer_state(trainer):
    """{original name: value} of a trainer's weights and optimizer slots ("<name>/<slot>")."""
    state = {n: v.numpy() for n, v in zip(trainer.variable_names, trainer.train_variables)}
    for slot, values in trainer.optimizer.get_state().items():
        state.update({f"{name}/{slot}": value for name, value in values.items()})
    return state


def pretraining_key_bias_bounds(tmp_path, args, checkpoints, learning_rates, extra_additions=0,
                                **kwargs):
    """rounding_bounds.ZeroGradientBounds of the key biases of the float32 pretraining run of
    `args` (tiny_options: records in file order) with `learning_rates`, whose checkpoints at
    the end are `checkpoints`. Its start is a new trainer of the same options (the same seed:
    the same initial weights); the attention's magnitudes are taken there and at each of
    `checkpoints`. `kwargs` go to ZeroGradientBounds (slots, first_step)."""
    from bert_tf.checkpoints import load_original_checkpoint
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions
    from rounding_bounds import ZeroGradientBounds

    args = {k: v for k, v in args.items() if k not in ("do_eval", "do_train")}
    config = BertConfig.from_json_file(args.pop("bert_config_file"))
    args["output_dir"] = str(Path(tmp_path) / "start")
    start = Pretrainer(config, PretrainingOptions(**args))
    batches = record_batches(args["input_files"], start.task, args["train_batch_size"],
                             len(learning_rates))
    start_state = trainer_state(start)
    noises = [key_bias_noise(start.model, start.task, batches, extra_additions)]
    for prefix in checkpoints:
        load_original_checkpoint(start.model, str(prefix))
        noises.append(key_bias_noise(start.model, start.task, batches, extra_additions))
    return ZeroGradientBounds(largest_noise(*noises), learning_rates, start_state, **kwargs)


def zero_gradient_bounds(task, config, checkpoints, batches, learning_rates, span_head=False,
                         extra_additions=0, start_b=None, **kwargs):
    """The rounding_bounds.ZeroGradientBounds of a float32 run of `task` (built from
    `config`) over `batches` (the global batch of each step, a dict of int32 tensors) with
    `learning_rates`: the key bias of every layer and, with `span_head`, SQuAD's output_bias
    and the last layer's output LayerNorm beta.

    The key biases' noise depends on the attention's magnitudes at the step's weights; they
    are taken at the weights of each of `checkpoints` (the run's first and last: a few steps
    of lr 1e-3 change them by well under 1%, as much as the bound) and the larger bound
    kept. The run starts from the first checkpoint (its weights and slots, if any); or, with
    `start_b` (a checkpoint prefix), run b from there. `kwargs` go to ZeroGradientBounds
    (slots, first_step)."""
    from bert_tf.checkpoints import load_original_checkpoint
    from rounding_bounds import ZeroGradientBounds, adam_step_bound, span_head_gradient_noise

    noises, span_weights = [], 0.0
    for prefix in checkpoints:
        model = task.build_model(config)
        load_original_checkpoint(model, str(prefix))
        noises.append(key_bias_noise(model, task, batches, extra_additions))
        if span_head:
            span_weights = np.maximum(span_weights, np.abs(model.head.output_weights.numpy()))
    noise = largest_noise(*noises)
    if span_head:
        # |w| over the steps: at most its start plus Adam's largest steps (decay shrinks it).
        span_weights = span_weights + sum(
            lr * adam_step_bound(t + 1) for t, lr in enumerate(learning_rates))
        batch_size, seq_length = batches[0]["input_ids"].shape
        span = span_head_gradient_noise(batch_size, seq_length, span_weights)
        noise["cls/squad/output_bias"] = [span["output_bias"]] * len(batches)
        noise[f"bert/encoder/layer_{config.num_hidden_layers - 1}/output/LayerNorm/beta"] = (
            [span["beta"]] * len(batches))
    starts = [read_checkpoint(prefix) if prefix is not None else None
              for prefix in (checkpoints[0], start_b)]
    return ZeroGradientBounds(noise, learning_rates, *starts, **kwargs)


def assert_eval_results_equal(path_a, path_b, tolerance=1e-6):
    """Two eval_results.txt files: the same keys in the same order, global_step the same
    string, every value within `tolerance` (relative, and absolute near zero)."""
    lines_a, lines_b = (Path(p).read_text().splitlines() for p in (path_a, path_b))
    pairs_a = [line.split(" = ") for line in lines_a]
    pairs_b = [line.split(" = ") for line in lines_b]
    assert [k for k, _ in pairs_a] == [k for k, _ in pairs_b]
    for (key, a), (_, b) in zip(pairs_a, pairs_b):
        if key == "global_step":
            assert a == b
        else:
            assert float(a) == pytest.approx(float(b), rel=tolerance, abs=tolerance), key


def assert_replica_shares_add_up(task, outputs, features, split):
    """What a mirrored run relies on of `task`'s loss, without the run: the batch (`outputs`
    and `features`, dicts of [B, ...] tensors) cut at row `split` into two replicas' parts;
    each part's `compute_loss` under the GLOBAL normalizers (the sum of the parts'
    `local_normalizers`, as the trainer all-reduces them) is that replica's share, and the two
    shares of every loss add up to the loss of the whole batch on one replica. A share taken
    over the part's own normalizers (a replica-local mean) would add up to about twice it.
    Float32 sums of a few terms in another order: equal within 1e-6 relative."""
    import tensorflow as tf

    def part(values, rows):
        return {k: v[rows] for k, v in values.items()}

    parts = [slice(0, split), slice(split, None)]
    local = [task.local_normalizers(part(features, rows)) for rows in parts]
    whole_normalizers = task.local_normalizers(features)
    np.testing.assert_allclose(local[0] + local[1], whole_normalizers, rtol=1e-6)
    whole = task.compute_loss(outputs, features, whole_normalizers)
    shares = [task.compute_loss(part(outputs, rows), part(features, rows),
                                tf.add(local[0], local[1])) for rows in parts]
    assert sorted(shares[0]) == sorted(whole)
    for name, value in whole.items():
        assert float(value) != 0.0, name  # a zero loss would not tell the rules apart
        np.testing.assert_allclose(float(shares[0][name]) + float(shares[1][name]),
                                   float(value), rtol=1e-6, err_msg=name)
