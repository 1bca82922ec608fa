"""Record metadata: the `<file>.meta.json` sidecar beside a TFRecord file, and the number of
training steps its records make.

run_classifier.py converts its examples to records once and reuses them while nothing they are
made from has changed:

  records_meta         what a record file is made from: the task, the input files and the vocab
                       (each with its size and modification time), the flags;
  write_records_meta   the sidecar, written beside the record file once it is complete;
  records_are_current  whether the sidecar records the same meta and the file still has the size
                       it had when written;
  num_train_steps_and_warmup  the original's step arithmetic from the number of examples
                       (every fine-tuning task, through `FineTuningOptions.with_training_steps`).

Importing this module does not import TensorFlow; only remote (`gs://`) paths do.
"""

import json
import os

from bert_tf import files

META_SUFFIX = ".meta.json"
META_FORMAT = 1


class RecordsError(ValueError):
    """A bad value for the record arithmetic (names the flag)."""


def _file_size(path):
    if files.is_remote(path):
        return files.tf_gfile().stat(path).length
    return os.path.getsize(path)


def _normalized(meta):
    """`meta` as it reads back from JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(meta, sort_keys=True))


def _write_json(path, value):
    files.write_atomic(path, json.dumps(value, indent=1, sort_keys=True) + "\n")


def write_records_meta(output_file, meta, num_records):
    """Writes the sidecar `<output_file>.meta.json` of a complete record file: `meta` (from
    `records_meta`), the number of records and the file's size (`records_are_current`)."""
    _write_json(output_file + META_SUFFIX, {"meta": _normalized(meta), "num_records": num_records,
                                            "record_file_size": _file_size(output_file)})


def file_signature(path):
    """{"path", "size", "mtime_ns"} of a file (None values when it does not exist)."""
    path = str(path)
    if files.is_remote(path):
        if not files.tf_gfile().exists(path):
            return {"path": path, "size": None, "mtime_ns": None}
        stat = files.tf_gfile().stat(path)
        return {"path": path, "size": stat.length, "mtime_ns": stat.mtime_nsec}
    path = os.path.abspath(path)
    try:
        stat = os.stat(path)
    except OSError:
        return {"path": path, "size": None, "mtime_ns": None}
    return {"path": path, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def records_meta(task_name, input_files, max_seq_length, vocab_file, do_lower_case,
                 label_list, **extra):
    """What a record file is made from, for its sidecar.

    Args:
      task_name: str.
      input_files: path or list of paths read (e.g. `[processor.input_file(data_dir, split)]`);
        each is recorded with its size and modification time.
      max_seq_length, do_lower_case: the flags.
      vocab_file: path (recorded with its size and modification time).
      label_list: list of str, or None (regression).
      **extra: anything else the records depend on (JSON values), e.g. num_padding.

    Returns:
      a JSON-serializable dict.
    """
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    meta = {
        "format": META_FORMAT,
        "task_name": task_name,
        "input_files": [file_signature(p) for p in input_files],
        "max_seq_length": int(max_seq_length),
        "vocab_file": file_signature(vocab_file),
        "do_lower_case": bool(do_lower_case),
        "label_list": None if label_list is None else list(label_list),
    }
    meta.update(extra)
    return meta


def read_records_meta(output_file):
    """The sidecar of a record file as a dict ({"meta", "num_records", "record_file_size"}),
    or None when it is missing or unreadable."""
    path = output_file + META_SUFFIX
    try:
        if files.is_remote(path):
            if not files.tf_gfile().exists(path):
                return None
            with files.tf_gfile().GFile(path, "r") as f:
                return json.loads(f.read())
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def records_are_current(output_file, meta):
    """Whether `output_file` holds the records `meta` describes: its sidecar records the same
    meta (same inputs with the same sizes and modification times, same flags) and the file
    has the size it had when written."""
    sidecar = read_records_meta(output_file)
    if not isinstance(sidecar, dict) or sidecar.get("meta") != _normalized(meta):
        return False
    try:
        return files.is_file(output_file) and _file_size(output_file) == sidecar.get("record_file_size")
    except OSError:
        return False


def num_train_steps_and_warmup(num_examples, train_batch_size, num_train_epochs,
                               warmup_proportion):
    """(num_train_steps, num_warmup_steps) with the original's arithmetic:
    int(num_examples / train_batch_size * num_train_epochs), then int(steps * proportion)."""
    if train_batch_size <= 0:
        raise RecordsError(f"--train_batch_size={train_batch_size}: must be positive")
    num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
    return num_train_steps, int(num_train_steps * warmup_proportion)
