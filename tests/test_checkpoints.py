import os
import re

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertConfig, BertModel, BertPretrainingModel
from bert_tf import checkpoints, files
from bert_tf.checkpoints import (
    CheckpointError, load_original_checkpoint, original_variable_map, save_original_checkpoint,
)
from conftest import golden_path, tiny_config_dict

# The original release's names for a 2-layer model (REFERENCE.md §2).
_LAYER_NAMES = [
    "attention/self/query/kernel", "attention/self/query/bias",
    "attention/self/key/kernel", "attention/self/key/bias",
    "attention/self/value/kernel", "attention/self/value/bias",
    "attention/output/dense/kernel", "attention/output/dense/bias",
    "attention/output/LayerNorm/gamma", "attention/output/LayerNorm/beta",
    "intermediate/dense/kernel", "intermediate/dense/bias",
    "output/dense/kernel", "output/dense/bias",
    "output/LayerNorm/gamma", "output/LayerNorm/beta",
]
_ORIGINAL_NAMES = (
    ["bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings",
     "bert/embeddings/position_embeddings", "bert/embeddings/LayerNorm/gamma",
     "bert/embeddings/LayerNorm/beta"]
    + [f"bert/encoder/layer_{i}/{n}" for i in range(2) for n in _LAYER_NAMES]
    + ["bert/pooler/dense/kernel", "bert/pooler/dense/bias",
       "cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
       "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/LayerNorm/beta",
       "cls/predictions/output_bias", "cls/seq_relationship/output_weights",
       "cls/seq_relationship/output_bias"]
)


def _model(cls=BertPretrainingModel, **overrides):
    return cls(BertConfig.from_dict(tiny_config_dict(**overrides)))


def _read(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def test_name_table_is_the_original_layout():
    table = original_variable_map(_model())
    assert sorted(table) == sorted(_ORIGINAL_NAMES)
    shapes = {name: tuple(v.shape) for name, v in table.items()}
    assert shapes["bert/encoder/layer_1/attention/self/query/kernel"] == (16, 16)
    assert shapes["bert/encoder/layer_1/intermediate/dense/kernel"] == (16, 24)
    assert shapes["bert/encoder/layer_1/output/dense/kernel"] == (24, 16)
    assert shapes["cls/seq_relationship/output_weights"] == (2, 16)
    assert shapes["cls/predictions/output_bias"] == (37,)
    assert sorted(original_variable_map(_model(BertModel))) == [n for n in sorted(_ORIGINAL_NAMES) if n.startswith("bert/")]


def test_golden_checkpoint_round_trip(tmp_path):
    config = BertConfig.from_json_file(golden_path("model", "bert_config.json"))
    model = BertPretrainingModel(config)
    report = load_original_checkpoint(model, golden_path("model", "bert_model.ckpt"))
    assert not report.not_in_checkpoint and not report.unused_in_checkpoint
    assert len(report.loaded) == 5 + 16 * 3 + 2 + 7
    prefix = save_original_checkpoint(model, tmp_path / "bert_model.ckpt")
    golden = _read(golden_path("model", "bert_model.ckpt"))
    ours = _read(prefix)
    assert sorted(ours) == sorted(golden)
    for name in golden:
        assert ours[name].dtype == np.float32 and ours[name].shape == golden[name].shape, name
        np.testing.assert_array_equal(ours[name], golden[name], err_msg=name)
    assert BertConfig.from_json_file(tmp_path / "bert_config.json") == config
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "bert_model.ckpt")


