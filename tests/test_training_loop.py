"""The training loop end to end: the original's numbers (golden), strategies, exact resume."""

import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

from test_training_helpers import (
    DRIVER, GOLDEN_TRAIN, assert_checkpoints_identical, assert_matches_golden, env,
    kill_after_checkpoint, pretraining_key_bias_bounds, read_checkpoint, record_batches,
    run_driver, run_in_process, state_lists, tiny_options, zero_gradient_bounds,
)


def run_here(args):
    """DRIVER's run under the default strategy, in this process."""
    return run_in_process(args, pretraining=True)

needs_golden = pytest.mark.skipif(
    not GOLDEN_TRAIN.is_dir(), reason=f"golden fixtures absent: {GOLDEN_TRAIN} not found"
)


def golden_args(output_dir, **overrides):
    args = {
        "bert_config_file": str(GOLDEN_TRAIN / "bert_config.json"),
        "input_files": [str(GOLDEN_TRAIN / "train.tfrecord")],
        "output_dir": str(output_dir),
        "init_checkpoint": str(GOLDEN_TRAIN / "init.ckpt"),
        "max_seq_length": 32,
        "max_predictions_per_seq": 5,
        "train_batch_size": 4,
        "learning_rate": 1e-3,
        "num_warmup_steps": 0,
        "num_train_steps": 10,
        "save_checkpoints_steps": 3,
        "iterations_per_loop": 3,
        "shuffle_buffer_size": 0,
    }
    args.update(overrides)
    return args


def golden_config():
    from bert_tf.bert.config import BertConfig

    return BertConfig.from_json_file(str(GOLDEN_TRAIN / "bert_config.json"))


def golden_task():
    from bert_tf.bert.pretraining_task import PretrainingTask

    args = golden_args("unused")
    return PretrainingTask(args["max_seq_length"], args["max_predictions_per_seq"])


def golden_batches(steps):
    """The global batches of `steps` steps over the golden records in file order."""
    args = golden_args("unused")
    return record_batches(args["input_files"], golden_task(), args["train_batch_size"], steps)


@needs_golden
@pytest.mark.slow
def test_three_steps_match_the_original_and_its_checkpoint_resumes(tmp_path):
    out = run_here(golden_args(tmp_path / "out"))
    expected = json.loads((GOLDEN_TRAIN / "expected_losses.json").read_text())
    for (step, ours), golden in zip(out["history"], expected["steps"]):
        assert step == golden["step"]
        for key, golden_key in (("total_loss", "total_loss"), ("masked_lm_loss", "mlm_loss"),
                                ("next_sentence_loss", "nsp_loss"),
                                ("learning_rate", "learning_rate")):
            assert ours[key] == pytest.approx(golden[golden_key], rel=1e-5), (step, key)
    ours = read_checkpoint(tmp_path / "out" / "model.ckpt-3")
    golden = read_checkpoint(GOLDEN_TRAIN / "after_3_steps.ckpt")
    batches = golden_batches(10)
    learning_rates = [v["learning_rate"] for _, v in out["history"]]
    bounds = zero_gradient_bounds(
        golden_task(), golden_config(), [GOLDEN_TRAIN / "init.ckpt", tmp_path / "out" /
                                         "model.ckpt-3"], batches[:3], learning_rates)
    assert_matches_golden(ours, golden, zero_gradients=bounds)

    # after_3_steps.ckpt is a training checkpoint of the original run_pretraining.py
    # (weights, adam_m/v, global_step; no input position). Resuming it must continue exactly
    # like resuming our own step-3 checkpoint with its input position removed.
    ours_dir = tmp_path / "out"
    for path in ours_dir.glob("model.ckpt-*"):
        if not path.name.startswith("model.ckpt-3.") or ".input-" in path.name:
            path.unlink()
    kept = tmp_path / "ours_step3"  # the resumed run may delete its start
    kept.mkdir()
    for path in ours_dir.glob("model.ckpt-3.*"):
        shutil.copy(path, kept / path.name)
    (ours_dir / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-3"\n'
                                         'all_model_checkpoint_paths: "model.ckpt-3"\n')
    original = tmp_path / "original"
    original.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(GOLDEN_TRAIN / f"after_3_steps.ckpt{suffix}", original / f"model.ckpt-3{suffix}")
    (original / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-3"\n')
    resumed = [run_here(golden_args(d, save_checkpoints_steps=6, iterations_per_loop=4))
               for d in (ours_dir, original)]
    for out in resumed:
        assert [s for s, _ in out["history"]] == [3, 4, 5, 6, 7, 8, 9]
        assert out["history"][0][1]["learning_rate"] == pytest.approx(7e-4, rel=1e-6)
    a = read_checkpoint(ours_dir / "model.ckpt-10")
    b = read_checkpoint(original / "model.ckpt-10")
    assert int(b["global_step"]) == 10
    # Both resumed runs read the records again from the first.
    bounds = zero_gradient_bounds(
        golden_task(), golden_config(), [GOLDEN_TRAIN / "after_3_steps.ckpt",
                                         original / "model.ckpt-10", kept / "model.ckpt-3",
                                         ours_dir / "model.ckpt-10"],
        batches[:7], [v["learning_rate"] for _, v in resumed[1]["history"]], first_step=4,
        start_b=kept / "model.ckpt-3")
    assert_matches_golden(b, a, zero_gradients=bounds)


@needs_golden
@pytest.mark.slow
def test_eval_metrics_of_init_checkpoint_match_the_original_losses(tmp_path):
    expected = json.loads((GOLDEN_TRAIN / "expected_losses.json").read_text())["steps"][0]
    out = run_here(golden_args(tmp_path / "out", eval_batch_size=4, max_eval_steps=1,
                               do_train=False, do_eval=True))
    results = out["results"]
    assert results["global_step"] == 0
    assert results["loss"] == pytest.approx(expected["total_loss"], rel=1e-5)
    # The eval MLM loss is the plain weighted mean (no +1e-5 in the denominator).
    assert results["masked_lm_loss"] == pytest.approx(expected["mlm_loss"], rel=1e-5)
    assert results["next_sentence_loss"] == pytest.approx(expected["nsp_loss"], rel=1e-5)
    text = (tmp_path / "out" / "eval_results.txt").read_text().splitlines()
    assert [line.split(" = ")[0] for line in text] == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
        "next_sentence_accuracy", "next_sentence_loss",
    ]


