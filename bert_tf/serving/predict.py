"""Answers of an exported SavedModel to text lines: the logic of `python -m bert_tf.predict`
(bert_tf/predict.py, whose docstring gives what a line holds and what is written for it).

`predict_lines(export_dir, lines)` yields one JSON-ready dict per line, in order, answering
windows of lines sorted by length in batches; `read_export_info` reads the export's
bert_tf_export.json, `parse_line` a line's fields, `result_rows` a batch's outputs as dicts.
"""

import json
import os

from bert_tf.serving.export import EXPORT_INFO_FILE
from bert_tf.training.padding import in_input_order, length_order

_FIELDS = {"classifier": ("text_a", "text_b"), "features": ("text_a", "text_b"),
           "tagging": ("text",), "squad": ("question", "context")}
# Default --sort_window, in batches: a window's answers wait in memory until it is done.
SORT_WINDOW_BATCHES = 32
SORT_WINDOW_BATCHES_FEATURES = 8


class PredictError(ValueError):
    """A bad export directory or input line (names it and what was expected)."""


def read_export_info(export_dir):
    """The export's bert_tf_export.json as a dict (task, labels, ...)."""
    path = os.path.join(export_dir, EXPORT_INFO_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except FileNotFoundError:
        raise PredictError(f"--export_dir={export_dir}: no {EXPORT_INFO_FILE} (not a directory "
                           "written by `python -m bert_tf.export`)") from None
    except ValueError as e:
        raise PredictError(f"{path}: not valid JSON ({e})") from None
    if info.get("task") not in _FIELDS:
        raise PredictError(f"{path}: unknown task {info.get('task')!r}")
    return info


def parse_line(task, line, where):
    """One input line -> tuple of the signature's strings (see module docstring)."""
    if task == "tagging":
        return (line,)
    if task == "squad":
        fields = line.split("\t", 1)  # a context may hold tabs (they separate its words)
        if len(fields) != 2:
            raise PredictError(f"{where}: expected question<TAB>context, found no tab")
        return tuple(fields)
    fields = line.split("\t")
    if len(fields) > 2:
        raise PredictError(f"{where}: expected text_a or text_a<TAB>text_b, found "
                           f"{len(fields)} tab-separated fields")
    return (fields[0], fields[1] if len(fields) == 2 else "")


def _decoded(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def result_rows(task, info, inputs, outputs):
    """The signature's outputs (numpy) for a batch -> list of JSON-ready dicts."""
    rows = []
    for i, fields in enumerate(inputs):
        if task == "classifier":
            probabilities = outputs["probabilities"][i].tolist()
            rows.append({"label": _decoded(outputs["label"][i]),
                         "probabilities": dict(zip(info["labels"], probabilities))})
        elif task == "features":
            length = int(outputs["input_mask"][i].sum())
            rows.append({"input_ids": outputs["input_ids"][i, :length].tolist(),
                         "layers": outputs["layers"][i, :length].tolist()})
        elif task == "tagging":
            num_words = int(outputs["num_words"][i])
            row = {"tags": [_decoded(t) for t in outputs["tags"][i, :num_words]]}
            words = fields[0].split()
            if len(words) == num_words:
                row = {"words": words, **row}
            rows.append(row)
        else:
            row = {"answer": _decoded(outputs["answer"][i]), "score": float(outputs["score"][i])}
            if "null_score_diff" in outputs:  # SQuAD 2.0
                row["null_score_diff"] = float(outputs["null_score_diff"][i])
            rows.append(row)
    return rows


def predict_lines(export_dir, lines, batch_size=32, sort_window=None):
    """Yields one JSON-ready dict per line of `lines` (an iterable of str), in order.

    Lines are answered in windows of `sort_window` lines (default: see SORT_WINDOW_BATCHES),
    each sorted by length into batches of `batch_size`.
    """
    info = read_export_info(export_dir)
    task = info["task"]
    import tensorflow as tf
    try:  # exports made before WordPiece ran in core ops hold tensorflow-text's op
        import tensorflow_text  # noqa: F401
    except ImportError:
        pass

    try:
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    except (tf.errors.OpError, OSError, ValueError, IndexError) as e:
        # e.g. a truncated variables/variables.data-* file ("Read less bytes than requested").
        lines = str(getattr(e, "message", e)).strip().splitlines()
        raise PredictError(f"--export_dir={export_dir}: cannot load the SavedModel; its files "
                           f"are damaged or incomplete ({lines[0] if lines else type(e).__name__})"
                           ) from None
    names = _FIELDS[task]
    if sort_window is None:
        sort_window = batch_size * (SORT_WINDOW_BATCHES_FEATURES if task == "features"
                                    else SORT_WINDOW_BATCHES)

    def run(batch):
        """The outputs of each input of `batch` (numpy rows: converted when written)."""
        columns = {name: tf.constant([fields[k] for fields in batch], tf.string)
                   for k, name in enumerate(names)}
        outputs = {k: v.numpy() for k, v in serve(**columns).items()}
        return [{k: v[i:i + 1] for k, v in outputs.items()} for i in range(len(batch))]

    def answer(window):
        order, _ = length_order([sum(len(field) for field in fields) for fields in window])
        computed = (row for begin in range(0, len(order), batch_size)
                    for row in run([window[i] for i in order[begin:begin + batch_size]]))
        for index, outputs in in_input_order(computed, order):
            yield result_rows(task, info, [window[index]], outputs)[0]

    window = []
    for number, line in enumerate(lines, start=1):
        if line.endswith("\n"):
            line = line[:-1]
        window.append(parse_line(task, line, f"line {number}"))
        if len(window) >= max(sort_window, batch_size):
            yield from answer(window)
            window = []
    if window:
        yield from answer(window)