def test_save_then_load_is_bit_identical(tmp_path):
    source = _model()
    save_original_checkpoint(source, tmp_path / "bert_model.ckpt")
    target = _model()
    load_original_checkpoint(target, tmp_path)  # a directory: through its state file
    for a, b in zip(source.weights, target.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_the_original_tf1_code_path_can_read_it(tmp_path):
    """What the original does with an init_checkpoint: tf.train.init_from_checkpoint in a graph."""
    model = _model()
    prefix = save_original_checkpoint(model, tmp_path / "bert_model.ckpt")
    expected = {name: v.numpy() for name, v in original_variable_map(model).items()}
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as session:
        graph_vars = {
            name: v1.get_variable(name, shape=value.shape, dtype=tf.float32,
                                  initializer=v1.zeros_initializer())
            for name, value in expected.items()
        }
        v1.train.init_from_checkpoint(str(prefix), {"bert/": "bert/", "cls/": "cls/"})
        session.run(v1.global_variables_initializer())
        for name, value in session.run(graph_vars).items():
            np.testing.assert_array_equal(value, expected[name], err_msg=name)


def test_training_checkpoint_returns_global_step_and_adam_moments(tmp_path):
    model = _model()
    table = original_variable_map(model)
    state = {
        "adam_m": {name: np.full(v.shape, 0.5, np.float32) for name, v in table.items()},
        "adam_v": {name: np.full(v.shape, 0.25, np.float32) for name, v in table.items()},
    }
    save_original_checkpoint(model, tmp_path / "model.ckpt-7", optimizer_state=state, global_step=7)
    raw = _read(tmp_path / "model.ckpt-7")
    assert raw["global_step"].dtype == np.int64 and raw["global_step"] == 7
    assert "bert/pooler/dense/kernel/adam_m" in raw and "cls/predictions/output_bias/adam_v" in raw
    report = load_original_checkpoint(_model(), tmp_path / "model.ckpt-7")
    assert report.global_step == 7
    assert sorted(report.slots) == ["adam_m", "adam_v"]
    assert sorted(report.slots["adam_m"]) == sorted(table)
    np.testing.assert_array_equal(report.slots["adam_v"]["bert/pooler/dense/bias"], np.full([16], 0.25))
    assert not report.unused_in_checkpoint


def test_encoder_only_checkpoint_leaves_heads_initialised(tmp_path):
    save_original_checkpoint(_model(BertModel), tmp_path / "bert_model.ckpt")
    model = _model()
    heads_before = {n: v.numpy() for n, v in original_variable_map(model).items() if n.startswith("cls/")}
    report = load_original_checkpoint(model, tmp_path / "bert_model.ckpt")
    assert sorted(report.not_in_checkpoint) == sorted(heads_before)
    table = original_variable_map(model)
    for name, value in heads_before.items():
        np.testing.assert_array_equal(table[name].numpy(), value)
    assert "not in checkpoint" in report.summary()


def test_full_checkpoint_into_encoder_reports_unused_heads(tmp_path):
    save_original_checkpoint(_model(), tmp_path / "bert_model.ckpt")
    report = load_original_checkpoint(_model(BertModel), tmp_path / "bert_model.ckpt")
    assert sorted(report.unused_in_checkpoint) == sorted(n for n in _ORIGINAL_NAMES if n.startswith("cls/"))


def test_shape_mismatch_names_each_variable(tmp_path):
    save_original_checkpoint(_model(vocab_size=40), tmp_path / "bert_model.ckpt")
    model = _model()
    before = model.weights[0].numpy()
    with pytest.raises(CheckpointError) as err:
        load_original_checkpoint(model, tmp_path / "bert_model.ckpt")
    message = str(err.value)
    assert "bert/embeddings/word_embeddings: expected shape [37, 16], found [40, 16]" in message
    assert "cls/predictions/output_bias: expected shape [37], found [40]" in message
    assert "2 problem(s)" in message
    np.testing.assert_array_equal(model.weights[0].numpy(), before)  # nothing assigned


def test_other_architectures_are_errors(tmp_path):
    save_original_checkpoint(_model(num_hidden_layers=3), tmp_path / "deep" / "bert_model.ckpt")
    with pytest.raises(CheckpointError, match="bert/encoder/layer_2/output/dense/kernel: not a variable of this model"):
        load_original_checkpoint(_model(), tmp_path / "deep")
    save_original_checkpoint(_model(num_hidden_layers=1), tmp_path / "shallow" / "bert_model.ckpt")
    with pytest.raises(CheckpointError, match=r"bert/encoder/layer_1/attention/self/query/kernel: expected shape \[16, 16\], not in checkpoint"):
        load_original_checkpoint(_model(), tmp_path / "shallow")


def test_path_resolution_errors(tmp_path):
    with pytest.raises(CheckpointError, match="expected .*nothing.ckpt.index"):
        load_original_checkpoint(_model(), tmp_path / "nothing.ckpt")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="no checkpoint in directory"):
        load_original_checkpoint(_model(), empty)
    two = tmp_path / "two"
    for name in ("a.ckpt", "b.ckpt"):
        save_original_checkpoint(_model(), two / name, update_state=False)
    with pytest.raises(CheckpointError, match="several checkpoints"):
        load_original_checkpoint(_model(), two)
    one = tmp_path / "one"
    save_original_checkpoint(_model(), one / "x.ckpt", update_state=False)
    assert load_original_checkpoint(_model(), one).prefix == str(one / "x.ckpt")
    assert load_original_checkpoint(_model(), str(one / "x.ckpt") + ".index").prefix == str(one / "x.ckpt")


