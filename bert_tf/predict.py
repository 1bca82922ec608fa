"""Answer text lines with an exported SavedModel (`python -m bert_tf.predict`).

    python -m bert_tf.predict --export_dir=EXPORT_DIR [--input_file=F] [--output_file=O]
        [--batch_size=32]

Reads UTF-8 lines from --input_file (default stdin) and writes one JSON object per line, in
order, to --output_file (default stdout; a file is written under a temporary name and renamed
when complete: never half-written). What a line holds depends on the export's task (its
bert_tf_export.json):

  classifier, features  `text_a` or `text_a<TAB>text_b`
                        -> classifier {"label": str, "probabilities": {label: float}}
                        -> features {"input_ids": [int] (real tokens), "layers": [[[float] per
                           layer] per token]}
  tagging               a text -> {"tags": [str per whitespace word]} (plus "words" when the
                        text's `str.split()` has as many words)
  squad                 `question<TAB>context` (split at the first tab) -> {"answer": str,
                        "score": float}, plus "null_score_diff": float for a SQuAD 2.0 export
                        (the answer is "" when it exceeds the export's threshold)

Only the line's final newline is removed; other whitespace is the model's business.
"""

import argparse
import contextlib
import json
import os
import sys

from bert_tf import files
from bert_tf.export import EXPORT_INFO_FILE

_FIELDS = {"classifier": ("text_a", "text_b"), "features": ("text_a", "text_b"),
           "tagging": ("text",), "squad": ("question", "context")}


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


def predict_lines(export_dir, lines, batch_size=32):
    """Yields one JSON-ready dict per line of `lines` (an iterable of str), in order."""
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
    batch = []

    def run(batch):
        columns = {name: tf.constant([fields[k] for fields in batch], tf.string)
                   for k, name in enumerate(names)}
        outputs = {k: v.numpy() for k, v in serve(**columns).items()}
        return result_rows(task, info, batch, outputs)

    for number, line in enumerate(lines, start=1):
        if line.endswith("\n"):
            line = line[:-1]
        batch.append(parse_line(task, line, f"line {number}"))
        if len(batch) == batch_size:
            yield from run(batch)
            batch = []
    if batch:
        yield from run(batch)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.predict", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--input_file", default=None, help="default: stdin")
    parser.add_argument("--output_file", default=None, help="default: stdout")
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args(argv)
    if args.batch_size <= 0:
        parser.error(f"--batch_size={args.batch_size}: expected a positive number")
    source_name = args.input_file or "stdin"
    try:
        source = (open(args.input_file, encoding="utf-8", newline="\n") if args.input_file
                  else sys.stdin)
    except OSError as e:
        parser.error(f"--input_file={args.input_file}: {e.strerror}")
    sink = (files.atomic_open(args.output_file) if args.output_file
            else contextlib.nullcontext(sys.stdout))
    try:
        with sink as out:  # a file is renamed to --output_file only once complete
            for row in predict_lines(args.export_dir, source, args.batch_size):
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    except (PredictError, UnicodeDecodeError) as e:
        raise SystemExit(f"bert_tf.predict: {source_name}: {e}") from None
    except files.OutputError as e:
        raise SystemExit(f"bert_tf.predict: {e}") from None
    finally:
        if args.input_file:
            source.close()


if __name__ == "__main__":
    main()
