"""`python -m bert_tf.roberta.run_pretraining` (bert_tf/roberta/run_pretraining.py): what it
writes exports to a Transformers RobertaForMaskedLM folder (names and shapes of the Hub table)
whose import gives back the checkpoint's weights bit for bit and the same masked-LM outputs; a
run SIGKILLed after a checkpoint and restarted with the same command ends bit for bit as the
uninterrupted one (dropout on, records shuffled, masks drawn per epoch); bad input is one
line."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import hub_fixtures as hub
from bert_tf import checkpoints, families
from bert_tf.hf import names
from bert_tf.hf.convert import export_checkpoint, import_snapshot
from bert_tf.hf.safetensors_io import SafetensorsFile
from bert_tf.roberta import hub_names
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.pretraining import RobertaPretrainingModel
from bert_tf.roberta.pretraining_task import run
from test_roberta_pretraining import MERGES, SEQ, TINY, VOCAB, options, write_config, write_records
from test_training_helpers import (
    REPO, assert_checkpoints_identical, env, kill_after_checkpoint, read_checkpoint, state_lists,
)

LENGTHS = [32, 20, 11, 27, 30, 16, 25, 9, 32, 14, 22, 31]
COMMAND_DRIVER = """\
import json, runpy, sys
sys.argv = ["run_pretraining"] + json.loads(sys.argv[1])
runpy.run_module("bert_tf.roberta.run_pretraining", run_name="__main__")
"""


def command_line(output_dir, config_file, input_file, **flags):
    args = dict(bert_config_file=config_file, input_file=input_file, output_dir=output_dir,
                vocab_file=VOCAB, max_seq_length=SEQ, train_batch_size=4, learning_rate=1e-3,
                num_warmup_steps=2, num_train_steps=8, do_train=True, seed=7)
    args.update(flags)
    return [f"--{k}" if v is True else f"--{k}={v}" for k, v in args.items()]


def run_command(argv):
    proc = subprocess.run([sys.executable, "-c", COMMAND_DRIVER, json.dumps(argv)],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stderr


def test_output_dir_exports_to_roberta_for_masked_lm_and_back(tmp_path):
    """A 2-step run's output_dir (bert_config.json, vocab.json, merges.txt beside the
    checkpoints) exports without flags to RobertaForMaskedLM: the safetensors names and
    shapes are the Hub table's rows (the pooler kept, which Transformers ignores); the
    import of that folder gives back every weight of the checkpoint bit for bit, the same
    config and tokenizer files, and a model with the same masked-LM outputs, which are
    Transformers' forward (float64 NumPy) on the exported tensors within 1e-5."""
    records = write_records(tmp_path / "r.tfrecord", LENGTHS)
    config = RobertaConfig.from_dict(TINY)
    prefix, _ = run(config, options(tmp_path / "run", [records], num_train_steps=2,
                                    save_checkpoints_steps=2), do_train=True)
    run_dir = tmp_path / "run"
    for name in ("bert_config.json", "vocab.json", "merges.txt"):
        assert (run_dir / name).exists(), name
    assert (run_dir / "vocab.json").read_bytes() == VOCAB.read_bytes()
    assert (run_dir / "merges.txt").read_bytes() == MERGES.read_bytes()

    result = export_checkpoint(str(run_dir), None, None, str(tmp_path / "hub"))
    assert result.report[0] == "architecture: RobertaForMaskedLM (44 tensors)"
    hub_config = json.loads((tmp_path / "hub" / "config.json").read_text())
    assert hub_config["architectures"] == ["RobertaForMaskedLM"]
    assert {k: hub_config[k] for k in ("model_type", "pad_token_id", "layer_norm_eps",
                                       "max_position_embeddings", "type_vocab_size")} == {
        "model_type": "roberta", "pad_token_id": 1, "layer_norm_eps": 1e-5,
        "max_position_embeddings": SEQ + 2, "type_vocab_size": 1}
    tensors = SafetensorsFile(tmp_path / "hub" / "model.safetensors").read_all()
    table = names.HubTable(hub_names)
    rows = table.rows_for("RobertaForMaskedLM", config, pooler=True)
    sizes = names.sizes_of(config, None)
    assert {hub_name: tuple(names.hub_shape(letters, sizes))
            for hub_name, _, _, letters in rows} == {n: t.shape for n, t in tensors.items()}
    assert "lm_head.bias" in tensors and "lm_head.decoder.weight" not in tensors

    import_snapshot(str(tmp_path / "hub"), str(tmp_path / "back"))
    saved = read_checkpoint(prefix)
    back = read_checkpoint(tmp_path / "back" / "bert_model.ckpt")
    weights = {n: v for n, v in saved.items()
               if n != "global_step" and not n.endswith(("/adam_m", "/adam_v"))}
    assert sorted(back) == sorted(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)
    assert families.read_config(tmp_path / "back" / "bert_config.json") == config
    assert (tmp_path / "back" / "vocab.json").read_bytes() == VOCAB.read_bytes()

    models = []
    for path in (prefix, tmp_path / "back" / "bert_model.ckpt"):
        model = RobertaPretrainingModel(config)
        checkpoints.load_original_checkpoint(model, str(path))
        models.append(model)
    ids = np.ones((2, SEQ), np.int64)
    ids[0, :10] = [0, 40, 41, 1035, 500, 600, 7, 1035, 9, 2]
    ids[1, :6] = [0, 1035, 300, 301, 302, 2]
    feats = {"input_ids": ids, "input_mask": (ids != 1).astype(np.int64),
             "segment_ids": np.zeros_like(ids),
             "masked_lm_positions": np.tile(np.arange(SEQ), (2, 1))}
    ours, imported = (m(feats)["mlm_log_probs"].numpy() for m in models)
    np.testing.assert_array_equal(imported, ours)
    ref = hub.roberta_reference_outputs(hub_config, tensors, ids, feats["segment_ids"],
                                        feats["input_mask"].astype(np.float64))
    real = feats["input_mask"].reshape(-1) == 1
    np.testing.assert_allclose(ours[real], hub.log_softmax(ref["mlm_logits"]).reshape(
        -1, ours.shape[-1])[real], atol=1e-5, rtol=0)