def test_state_file_lists_checkpoints_in_order(tmp_path):
    model = _model()
    for step in (1, 2, 3):
        save_original_checkpoint(model, tmp_path / f"model.ckpt-{step}", global_step=step)
    assert checkpoints.checkpoint_prefixes(str(tmp_path)) == [str(tmp_path / f"model.ckpt-{s}") for s in (1, 2, 3)]
    assert checkpoints.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-3")
    checkpoints.delete_checkpoint(str(tmp_path / "model.ckpt-1"))
    checkpoints.write_checkpoint_state(str(tmp_path), str(tmp_path / "model.ckpt-3"), checkpoints.checkpoint_prefixes(str(tmp_path)))
    state = (tmp_path / "checkpoint").read_text()
    assert state == 'model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "model.ckpt-2"\nall_model_checkpoint_paths: "model.ckpt-3"\n'


def test_interrupted_write_leaves_no_complete_looking_checkpoint(tmp_path, monkeypatch):
    model = _model()
    save_original_checkpoint(model, tmp_path / "bert_model.ckpt")
    real_rename = tf.io.gfile.rename

    def crash_before_index(src, dst, overwrite=False):
        if dst.endswith(".index"):
            raise KeyboardInterrupt("killed")
        return real_rename(src, dst, overwrite=overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", crash_before_index)
    with pytest.raises(KeyboardInterrupt):
        save_original_checkpoint(_model(), tmp_path / "bert_model.ckpt")
    monkeypatch.undo()
    # The old index is gone with the old data: no checkpoint that mixes two writes.
    assert not os.path.exists(tmp_path / "bert_model.ckpt.index")
    with pytest.raises(CheckpointError):
        load_original_checkpoint(_model(), tmp_path / "bert_model.ckpt")


def test_optimizer_state_is_checked(tmp_path):
    model = _model()
    with pytest.raises(CheckpointError, match="optimizer_state\\['adam_m'\\] names 'bert/nope'"):
        save_original_checkpoint(model, tmp_path / "m.ckpt", optimizer_state={"adam_m": {"bert/nope": 1.0}})
    with pytest.raises(CheckpointError, match="expected shape \\[16\\], got \\[3\\]"):
        save_original_checkpoint(model, tmp_path / "m.ckpt", optimizer_state={"adam_m": {"bert/pooler/dense/bias": np.zeros(3)}})
    assert not os.path.exists(tmp_path / "m.ckpt.index")


# -- damaged files (issue 18) -----------------------------------------------------------------

def _cut_data(prefix):
    path = f"{prefix}.data-00000-of-00001"
    os.truncate(path, os.path.getsize(path) // 2)
    return rf"{path} \(.*\) is cut short: tensor \S+ lies beyond its end"


def _empty_data(prefix):
    os.truncate(f"{prefix}.data-00000-of-00001", 0)
    return r"\.data-00000-of-00001 \(0 bytes\) is cut short"


def _flip_data_byte(prefix):
    path = f"{prefix}.data-00000-of-00001"
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    return rf"{path} \(.*\) is corrupt: tensor \S+ fails its checksum"


def _remove_data(prefix):
    os.remove(f"{prefix}.data-00000-of-00001")
    return rf"{prefix}\.data-00000-of-00001 \(its data\) is missing"


def _garble_index(prefix):
    with open(f"{prefix}.index", "wb") as f:
        f.write(np.random.RandomState(0).bytes(300))
    return rf"{prefix}\.index is not a readable checkpoint index \(not an sstable"


def _cut_index(prefix):
    os.truncate(f"{prefix}.index", 100)
    return rf"{prefix}\.index is not a readable checkpoint index \("


@pytest.mark.parametrize("damage", [_cut_data, _empty_data, _flip_data_byte, _remove_data,
                                    _garble_index, _cut_index])
def test_a_damaged_checkpoint_is_one_line_naming_the_file(tmp_path, damage):
    prefix = str(tmp_path / "model.ckpt-3")
    save_original_checkpoint(_model(), prefix, global_step=3,
                             optimizer_state={"adam_m": {"bert/pooler/dense/bias": np.ones(16)}})
    expected = damage(prefix)
    model = _model()
    before = [v.numpy() for v in model.weights]
    with pytest.raises(checkpoints.DamagedCheckpointError) as err:
        load_original_checkpoint(model, prefix)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"checkpoint {prefix} is damaged: ")
    assert err.value.prefix == prefix
    assert re.search(expected, message), message
    # Every tensor is read before the first assignment: the model is as it was.
    for old, new in zip(before, model.weights):
        np.testing.assert_array_equal(new.numpy(), old)


def test_verify_checkpoint_reads_every_tensor_of_any_dtype(tmp_path):
    dataset = tf.data.Dataset.range(10).shuffle(5, seed=1)
    iterator = iter(dataset)
    next(iterator)
    prefix = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "state"))
    checkpoints.verify_checkpoint(prefix)  # a variant tensor: get_tensor cannot read it
    _cut_data(prefix)
    with pytest.raises(checkpoints.DamagedCheckpointError, match="is cut short"):
        checkpoints.verify_checkpoint(prefix)


