"""Each kind of bad input to a pretraining run is a clear error naming the file or flag."""

import re

import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig, BertConfigError
from bert_tf.bert.pretraining_task import PretrainingError, PretrainingOptions, run
from bert_tf.training.input_pipeline import InputError, first_line
from bert_tf.training.strategy import StrategyError, create_strategy, resolve_strategy_name
from test_training_helpers import write_config, write_records


@pytest.fixture()
def setup(tmp_path):
    config = BertConfig.from_json_file(write_config(tmp_path / "bert_config.json"))
    data = write_records(tmp_path / "data.tfrecord", 24)

    def options(**overrides):
        kwargs = dict(input_files=[data], output_dir=str(tmp_path / "out"), max_seq_length=16,
                      max_predictions_per_seq=3, train_batch_size=4, eval_batch_size=4,
                      num_train_steps=2, num_warmup_steps=0, save_checkpoints_steps=2,
                      iterations_per_loop=2, learning_rate=1e-3)
        kwargs.update(overrides)
        return PretrainingOptions(**kwargs)

    return tmp_path, config, options


def test_neither_train_nor_eval(setup):
    _, config, options = setup
    with pytest.raises(PretrainingError, match="at least one of --do_train or --do_eval"):
        run(config, options())


def test_flags_that_do_not_fit_the_config_or_the_records(setup):
    tmp_path, config, options = setup
    with pytest.raises(PretrainingError, match="--max_seq_length=64 is larger than "
                                               "max_position_embeddings=32"):
        run(config, options(max_seq_length=64), do_train=True)
    with pytest.raises(InputError, match=r"data\.tfrecord: feature input_ids has length 16, "
                                         r"but --max_seq_length implies 24"):
        run(config, options(max_seq_length=24), do_train=True)
    with pytest.raises(PretrainingError, match="--train_batch_size must be positive"):
        run(config, options(train_batch_size=0), do_train=True)
    with pytest.raises(PretrainingError, match=r"--shuffle_buffer_size must be >= 0, or -1 for "
                                               r"a fresh permutation .* got -2"):
        run(config, options(shuffle_buffer_size=-2), do_train=True)


def test_corrupted_records(setup):
    tmp_path, config, options = setup
    garbage = tmp_path / "corrupt.tfrecord"
    garbage.write_bytes(b"\x00" * 100)
    with pytest.raises(InputError, match=r"corrupt\.tfrecord: not a readable TFRecord"):
        run(config, options(input_files=[str(garbage)]), do_train=True)


def test_truncated_records_name_the_reason_on_the_same_line(setup):
    """A record file cut short (a copy interrupted) passes the first-record check and fails
    mid-training: one line with the file and TensorFlow's reason, not "Graph execution
    error:" with the reason lines below."""
    tmp_path, config, options = setup
    data = options().input_files[0]
    truncated = tmp_path / "truncated.tfrecord"
    whole = open(data, "rb").read()
    truncated.write_bytes(whole[:-37])  # the last record cut short
    with pytest.raises(InputError) as raised:
        run(config, options(input_files=[str(truncated)], num_train_steps=8), do_train=True)
    message = str(raised.value)
    assert "\n" not in message, message
    assert re.fullmatch(r"corrupted record in the input files \(.*truncated\.tfrecord\): "
                        r"truncated record at \d+.*", message), message


def test_first_line_skips_the_graph_execution_preamble():
    message = ("Graph execution error:\n\nDetected at node ReduceDataset defined at (most "
               "recent call last):\n  File \"run.py\", line 15, in <module>\n\n  File "
               "\"run.py\", line 11, in f\n\ntruncated record at 16065' failed with Read less "
               "bytes than requested\n\t [[{{node ReduceDataset}}]] [Op:__inference_f_37]")
    error = tf.errors.DataLossError(None, None, message)
    assert first_line(error) == ("truncated record at 16065' failed with Read less bytes than "
                                 "requested")
    eager = ("{{function_node __wrapped__IteratorGetNext_output_types_1_device_/job:localhost/"
             "replica:0/task:0/device:CPU:0}} truncated record at 5865' failed with Read less "
             "bytes than requested [Op:IteratorGetNext]")
    assert first_line(tf.errors.DataLossError(None, None, eager)) == (
        "truncated record at 5865' failed with Read less bytes than requested")
    assert first_line(ValueError("plain\nsecond")) == "plain"
    assert first_line(ValueError("")) == "ValueError"


def test_bert_config_missing_or_invalid(tmp_path):
    with pytest.raises(BertConfigError, match=r"cannot read bert config file .*nope\.json"):
        BertConfig.from_json_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"vocab_size": 10')
    with pytest.raises(BertConfigError, match=r"bad\.json: not valid JSON"):
        BertConfig.from_json_file(bad)


@pytest.mark.slow
def test_checkpoints_of_another_model(setup):
    tmp_path, config, options = setup
    other = BertConfig.from_json_file(
        write_config(tmp_path / "other.json", hidden_size=8, intermediate_size=16))
    checkpoint, _ = run(other, options(), do_train=True)
    assert checkpoint.endswith("model.ckpt-2")
    # output_dir holds the H=8 model's checkpoints: the H=16 config must not resume them.
    with pytest.raises(PretrainingError, match=r"--output_dir=.*out holds checkpoints of another "
                                               r"model .*hidden_size 8 there, 16 here"):
        run(config, options(num_train_steps=4), do_train=True)
    # The same checkpoint as --init_checkpoint: of another shape.
    with pytest.raises(PretrainingError, match=r"--init_checkpoint: checkpoint .*model\.ckpt-2 "
                                               r"does not fit the model"):
        run(config, options(output_dir=str(tmp_path / "fresh"), init_checkpoint=checkpoint),
            do_train=True)


def test_strategy_errors(monkeypatch):
    with pytest.raises(StrategyError, match="--use_tpu conflicts with --strategy=mirrored"):
        resolve_strategy_name("mirrored", use_tpu=True)
    assert resolve_strategy_name("default", use_tpu=True) == "tpu"
    with pytest.raises(StrategyError, match="expected one of"):
        resolve_strategy_name("horovod")
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(StrategyError, match="needs the TF_CONFIG environment variable"):
        create_strategy("multi_worker_mirrored")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(StrategyError, match="TF_CONFIG is not a valid cluster spec"):
        create_strategy("multi_worker_mirrored")
    with pytest.raises(StrategyError, match="no TPU reachable"):
        create_strategy("tpu")