@pytest.mark.slow
def test_mirrored_on_two_cpus_equals_default(tmp_path):
    common = dict(shuffle_buffer_size=0, num_train_steps=4, save_checkpoints_steps=4,
                  iterations_per_loop=2)
    # Dropout draws differ per replica layout, so compare without it.
    from test_training_helpers import write_config
    write_config(tmp_path / "bert_config.json", hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0)
    single = run_here(tiny_options(tmp_path, tmp_path / "single", **common))
    mirrored = run_driver(tiny_options(tmp_path, tmp_path / "mirrored", strategy="mirrored",
                                       cpus=2, **common))
    a = read_checkpoint(tmp_path / "single" / "model.ckpt-4")
    b = read_checkpoint(tmp_path / "mirrored" / "model.ckpt-4")
    assert sorted(a) == sorted(b)
    # The key biases' gradients are 0 in real arithmetic: rounding noise, which the replicas'
    # sums change (1 more addition), bounded by tests/rounding_bounds.py.
    bounds = pretraining_key_bias_bounds(
        tmp_path, tiny_options(tmp_path, tmp_path / "single", **common),
        [tmp_path / "single" / "model.ckpt-4", tmp_path / "mirrored" / "model.ckpt-4"],
        [v["learning_rate"] for _, v in single["history"]], extra_additions=1)
    for name in a:
        if name not in bounds.names():
            np.testing.assert_allclose(b[name], a[name], rtol=1e-5, atol=1e-7, err_msg=name)
    bounds.check(a, b)
    losses_a = [v["total_loss"] for _, v in single["history"]]
    losses_b = [v["total_loss"] for _, v in mirrored["history"]]
    np.testing.assert_allclose(losses_b, losses_a, rtol=1e-5)