def _bert_records(path):
    """A record of BERT's create_pretraining_data (input_ids, input_mask, ...)."""
    ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))  # noqa: E731
    feature = {"input_ids": ints([0] * SEQ), "input_mask": ints([1] * SEQ),
               "segment_ids": ints([0] * SEQ), "masked_lm_positions": ints([1] * 5),
               "masked_lm_ids": ints([5] * 5), "next_sentence_labels": ints([0]),
               "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
                   value=[1.0] * 5))}
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(tf.train.Example(
            features=tf.train.Features(feature=feature)).SerializeToString())
    return path


@pytest.mark.parametrize("case, message", [
    ("missing_input", "run_pretraining: error: --input_file: no file matches"),
    ("bert_records",
     "bert.tfrecord: not a RoBERTa record of bert_tf.roberta.create_pretraining_data"),
    ("bert_config", "model_type 'bert', not 'roberta'"),
    ("too_long", "--max_seq_length=40 is longer than the 32 tokens the roberta config takes"),
    ("missing_vocab", "run_pretraining: error: --vocab_file"),
])
def test_bad_input_is_one_line(tmp_path, case, message):
    config_file = write_config(tmp_path / "bert_config.json")
    records = write_records(tmp_path / "r.tfrecord", LENGTHS[:4])
    flags = {}
    if case == "missing_input":
        records = tmp_path / "nothing*.tfrecord"
    elif case == "bert_records":
        records = _bert_records(tmp_path / "bert.tfrecord")
    elif case == "bert_config":
        config = {k: v for k, v in TINY.items() if k not in ("model_type", "pad_token_id",
                                                             "layer_norm_eps")}
        config_file = tmp_path / "bert.json"
        config_file.write_text(json.dumps(dict(config, hidden_act="gelu")))
    elif case == "too_long":
        flags["max_seq_length"] = 40
    elif case == "missing_vocab":
        flags["vocab_file"] = tmp_path / "no_vocab.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bert_tf.roberta.run_pretraining",
         *command_line(tmp_path / "out", config_file, records, **flags)],
        capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if "run_pretraining: error:" in line]
    assert len(lines) == 1 and message in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "out").glob("model.ckpt*"))


@pytest.mark.slow  # an 8-step run here, and the command twice: killed after step 4, restarted
def test_sigkill_and_restart_with_the_same_command_is_uninterrupted(tmp_path):
    """Dropout on, the two record files shuffled through the buffer (so the input position
    and each record's epoch resume), a checkpoint every 2 steps: killed at a random moment
    after its step-4 checkpoint and started again with the same command line, the run (about
    3 epochs of the 12 records, masked anew each) ends with the uninterrupted run's
    model.ckpt-8, bit for bit (weights, Adam moments, global_step)."""
    config_file = write_config(tmp_path / "bert_config.json", hidden_dropout_prob=0.1,
                               attention_probs_dropout_prob=0.1)
    files = [write_records(tmp_path / "a.tfrecord", LENGTHS[:7], seed=1),
             write_records(tmp_path / "b.tfrecord", LENGTHS[7:], seed=2)]
    steps = dict(num_train_steps=8, num_warmup_steps=2, save_checkpoints_steps=2,
                 iterations_per_loop=1, shuffle_buffer_size=5)
    reference, _ = run(RobertaConfig.from_dict(json.loads(open(config_file).read())),
                       options(tmp_path / "reference", files, **steps), do_train=True)
    assert reference.endswith("model.ckpt-8")

    killed = tmp_path / "killed"
    argv = command_line(killed, config_file, ",".join(files), **steps)
    kill_after_checkpoint(argv, killed, 4, random.Random(os.getpid()), driver=COMMAND_DRIVER)
    assert not state_lists(killed, 8)
    resumed_from = int(tf.train.latest_checkpoint(str(killed)).rsplit("-", 1)[1])
    assert 4 <= resumed_from < 8
    log = run_command(argv)
    assert f"model.ckpt-{resumed_from} at global_step {resumed_from}" in log
    assert_checkpoints_identical(tmp_path / "reference" / "model.ckpt-8",
                                 killed / "model.ckpt-8")
