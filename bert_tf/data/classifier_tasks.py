"""The classifier tasks of run_classifier.py: which file of data_dir a split is, which columns
hold the texts, the label and the guid, and the label list (REFERENCE.md §11, FINETUNING.md §1.2).

One processor per task (`get_processor`): cola, mnli, mrpc and xnli behave exactly as the
original's; sst-2, qnli, qqp, rte, wnli and sts-b read the standard GLUE distribution; custom
reads a user's own TSV/CSV with a header (docs/classification-data.md). They read the files
into `bert_tf.data.classifier.InputExample`s; every bad input raises `ClassifierDataError`
naming the file and line.

Importing this module does not import TensorFlow; only remote (`gs://`) paths do.
"""

import csv
import dataclasses
import os
from typing import Optional

from absl import logging

from bert_tf import files
from bert_tf.data.classifier import ClassifierDataError, InputExample


# ---------------------------------------------------------------------------------------------
# Reading files.


def _read_text(path):
    """The file's text, decoded as UTF-8 (errors name the line)."""
    try:
        if files.is_remote(path):
            with files.tf_gfile().GFile(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except (FileNotFoundError, IsADirectoryError):
        raise ClassifierDataError(f"{path}: no such file") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ClassifierDataError(
            f"{path} line {line}: not valid UTF-8 (byte {e.start}: {e.reason})") from None


def _require_file(path, task_name, split, expected):
    if not files.is_file(path):
        raise ClassifierDataError(f"{path}: no such file (task {task_name!r} reads its {split} "
                                  f"split from {expected} in --data_dir)")


def read_rows(path, delimiter="\t", quotechar=None):
    """Reads a delimited text file.

    With the defaults, as the original's `_read_tsv`: fields split on tabs, no quoting (a `"`
    is text), lines split on "\\n" only. `quotechar='"'` reads CSV-style quoted fields (which may
    span lines).

    Returns:
      list of (line number (1-based, where the row starts), list of str fields); a blank line
      gives an empty field list.
    """
    text = _read_text(path)
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    reader = csv.reader((line + "\n" for line in lines), delimiter=delimiter,
                        quotechar=quotechar)
    rows = []
    start = 1
    try:
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as e:
        raise ClassifierDataError(f"{path} line {start}: cannot parse the row ({e})") from None
    return rows


# ---------------------------------------------------------------------------------------------
# Processors.


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one split's data is.

    Attributes:
      file: path of the file, relative to data_dir.
      set_name: the guid prefix.
      text_a, text_b: 0-based columns of the texts (text_b None: single sequence).
      label: column of the label (-1: the last column, which must come after the texts);
        None for test sets: every example gets the processor's dummy label.
      guid_column: the column whose value follows the prefix in the guid; None: the 0-based
        row index (header and blank lines included).
      has_header: whether the first row is a header (skipped).
    """
    file: str
    set_name: str
    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    guid_column: Optional[int] = None
    has_header: bool = True

    def min_columns(self):
        used = [c for c in (self.text_a, self.text_b, self.guid_column) if c is not None]
        if self.label is not None:
            used.append(max(used) + 1 if self.label == -1 else self.label)
        return max(used) + 1


class DataProcessor:
    """Reads the splits of one task into `InputExample`s.

    Subclasses set `task_name`, `labels` (None for regression) and `layouts` (split -> Layout);
    `dev_splits` / `test_splits` name the eval and predict splits, the first being the default.
    """

    task_name = ""
    labels = None
    is_regression = False
    layouts = {}
    dev_splits = ("dev",)
    test_splits = ("test",)
    options = ()
    # Rows with too few columns raise ClassifierDataError unless this is set (then they are
    # skipped with a warning naming their lines).
    skip_short_rows = False

    def get_labels(self, data_dir=None):
        """The label list (label id = index), or None for a regression task."""
        del data_dir  # fixed for this task
        return None if self.labels is None else list(self.labels)

    def splits(self):
        return tuple(self.layouts)

    def layout(self, split):
        if split not in self.layouts:
            raise ClassifierDataError(
                f"task {self.task_name!r} has no split {split!r}; it has "
                f"{', '.join(self.layouts) or 'none'}")
        return self.layouts[split]

    def input_file(self, data_dir, split):
        """The path of a split's file (whether or not it exists)."""
        return os.path.join(data_dir, self.layout(split).file)

    def has_split(self, data_dir, split):
        """Whether the split's file is in data_dir."""
        return files.is_file(self.input_file(data_dir, split))

    def get_train_examples(self, data_dir):
        return self.get_examples(data_dir, "train")

    def get_dev_examples(self, data_dir, split=None):
        return self.get_examples(data_dir, split or self.dev_splits[0])

    def get_test_examples(self, data_dir, split=None):
        return self.get_examples(data_dir, split or self.test_splits[0])

    def dummy_label(self):
        """The label test examples get (their files have none)."""
        return 0.0 if self.is_regression else self.labels[0]

    def get_examples(self, data_dir, split):
        """list of InputExample of one split (e.g. "train", "dev", "dev_mismatched")."""
        path = self.input_file(data_dir, split)
        _require_file(path, self.task_name, split, repr(self.layout(split).file))
        return self._create_examples(read_rows(path), self.layout(split), path)

    def _keep(self, row, layout):
        """Whether a (non-header, non-blank) row of a split is an example."""
        del row, layout
        return True

    def _convert_label(self, label):
        return label

    def _parse_label(self, raw, path, line_number):
        label = self._convert_label(raw)
        if self.is_regression:
            try:
                return float(label)
            except ValueError:
                raise ClassifierDataError(
                    f"{path} line {line_number}: score {raw!r} is not a number") from None
        if label not in self.labels:
            raise ClassifierDataError(
                f"{path} line {line_number}: label {raw!r} is not one of the task's labels "
                f"{list(self.labels)}")
        return label

    def _create_examples(self, rows, layout, path):
        examples = []
        need = layout.min_columns()
        skipped = []
        for index, (line_number, row) in enumerate(rows):
            if (index == 0 and layout.has_header) or not row or not self._keep(row, layout):
                continue
            if len(row) < need:
                if self.skip_short_rows:
                    skipped.append(line_number)
                    continue
                raise ClassifierDataError(
                    f"{path} line {line_number}: expected at least {need} tab-separated "
                    f"columns, found {len(row)}")
            guid_part = index if layout.guid_column is None else row[layout.guid_column]
            text_b = None if layout.text_b is None else row[layout.text_b]
            if layout.label is None:
                label = self.dummy_label()
            else:
                label = self._parse_label(row[layout.label], path, line_number)
            examples.append(InputExample(f"{layout.set_name}-{guid_part}", row[layout.text_a],
                                         text_b, label))
        if skipped:
            logging.warning("%s: skipped %d rows with fewer than %d columns (lines %s%s)", path,
                            len(skipped), need, ", ".join(map(str, skipped[:10])),
                            ", ..." if len(skipped) > 10 else "")
        return examples


_NLI_LABELS = ("contradiction", "entailment", "neutral")
_BINARY_LABELS = ("0", "1")
_ENTAILMENT_LABELS = ("entailment", "not_entailment")


class XnliProcessor(DataProcessor):
    """XNLI as the original reads it: MultiNLI machine-translated training data and the XNLI
    dev set filtered to one language ("zh", hard-coded in the original). No test split.
    "contradictory" (the translated training files' spelling) is read as "contradiction"."""

    task_name = "xnli"
    labels = _NLI_LABELS
    options = ("language",)
    test_splits = ()

    def __init__(self, language="zh"):
        self.language = language
        self.layouts = {
            "train": Layout(os.path.join("multinli", f"multinli.train.{language}.tsv"), "train",
                            text_a=0, text_b=1, label=2),
            # guids keep the raw row index, so they have gaps where other languages were.
            "dev": Layout("xnli.dev.tsv", "dev", text_a=6, text_b=7, label=1),
        }

    def get_test_examples(self, data_dir, split=None):
        raise ClassifierDataError(
            "task 'xnli' has no test set (the original reads only multinli.train.<lang>.tsv "
            "and xnli.dev.tsv); run with --do_predict=false, or use --task_name=custom")

    def _keep(self, row, layout):
        return layout.set_name != "dev" or row[0] == self.language

    def _convert_label(self, label):
        return "contradiction" if label == "contradictory" else label


class MnliProcessor(DataProcessor):
    """MultiNLI (GLUE): matched and mismatched dev/test sets; the label is the last column."""

    task_name = "mnli"
    labels = _NLI_LABELS
    dev_splits = ("dev_matched", "dev_mismatched")
    test_splits = ("test_matched", "test_mismatched")
    layouts = {
        "train": Layout("train.tsv", "train", 8, 9, label=-1, guid_column=0),
        "dev_matched": Layout("dev_matched.tsv", "dev_matched", 8, 9, label=-1, guid_column=0),
        "dev_mismatched": Layout("dev_mismatched.tsv", "dev_mismatched", 8, 9, label=-1,
                                 guid_column=0),
        # The original names matched test guids "test-<id>".
        "test_matched": Layout("test_matched.tsv", "test", 8, 9, guid_column=0),
        "test_mismatched": Layout("test_mismatched.tsv", "test_mismatched", 8, 9,
                                  guid_column=0),
    }

    def layout(self, split):
        # "dev" / "test" mean the matched sets, as in the original.
        return super().layout({"dev": "dev_matched", "test": "test_matched"}.get(split, split))


def _glue_layouts(train_dev, test):
    """train/dev/test layouts from the (train and dev) and test Layout keyword arguments."""
    return {
        "train": Layout("train.tsv", "train", **train_dev),
        "dev": Layout("dev.tsv", "dev", **train_dev),
        "test": Layout("test.tsv", "test", **test),
    }


# `index  text_a  text_b  label`, test without the label; guids from the index (QNLI, RTE, WNLI).
_INDEXED_PAIR_LAYOUTS = _glue_layouts(dict(text_a=1, text_b=2, label=3, guid_column=0),
                                      dict(text_a=1, text_b=2, guid_column=0))


class MrpcProcessor(DataProcessor):
    """MRPC (GLUE): `Quality  #1 ID  #2 ID  #1 String  #2 String`; guids are row indices."""

    task_name = "mrpc"
    labels = _BINARY_LABELS
    layouts = _glue_layouts(dict(text_a=3, text_b=4, label=0), dict(text_a=3, text_b=4))


class ColaProcessor(DataProcessor):
    """CoLA (GLUE): train/dev have no header (source, label, original label, sentence); test has
    one (index, sentence)."""

    task_name = "cola"
    labels = _BINARY_LABELS
    layouts = _glue_layouts(dict(text_a=3, label=1, has_header=False), dict(text_a=1))


class Sst2Processor(DataProcessor):
    """SST-2 (GLUE): train/dev `sentence  label`, test `index  sentence`."""

    task_name = "sst-2"
    labels = _BINARY_LABELS
    layouts = _glue_layouts(dict(text_a=0, label=1), dict(text_a=1))


class QnliProcessor(DataProcessor):
    """QNLI (GLUE): `index  question  sentence  label` (test without label)."""

    task_name = "qnli"
    labels = _ENTAILMENT_LABELS
    layouts = _INDEXED_PAIR_LAYOUTS


class QqpProcessor(DataProcessor):
    """QQP (GLUE): train/dev `id  qid1  qid2  question1  question2  is_duplicate`, test
    `id  question1  question2`.

    The distributed train.tsv has a few rows with missing columns (questions broken over two
    lines); they are skipped with a warning listing their lines, as other GLUE readers do.
    """

    task_name = "qqp"
    labels = _BINARY_LABELS
    skip_short_rows = True
    layouts = _glue_layouts(dict(text_a=3, text_b=4, label=5, guid_column=0),
                            dict(text_a=1, text_b=2, guid_column=0))


class RteProcessor(DataProcessor):
    """RTE (GLUE): `index  sentence1  sentence2  label` (test without label)."""

    task_name = "rte"
    labels = _ENTAILMENT_LABELS
    layouts = _INDEXED_PAIR_LAYOUTS


class WnliProcessor(RteProcessor):
    """WNLI (GLUE): the RTE layout with labels "0"/"1"."""

    task_name = "wnli"
    labels = _BINARY_LABELS


class StsbProcessor(DataProcessor):
    """STS-B (GLUE), a regression task: `index genre filename year old_index source1 source2
    sentence1 sentence2 score` (test without score); labels are float scores."""

    task_name = "sts-b"
    labels = None
    is_regression = True
    layouts = _glue_layouts(dict(text_a=7, text_b=8, label=-1, guid_column=0),
                            dict(text_a=7, text_b=8, guid_column=0))


class CustomProcessor(DataProcessor):
    """A user's own data: `train`, `dev` and `test` files in data_dir, each `.tsv` (tab-separated,
    quotes are text) or `.csv` (comma-separated, `"` quoting), each with a header row naming
    the columns `text_a`, optionally `text_b`, and `label` (optional in test, where it is
    ignored: test examples get the first label). Other columns are ignored.

    Args:
      labels: the label list (list of str, or a comma-separated str such as a `--labels`
        flag). None: the sorted distinct labels of the training file.
    """

    task_name = "custom"
    options = ("labels",)
    layouts = {"train": None, "dev": None, "test": None}

    def __init__(self, labels=None):
        if isinstance(labels, str):
            labels = [label.strip() for label in labels.split(",")]
        if labels is not None:
            labels = list(labels)
            if not labels or not all(labels):
                raise ClassifierDataError(
                    f"--labels={','.join(labels)!r}: expected a comma-separated list of "
                    "non-empty labels")
            if len(set(labels)) != len(labels):
                raise ClassifierDataError(f"--labels={','.join(labels)!r} names a label twice")
        self.explicit_labels = labels
        self.labels = labels

    def input_file(self, data_dir, split):
        self.layout(split)
        found = [os.path.join(data_dir, split + ext) for ext in (".tsv", ".csv")
                 if files.is_file(os.path.join(data_dir, split + ext))]
        if len(found) > 1:
            raise ClassifierDataError(
                f"{data_dir}: both {split}.tsv and {split}.csv exist; keep one")
        return found[0] if found else os.path.join(data_dir, split + ".tsv")

    def get_labels(self, data_dir=None):
        if self.labels is None:
            if data_dir is None:
                raise ClassifierDataError(
                    "task 'custom': pass --labels, or a data_dir whose train file gives them")
            self.labels = sorted({label for _, _, _, _, label in self._rows(data_dir, "train")})
            if not self.labels:
                raise ClassifierDataError(
                    f"{self.input_file(data_dir, 'train')}: no examples to take the labels from")
        return list(self.labels)

    def _rows(self, data_dir, split):
        """Yields (path, line number, text_a, text_b or None, label or None) of each row."""
        path = self.input_file(data_dir, split)
        _require_file(path, self.task_name, split, f"{split}.tsv or {split}.csv")
        is_csv = path.endswith(".csv")
        rows = read_rows(path, delimiter="," if is_csv else "\t",
                         quotechar='"' if is_csv else None)
        header = [name.strip().lstrip("\ufeff") for name in rows[0][1]] if rows else []
        columns = {}
        for index, name in enumerate(header):
            columns.setdefault(name, index)
        required = ("text_a",) if split == "test" else ("text_a", "label")
        missing = [name for name in required if name not in columns]
        if missing:
            raise ClassifierDataError(
                f"{path} line 1: the header must name the columns {', '.join(required)} "
                f"(and optionally text_b); missing {', '.join(missing)}; found {header}")
        a, b = columns["text_a"], columns.get("text_b")
        label = None if split == "test" else columns["label"]
        need = max(c for c in (a, b, label) if c is not None) + 1
        for line_number, row in rows[1:]:
            if not row:
                continue
            if len(row) < need:
                raise ClassifierDataError(
                    f"{path} line {line_number}: expected at least {need} columns (up to "
                    f"{header[need - 1]!r}), found {len(row)}")
            yield (path, line_number, row[a], None if b is None else row[b],
                   None if label is None else row[label])

    def get_examples(self, data_dir, split):
        labels = self.get_labels(data_dir)
        examples = []
        for index, (path, line_number, text_a, text_b, label) in enumerate(
                self._rows(data_dir, split), start=1):
            if label is None:
                label = labels[0]
            elif label not in labels:
                raise ClassifierDataError(
                    f"{path} line {line_number}: label {label!r} is not one of the labels "
                    f"{labels}" + ("" if self.explicit_labels else
                                   " (the distinct labels of the train file)"))
            examples.append(InputExample(f"{split}-{index}", text_a, text_b, label))
        return examples


PROCESSORS = {
    "cola": ColaProcessor,
    "mnli": MnliProcessor,
    "mrpc": MrpcProcessor,
    "xnli": XnliProcessor,
    "sst-2": Sst2Processor,
    "qnli": QnliProcessor,
    "qqp": QqpProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "sts-b": StsbProcessor,
    "custom": CustomProcessor,
}
ALIASES = {"sst2": "sst-2", "stsb": "sts-b"}


def get_processor(task_name, **kwargs):
    """The processor of `task_name` (case-insensitive; "sst2" and "stsb" are aliases).

    Args:
      task_name: str.
      **kwargs: processor options; None values are ignored, so flags can be passed through
        unconditionally. custom takes `labels`, xnli `language`.

    Raises:
      ClassifierDataError: unknown task, or an option the task does not take.
    """
    name = (task_name or "").lower()
    name = ALIASES.get(name, name)
    if name not in PROCESSORS:
        raise ClassifierDataError(
            f"--task_name={task_name!r}: unknown task; expected one of "
            f"{', '.join(PROCESSORS)} (aliases: {', '.join(ALIASES)})")
    cls = PROCESSORS[name]
    options = {k: v for k, v in kwargs.items() if v is not None}
    for key in options:
        if key not in cls.options:
            takers = [n for n, c in PROCESSORS.items() if key in c.options]
            raise ClassifierDataError(
                f"--{key} does not apply to task {name!r} (only to: {', '.join(takers)})")
    return cls(**options)