@pytest.mark.slow
def test_sigkill_and_resume_gives_the_uninterrupted_weights(tmp_path):
    """Killed twice (after the checkpoints of steps 2 and 10) and resumed: the uninterrupted
    run's weights, bit for bit. Run once, with the composition that has the most state to
    resume (issue 6: LAMB slots, the fp16 loss scale and its growth counter, micro-batches),
    which runs everything the plain AdamW run did (the input position in a shuffled stream,
    the dropout draws, the step and the checkpoint's slots); AdamW slots' resume is also
    tested by test_three_steps_match_the_original_and_its_checkpoint_resumes and
    tests/test_classification.py's SIGKILL run."""
    total = 40
    args = dict(num_train_steps=total, save_checkpoints_steps=2, iterations_per_loop=1,
                num_warmup_steps=3, keep_checkpoint_max=3, optimizer="lamb",
                mixed_precision="fp16", gradient_accumulation_steps=2,
                loss_scale_growth_interval=7)
    reference = run_here(tiny_options(tmp_path, tmp_path / "reference", **args))
    assert reference["checkpoint"].endswith(f"model.ckpt-{total}")

    interrupted = tmp_path / "interrupted"
    rng = random.Random(os.getpid())
    for kill_after_step in (2, 10):
        kill_after_checkpoint(tiny_options(tmp_path, interrupted, **args), interrupted,
                              kill_after_step, rng)
        assert not state_lists(interrupted, total)
    resumed = run_here(tiny_options(tmp_path, interrupted, **args))
    assert resumed["checkpoint"].endswith(f"model.ckpt-{total}")
    assert resumed["history"][0][0] >= 10  # it did resume
    assert_checkpoints_identical(tmp_path / "reference" / f"model.ckpt-{total}",
                                 interrupted / f"model.ckpt-{total}")
    # keep_checkpoint_max: only the last 3 remain, with their input-state files, and nothing
    # an interrupted write left behind.
    index_files = sorted(p.name for p in interrupted.glob("model.ckpt-*.index"))
    assert not [p.name for p in interrupted.iterdir() if "tmp" in p.name or "_temp" in p.name]
    kept = [total - 4, total - 2, total]
    assert index_files == sorted([f"model.ckpt-{n}.index" for n in kept]
                                 + [f"model.ckpt-{n}.input-0-of-1.index" for n in kept])


def _free_ports(n):
    import socket

    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
# padding_width 4: each worker cuts its own batches (records of 6 to 16 pieces) to its own
# length; the gradients all-reduce alike.
@pytest.mark.parametrize("padding_width", [16, 4])
def test_multi_worker_mirrored_two_local_workers_agree(tmp_path, padding_width):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    for index in range(2):
        args = tiny_options(tmp_path, tmp_path / f"worker{index}", strategy="multi_worker_mirrored",
                            num_train_steps=4, save_checkpoints_steps=4, iterations_per_loop=2,
                            dump_weights=str(tmp_path / f"weights{index}.npz"), do_eval=True,
                            eval_batch_size=8, max_eval_steps=100,
                            padding_width=padding_width)
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        procs.append(subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps(args)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env({"TF_CONFIG": tf_config}),
        ))
    outputs = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=240)
            assert proc.returncode == 0, stderr[-4000:]
            outputs.append(json.loads(
                [l for l in stdout.splitlines() if l.startswith("RESULT ")][-1][7:]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    # Worker 0 is the chief and writes the checkpoint; worker 1 only its input position.
    chief = read_checkpoint(tmp_path / "worker0" / "model.ckpt-4")
    assert int(chief["global_step"]) == 4
    assert not (tmp_path / "worker1" / "model.ckpt-4.index").exists()
    assert (tmp_path / "worker1" / "model.ckpt-4.input-1-of-2.index").exists()
    # Both saw the same global losses and hold the same weights.
    losses = [[v["total_loss"] for _, v in out["history"]] for out in outputs]
    assert len(losses[0]) == 4
    # Eval: 64 records = 8 global batches of 8, dealt to the two workers; both agree.
    assert outputs[0]["results"] == outputs[1]["results"]
    assert outputs[0]["results"]["global_step"] == 4
    assert (tmp_path / "worker0" / "eval_results.txt").exists()
    assert not (tmp_path / "worker1" / "eval_results.txt").exists()
    np.testing.assert_array_equal(losses[1], losses[0])
    w0, w1 = np.load(tmp_path / "weights0.npz"), np.load(tmp_path / "weights1.npz")
    assert sorted(w0.files) == sorted(w1.files)
    for name in w0.files:
        np.testing.assert_array_equal(w1[name], w0[name], err_msg=name)
        np.testing.assert_array_equal(chief[name.replace("|", "/")], w0[name], err_msg=name)
