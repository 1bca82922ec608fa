"""run_pretraining.py on the command line: the original's flags, progress log, checkpoints,
and a clear error (naming the file or flag) for each kind of bad input."""

import json
import re
import subprocess
import sys

import pytest

from test_training_helpers import (
    GOLDEN_TRAIN, REPO, env, read_checkpoint, write_config, write_records,
)

SCRIPT = str(REPO / "run_pretraining.py")


def run_script(*flags, timeout=240):
    return subprocess.run([sys.executable, SCRIPT, *flags], capture_output=True, text=True,
                          timeout=timeout, env=env(), cwd=str(REPO))


@pytest.fixture()
def setup(tmp_path):
    config = write_config(tmp_path / "bert_config.json")
    data = write_records(tmp_path / "data.tfrecord", 24)
    base = [f"--bert_config_file={config}", f"--input_file={data}",
            f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16",
            "--max_predictions_per_seq=3", "--train_batch_size=4", "--eval_batch_size=4",
            "--num_train_steps=4", "--num_warmup_steps=1", "--save_checkpoints_steps=2",
            "--iterations_per_loop=2", "--learning_rate=1e-3"]
    return tmp_path, base


def assert_error(proc, *patterns):
    assert proc.returncode != 0, proc.stderr[-2000:]
    message = [l for l in proc.stderr.splitlines() if "run_pretraining.py: error:" in l]
    assert message, f"no clear error line:\n{proc.stderr[-3000:]}"
    for pattern in patterns:
        assert re.search(pattern, message[0]), (pattern, message[0])
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_train_eval_and_resume_through_the_command_line(setup):
    tmp_path, base = setup
    proc = run_script(*base, "--do_train", "--do_eval")
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = tmp_path / "out"
    assert re.search(r"step 4/4  loss [\d.]+  mlm [\d.]+  nsp [\d.]+  lr [\d.e-]+  "
                     r"[\d.]+ steps/s  [\d.]+ examples/s  ETA", proc.stderr)
    ckpt = read_checkpoint(out / "model.ckpt-4")
    assert int(ckpt["global_step"]) == 4
    assert "bert/embeddings/word_embeddings/adam_m" in ckpt
    assert 'model_checkpoint_path: "model.ckpt-4"' in (out / "checkpoint").read_text()
    results = dict(line.split(" = ") for line in
                   (out / "eval_results.txt").read_text().splitlines())
    assert sorted(results) == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                               "next_sentence_accuracy", "next_sentence_loss"]
    assert results["global_step"] == "4"
    assert list((out / "train").glob("events.out.tfevents.*"))
    assert list((out / "eval").glob("events.out.tfevents.*"))
    # More steps with the same output_dir continue from step 4.
    flags = [f for f in base if not f.startswith("--num_train_steps")]
    proc = run_script(*flags, "--num_train_steps=6", "--do_train")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Resuming from" in proc.stderr and "model.ckpt-4 at global_step 4" in proc.stderr
    assert "step 6/6" in proc.stderr and "step 2/6" not in proc.stderr


@pytest.mark.skipif(not GOLDEN_TRAIN.is_dir(), reason=f"golden fixtures absent: {GOLDEN_TRAIN}")
@pytest.mark.slow
def test_golden_flags_log_the_original_losses(tmp_path):
    g = GOLDEN_TRAIN
    proc = run_script(
        f"--bert_config_file={g / 'bert_config.json'}", f"--input_file={g / 'train.tfrecord'}",
        f"--output_dir={tmp_path / 'out'}", f"--init_checkpoint={g / 'init.ckpt'}",
        "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=4",
        "--learning_rate=1e-3", "--num_warmup_steps=0", "--num_train_steps=10",
        "--save_checkpoints_steps=3", "--iterations_per_loop=1", "--shuffle_buffer_size=0",
        "--do_train",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    logged = re.findall(r"step (\d+)/10  loss ([\d.]+)  mlm ([\d.]+)  nsp ([\d.]+)", proc.stderr)
    expected = json.loads((g / "expected_losses.json").read_text())["steps"]
    for (step, loss, mlm, nsp), golden in zip(logged, expected):
        assert int(step) == golden["step"] + 1
        assert float(loss) == pytest.approx(golden["total_loss"], abs=1e-4)
        assert float(mlm) == pytest.approx(golden["mlm_loss"], abs=1e-4)
        assert float(nsp) == pytest.approx(golden["nsp_loss"], abs=1e-4)


@pytest.mark.slow
def test_bad_inputs_each_give_a_clear_error(setup):
    tmp_path, base = setup

    def with_flag(name, value):
        return [f for f in base if not f.startswith(f"--{name}=")] + [f"--{name}={value}"]

    assert_error(run_script(*base), "at least one of --do_train or --do_eval")
    assert_error(run_script(*with_flag("input_file", tmp_path / "missing*.tfrecord"), "--do_train"),
                 r"--input_file: no file matches .*missing\*\.tfrecord")
    garbage = tmp_path / "corrupt.tfrecord"
    garbage.write_bytes(b"\x00" * 100)
    assert_error(run_script(*with_flag("input_file", garbage), "--do_train"),
                 r"corrupt\.tfrecord: not a readable TFRecord")
    assert_error(run_script(*with_flag("max_seq_length", 24), "--do_train"),
                 r"data\.tfrecord: feature input_ids has length 16, but --max_seq_length implies 24")
    assert_error(run_script(*with_flag("bert_config_file", tmp_path / "nope.json"), "--do_train"),
                 r"cannot read bert config file .*nope\.json")
    bad_config = tmp_path / "bad_config.json"
    bad_config.write_text('{"vocab_size": 10')
    assert_error(run_script(*with_flag("bert_config_file", bad_config), "--do_train"),
                 r"bad_config\.json: not valid JSON")
    assert_error(run_script(*with_flag("max_seq_length", 64), "--do_train"),
                 r"--max_seq_length=64 is larger than max_position_embeddings=32")
    assert_error(run_script(*base, "--do_train", "--use_tpu", "--tpu_name=no-such-tpu"),
                 r"no TPU reachable \(--tpu_name='no-such-tpu'")


@pytest.mark.slow
def test_checkpoints_of_another_model_are_rejected(setup):
    tmp_path, base = setup
    other = write_config(tmp_path / "other_config.json", hidden_size=8, intermediate_size=16)
    proc = run_script(*[f for f in base if not f.startswith("--bert_config_file")],
                      f"--bert_config_file={other}", "--do_train", "--num_train_steps=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # output_dir now holds the H=8 model's checkpoints; the H=16 config must not resume them.
    assert_error(run_script(*base, "--do_train"),
                 r"--output_dir=.*out holds checkpoints of another model",
                 r"hidden_size 8 there, 16 here")
    # An init_checkpoint of another shape.
    assert_error(run_script(*[f for f in base if not f.startswith("--output_dir")],
                            f"--output_dir={tmp_path / 'fresh'}",
                            f"--init_checkpoint={tmp_path / 'out' / 'model.ckpt-2'}",
                            "--do_train"),
                 r"--init_checkpoint: checkpoint .*model\.ckpt-2 does not fit the model")