# -- a full disk (issue 18) -------------------------------------------------------------------

def _snapshot(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def test_full_disk_while_saving_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    model = _model()
    save_original_checkpoint(model, tmp_path / "model.ckpt-1", global_step=1)
    before = _snapshot(tmp_path)
    real_save = tf.raw_ops.SaveV2

    def save_part_way(prefix, tensor_names, shape_and_slices, tensors):
        # As TF's bundle writer on a full disk: a partial `.tempstate` data file, then the error.
        with open(f"{prefix}.data-00000-of-00001.tempstate123", "wb") as f:
            f.write(b"\0" * 1000)
        raise tf.errors.ResourceExhaustedError(
            None, None, f"{prefix}.data-00000-of-00001.tempstate123; No space left on device")

    monkeypatch.setattr(tf.raw_ops, "SaveV2", save_part_way)
    with pytest.raises(files.OutputError) as err:
        save_original_checkpoint(model, tmp_path / "model.ckpt-2", global_step=2)
    # The tensors (global_step: 8 bytes) and about 128 bytes of index per tensor.
    needed = sum(v.numpy().nbytes for v in model.weights) + 8 + 128 * (len(model.weights) + 1)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"cannot write checkpoint {tmp_path / 'model.ckpt-2'}: no space "
                              f"left on the device of {tmp_path} (it needs about ")
    assert f"(it needs about {files.format_bytes(needed)}; " in message
    assert _snapshot(tmp_path) == before  # nothing left behind, nothing changed
    monkeypatch.setattr(tf.raw_ops, "SaveV2", real_save)
    save_original_checkpoint(model, tmp_path / "model.ckpt-2", global_step=2)
    assert checkpoints.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-2")


def test_full_disk_while_writing_the_state_file(tmp_path, monkeypatch):
    model = _model()
    save_original_checkpoint(model, tmp_path / "model.ckpt-1", global_step=1)
    before = _snapshot(tmp_path)
    real_write = files.write_atomic

    def full(path, data):
        if os.path.basename(path) == checkpoints.STATE_FILE:
            raise files.OutputError(f"cannot write {path}: no space left")
        return real_write(path, data)

    monkeypatch.setattr(files, "write_atomic", full)
    with pytest.raises(files.OutputError, match="model.ckpt-2: cannot write .*checkpoint"):
        save_original_checkpoint(model, tmp_path / "model.ckpt-2", global_step=2)
    # The state file still names model.ckpt-1, and no unlisted model.ckpt-2 is left.
    assert _snapshot(tmp_path) == before


def test_a_relative_directory_resolves_through_its_state_file(tmp_path, monkeypatch):
    """`--checkpoint=out` (relative) with two checkpoints: the state file's latest, not
    out/out/... (get_checkpoint_state already joins its entries to the directory)."""
    from bert_tf.checkpoints import resolve_checkpoint_path

    out = tmp_path / "out"
    out.mkdir()
    for step in (1, 2):
        (out / f"model.ckpt-{step}.index").write_bytes(b"")
    (out / "checkpoint").write_text(  # as the trainer writes it: names relative to `out`
        'model_checkpoint_path: "model.ckpt-2"\n'
        'all_model_checkpoint_paths: "model.ckpt-1"\n'
        'all_model_checkpoint_paths: "model.ckpt-2"\n')
    monkeypatch.chdir(tmp_path)
    assert resolve_checkpoint_path("out") == os.path.join("out", "model.ckpt-2")
    assert resolve_checkpoint_path(str(out)) == str(out / "model.ckpt-2")
