"""`task.json`: which task (and label set) the checkpoints of a directory belong to.

A training run writes it beside its checkpoints (`output_dir.OutputDirectory`), and
`python -m bert_tf.hf import` beside a converted checkpoint; run_classifier.py and
run_tagging.py read their labels from it, export reads a classifier's or tagger's, and
`python -m bert_tf.hf export` the Hub's `id2label`. It holds the task's `describe()`:
{"task": ..., "labels": [...], ...}.

Imports nothing heavier than `bert_tf.files`, so that the Hub bridge and serving can read it
without the trainer. Local paths use `os`; paths with a scheme (`gs://...`) `tf.io.gfile`.
"""

import json
import os

from bert_tf import files

TASK_FILE = "task.json"


def task_file_path(directory):
    return os.path.join(directory, TASK_FILE)


def load_task_file(directory):
    """The JSON value in `directory`'s task.json.

    Raises:
      FileNotFoundError: there is no such file.
      ValueError: it is not JSON (nor UTF-8).
      OSError: it cannot be read.
    """
    path = task_file_path(directory)
    if not files.is_remote(path):
        with open(path, encoding="utf-8", newline="") as f:
            return json.load(f)
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote paths only)

    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path}: not found")
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except tf.errors.OpError as e:
        raise OSError(f"{path}: {e.message}") from None


def read_task_file(directory):
    """The dict of `directory`'s task.json (written beside checkpoints by a run, or by
    `python -m bert_tf.hf import`), or None when it is absent or unreadable."""
    try:
        saved = load_task_file(directory)
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def write_task_file(directory, description):
    """Writes `description` (a task's `describe()`) as `directory`'s task.json, whole."""
    files.write_atomic(task_file_path(directory),
                       json.dumps(description, indent=2, sort_keys=True) + "\n")
