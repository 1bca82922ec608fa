"""Checkpoints in the format of Google's release: TF1 bundles of variables under their original
names, the `checkpoint` state file, damaged-checkpoint handling.

This module knows the format, not the models: each model names its own variables
(`model.checkpoint_variables()`, e.g. `bert/encoder/layer_3/attention/self/query/kernel`, and
`model.required_checkpoint_scopes()`), and `original_variable_map(model)` checks that table
covers every variable. Loading and saving both read it, and the training loop uses it for the
optimizer's name-based rules and slot names. Every mapping is a rename: our variables have the
original shapes.

Paths go through `tf.io.gfile`, so `gs://` output directories work as with the original.
"""

import dataclasses
import os
import uuid

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import files

GLOBAL_STEP = "global_step"
STATE_FILE = "checkpoint"
CONFIG_FILE = "bert_config.json"
_DATA_SUFFIX = ".data-00000-of-00001"
_INDEX_SUFFIX = ".index"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read into, or written from, a model."""


class DamagedCheckpointError(CheckpointError):
    """A checkpoint whose files are missing, cut short or corrupt; `prefix` names it."""

    def __init__(self, prefix, what):
        super().__init__(f"checkpoint {prefix} is damaged: {what}")
        self.prefix = prefix
        self.what = what


def data_files(prefix):
    """The `.data-*` shard files of checkpoint `prefix` that exist."""
    return sorted(tf.io.gfile.glob(f"{prefix}.data-*-of-*"))


def _first_line(error):
    lines = str(getattr(error, "message", error)).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def damaged_checkpoint_error(prefix, error=None, tensor=None):
    """The `DamagedCheckpointError` of `error`, raised opening checkpoint `prefix` (its index)
    or, with `tensor`, reading that tensor: one line naming the file and what is wrong. Without
    `error`: the files of `prefix` are missing."""
    index = prefix + _INDEX_SUFFIX
    data = data_files(prefix)
    reason = _first_line(error)
    if not tf.io.gfile.exists(index):
        what = f"{index} is missing"
    elif tensor is None and ("No such file" in reason or "Failed to find" in reason) or (
            tensor is not None and not data):
        what = f"{prefix}{_DATA_SUFFIX} (its data) is missing"
    elif tensor is None:
        what = f"{index} is not a readable checkpoint index ({reason})"
    else:
        names = ", ".join(f"{p} ({files.format_bytes(files.size(p))})" for p in data)
        if isinstance(error, (IndexError, tf.errors.OutOfRangeError)) or "less bytes" in reason:
            what = f"{names} is cut short: tensor {tensor} lies beyond its end"
        elif "hecksum" in reason:
            what = f"{names} is corrupt: tensor {tensor} fails its checksum"
        else:
            what = f"cannot read tensor {tensor} from {names} ({reason})"
    return DamagedCheckpointError(prefix, what)


def open_checkpoint(prefix):
    """`tf.train.load_checkpoint(prefix)`; a missing or unreadable file is a
    `DamagedCheckpointError` naming it."""
    try:
        return tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError, IndexError) as e:
        raise damaged_checkpoint_error(prefix, e) from None


def read_tensor(reader, prefix, name):
    """`reader.get_tensor(name)` of checkpoint `prefix`; a file cut short or corrupt is a
    `DamagedCheckpointError` naming it."""
    try:
        return reader.get_tensor(name)
    except (tf.errors.OpError, ValueError, IndexError) as e:
        raise damaged_checkpoint_error(prefix, e, tensor=name) from None


def verify_checkpoint(prefix):
    """Reads every tensor of checkpoint `prefix` (of any dtype, e.g. an input pipeline's
    variant state), which checks their checksums; raises `DamagedCheckpointError` if it is
    missing, cut short or corrupt."""
    reader = open_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    for name in sorted(dtypes):
        try:
            with tf.device("/cpu:0"):
                tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[name], shape_and_slices=[""],
                                     dtypes=[dtypes[name]])
        except (tf.errors.OpError, ValueError, IndexError) as e:
            raise damaged_checkpoint_error(prefix, e, tensor=name) from None


def original_variable_map(model):
    """The original checkpoint name of every variable of `model`: its
    `checkpoint_variables()`, checked to name each of its variables once.

    Args:
      model: a model of bert_tf (an encoder such as `BertModel`, `BertPretrainingModel`,
        `BertTaskModel`, `ElectraPretrainingModel`...).
    Returns:
      dict original name -> Keras variable, in the order of the original checkpoint table.
    """
    table = model.checkpoint_variables()
    # A variable its model does not name would silently never be saved.
    mapped = {id(v) for v in table.values()}
    unmapped = [v.path for v in model.weights if id(v) not in mapped]
    if unmapped or len(mapped) != len(table) or len(model.weights) != len(table):
        raise AssertionError(f"checkpoint name table out of date; unmapped variables: {unmapped}")
    return table


@dataclasses.dataclass
class CheckpointReport:
    """What `load_original_checkpoint` did.

    Attributes:
      prefix: the checkpoint prefix that was read.
      loaded: original names assigned from the checkpoint.
      not_in_checkpoint: names of the model absent from the checkpoint (kept their values);
        only ever head variables, since a missing encoder variable is an error.
      unused_in_checkpoint: checkpoint names the model has no use for (other heads, other
        tools' variables), excluding `global_step` and optimizer slots.
      global_step: the checkpoint's `global_step`, or None.
      slots: optimizer slots of a training checkpoint: slot name (`adam_m`, `adam_v`, ...) ->
        {original variable name -> np.ndarray}.
    """

    prefix: str
    loaded: list
    not_in_checkpoint: list
    unused_in_checkpoint: list
    global_step: int | None = None
    slots: dict = dataclasses.field(default_factory=dict)

    def summary(self):
        lines = [f"checkpoint {self.prefix}: loaded {len(self.loaded)} variables"]
        if self.not_in_checkpoint:
            lines.append(
                f"  not in checkpoint (kept their initial values): {', '.join(self.not_in_checkpoint)}"
            )
        if self.unused_in_checkpoint:
            lines.append(f"  unused in checkpoint: {', '.join(self.unused_in_checkpoint)}")
        if self.global_step is not None:
            lines.append(f"  global_step: {self.global_step}")
        for slot, values in sorted(self.slots.items()):
            lines.append(f"  optimizer slot {slot}: {len(values)} variables")
        return "\n".join(lines)


def resolve_checkpoint_path(path):
    """Turns a checkpoint prefix or a directory into the prefix to read.

    A directory is resolved through its `checkpoint` state file, else the single `*.index` in it.
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = latest_checkpoint(path)
        if latest:
            return latest
        indexes = sorted(tf.io.gfile.glob(os.path.join(path, "*" + _INDEX_SUFFIX)))
        indexes = [p for p in indexes if ".tmp" not in os.path.basename(p)]
        if len(indexes) == 1:
            return indexes[0][: -len(_INDEX_SUFFIX)]
        if not indexes:
            raise CheckpointError(f"no checkpoint in directory {path} (no '{STATE_FILE}' file, no *.index)")
        names = ", ".join(os.path.basename(p)[: -len(_INDEX_SUFFIX)] for p in indexes)
        raise CheckpointError(
            f"directory {path} holds several checkpoints ({names}) and no '{STATE_FILE}' state "
            "file: pass the prefix of the one to load"
        )
    if path.endswith(_INDEX_SUFFIX):
        path = path[: -len(_INDEX_SUFFIX)]
    elif path.endswith(_DATA_SUFFIX):
        path = path[: -len(_DATA_SUFFIX)]
    if not tf.io.gfile.exists(path + _INDEX_SUFFIX):
        raise CheckpointError(
            f"checkpoint {path} not found: expected {path}{_INDEX_SUFFIX} (give a checkpoint "
            "prefix such as .../bert_model.ckpt, or a directory)"
        )
    return path


def _shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def load_original_checkpoint(model, path):
    """Loads a checkpoint in the original naming into `model`.

    Args:
      model: a model of bert_tf (see `original_variable_map`).
      path: a checkpoint prefix (`.../bert_model.ckpt`) or a directory.
    Returns:
      A `CheckpointReport`; for a training checkpoint of the original (`model.ckpt-N`) it
      carries `global_step` and the Adam moments for the training loop.
    Raises:
      DamagedCheckpointError: a file of the checkpoint missing, cut short or corrupt (every
        tensor is read, so checksummed, before anything is assigned).
      CheckpointError: a shape mismatch, a missing encoder variable or an encoder variable the
        model does not have (another architecture), each named with its expected and found
        shape. Nothing is assigned then.
    """
    prefix = resolve_checkpoint_path(path)
    reader = open_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    table = original_variable_map(model)
    required = model.required_checkpoint_scopes()

    problems, not_in_checkpoint, unused = [], [], []
    slots, global_step = {}, None
    for name, variable in table.items():
        if name not in shapes:
            if name.startswith(required):
                problems.append(f"{name}: expected shape {_shape(variable.shape)}, not in checkpoint")
            else:
                not_in_checkpoint.append(name)
        elif tuple(shapes[name]) != tuple(variable.shape):
            problems.append(
                f"{name}: expected shape {_shape(variable.shape)}, found {_shape(shapes[name])}"
            )
        elif not dtypes[name].is_floating:
            problems.append(f"{name}: expected a float tensor, found {dtypes[name].name}")
    for name in sorted(shapes):
        if name in table:
            continue
        base, _, slot = name.rpartition("/")
        if name == GLOBAL_STEP:
            global_step = int(read_tensor(reader, prefix, name))
        elif base in table:
            if tuple(shapes[name]) != tuple(table[base].shape):
                problems.append(
                    f"{name}: expected shape {_shape(table[base].shape)}, found {_shape(shapes[name])}"
                )
            else:
                slots.setdefault(slot, {})[base] = read_tensor(reader, prefix, name)
        elif name.startswith(required):
            problems.append(f"{name}: not a variable of this model (found shape {_shape(shapes[name])})")
        else:
            unused.append(name)
    if problems:
        raise CheckpointError(
            f"checkpoint {prefix} does not fit the model (bert config: "
            f"L={model.config.num_hidden_layers}, H={model.config.hidden_size}, "
            f"V={model.config.vocab_size}, P={model.config.max_position_embeddings}); "
            f"{len(problems)} problem(s):\n  " + "\n  ".join(problems)
        )

    # Every tensor is read (and checksummed) before the first assignment: a damaged file
    # leaves the model as it was.
    values = {name: read_tensor(reader, prefix, name) for name in table if name in shapes}
    for name in unused:
        if dtypes[name] != tf.variant:
            read_tensor(reader, prefix, name)
    loaded = []
    for name, value in values.items():
        table[name].assign(value.astype(np.float32, copy=False))
        loaded.append(name)
    report = CheckpointReport(prefix, loaded, not_in_checkpoint, unused, global_step, slots)
    logging.info(report.summary())
    return report


def _to_numpy(value):
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def _checkpoint_tensors(model, optimizer_state, global_step, extra_tensors):
    """The (name, value) pairs a checkpoint of `model` holds, checked against the name table."""
    table = original_variable_map(model)
    tensors = {name: _to_numpy(variable).astype(np.float32) for name, variable in table.items()}
    for slot, values in (optimizer_state or {}).items():
        for name, value in values.items():
            if name not in table:
                raise CheckpointError(f"optimizer_state[{slot!r}] names {name!r}, not a variable of the model")
            value = _to_numpy(value).astype(np.float32)
            if value.shape != tuple(table[name].shape):
                raise CheckpointError(
                    f"optimizer_state[{slot!r}][{name!r}]: expected shape "
                    f"{_shape(table[name].shape)}, got {_shape(value.shape)}"
                )
            tensors[f"{name}/{slot}"] = value
    if global_step is not None:
        tensors[GLOBAL_STEP] = np.asarray(global_step, dtype=np.int64)
    for name, value in (extra_tensors or {}).items():
        if name in tensors:
            raise CheckpointError(f"extra tensor {name!r} clashes with a model or optimizer name")
        tensors[name] = _to_numpy(value)
    return tensors


def _relative(directory, prefix):
    return os.path.basename(prefix) if os.path.dirname(prefix) == directory else prefix


def write_checkpoint_state(directory, latest_prefix, all_prefixes):
    """Writes the `checkpoint` state file (the text proto TF's Saver and Estimator read)."""
    directory = os.fspath(directory)
    lines = [f'model_checkpoint_path: "{_relative(directory, latest_prefix)}"']
    lines += [f'all_model_checkpoint_paths: "{_relative(directory, p)}"' for p in all_prefixes]
    files.write_atomic(os.path.join(directory, STATE_FILE), "\n".join(lines) + "\n")


def _state(directory):
    """`directory`'s state file as (latest prefix or None, [listed prefixes, oldest first]);
    (None, []) when it is absent or unreadable (e.g. empty)."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (ValueError, tf.errors.OpError) as e:
        logging.warning("%s: cannot read the checkpoint state (%s)",
                        os.path.join(directory, STATE_FILE), _first_line(e))
        return None, []
    if state is None:
        return None, []

    def absolute(p):
        # get_checkpoint_state already joins a relative entry to `directory` (itself perhaps
        # relative: "out/model.ckpt-3" for "out"); only a bare name is joined here.
        if os.path.isabs(p) or "://" in p or os.path.dirname(p):
            return p
        return os.path.join(directory, p)

    listed = []
    for p in state.all_model_checkpoint_paths:
        if absolute(p) not in listed:
            listed.append(absolute(p))
    return (absolute(state.model_checkpoint_path) if state.model_checkpoint_path else None,
            listed)


def checkpoint_prefixes(directory):
    """The prefixes listed in `directory`'s state file that exist, oldest first."""
    return [p for p in _state(directory)[1] if tf.io.gfile.exists(p + _INDEX_SUFFIX)]


def listed_checkpoints(directory):
    """Every prefix `directory`'s state file lists, whether its files exist or not, newest
    first: the latest, then the others from the last listed."""
    latest, listed = _state(directory)
    out = [latest] if latest else []
    return out + [p for p in reversed(listed) if p not in out]


def latest_checkpoint(directory):
    """The latest checkpoint prefix of `directory`'s state file, or None (no readable state
    file, or the latest's index is gone)."""
    latest, _ = _state(directory)
    return latest if latest and tf.io.gfile.exists(latest + _INDEX_SUFFIX) else None


def delete_checkpoint(prefix):
    """Removes a checkpoint's files, index first so it never looks complete with data missing."""
    for suffix in (_INDEX_SUFFIX, _DATA_SUFFIX):
        if tf.io.gfile.exists(prefix + suffix):
            tf.io.gfile.remove(prefix + suffix)


def save_original_checkpoint(
    model, prefix, optimizer_state=None, global_step=None, extra_tensors=None, update_state=True
):
    """Writes `model` as a checkpoint in the original names, readable by the original TF1 code.

    Writes `prefix.index` and `prefix.data-00000-of-00001` (float32 variables under their
    original names, `<name>/<slot>` for each optimizer slot, int64 `global_step` if given), then
    `bert_config.json` beside them and the folder's `checkpoint` state file (this prefix becomes
    the latest; earlier entries are kept).

    The files are written under a temporary prefix and renamed, data first and index last, so
    an interrupted write never leaves a `prefix.index` that looks complete. A full disk raises
    `files.OutputError` (the directory, the space needed) after removing what this call wrote:
    the checkpoints there before and the state file stay as they were.

    Args:
      model: a `BertModel` or `BertPretrainingModel`.
      prefix: e.g. `.../bert_model.ckpt` or `.../model.ckpt-1000`.
      optimizer_state: {slot name: {original variable name: value}}, e.g. Adam's `adam_m`.
      global_step: int, saved as int64 `global_step`.
      extra_tensors: {name: value} saved as they are (e.g. a loss scale).
      update_state: whether to update the `checkpoint` state file.
    Returns:
      The prefix written.
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix) or "."
    tensors = _checkpoint_tensors(model, optimizer_state, global_step, extra_tensors)
    tf.io.gfile.makedirs(directory)
    tmp_prefix = f"{prefix}.tmp{uuid.uuid4().hex}"
    names = sorted(tensors)
    # The data file, plus the index (an entry of about a hundred bytes per tensor).
    needed = sum(np.asarray(v).nbytes for v in tensors.values()) + 128 * len(names)
    try:
        with tf.device("/cpu:0"):
            tf.raw_ops.SaveV2(
                prefix=tmp_prefix,
                tensor_names=names,
                shape_and_slices=[""] * len(names),
                tensors=[tf.convert_to_tensor(tensors[n]) for n in names],
            )
    except BaseException as e:
        # TF's writer leaves `<tmp_prefix>.data-...tempstate<N>` files when it fails.
        written = sum(files.size(p) for p in tf.io.gfile.glob(tmp_prefix + ".*"))
        for path in tf.io.gfile.glob(tmp_prefix + ".*"):
            files.remove(path)
        if isinstance(e, Exception) and files.is_out_of_space(e):
            raise files.OutputError(files.out_of_space_message(
                f"checkpoint {prefix}", directory, needed=max(needed, written))) from None
        raise
    if tf.io.gfile.exists(prefix + _INDEX_SUFFIX):
        tf.io.gfile.remove(prefix + _INDEX_SUFFIX)
    tf.io.gfile.rename(tmp_prefix + _DATA_SUFFIX, prefix + _DATA_SUFFIX, overwrite=True)
    tf.io.gfile.rename(tmp_prefix + _INDEX_SUFFIX, prefix + _INDEX_SUFFIX, overwrite=True)
    try:
        model.config.to_json_file(os.path.join(directory, CONFIG_FILE))
        if update_state:
            earlier = [p for p in checkpoint_prefixes(directory) if p != prefix]
            write_checkpoint_state(directory, prefix, earlier + [prefix])
    except files.OutputError as e:
        # The state file still names the previous checkpoint: drop this one, never listed.
        delete_checkpoint(prefix)
        raise files.OutputError(f"checkpoint {prefix}: {e}") from None
    return prefix
