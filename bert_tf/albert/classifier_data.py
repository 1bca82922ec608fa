"""The GLUE tasks of google-research/albert's run_classifier.py (its `classifier_utils.py`
processors): which file of the GLUE root a split is, its columns, guids and labels, and its
records.

The original's processors differ from BERT's (`bert_tf.data.classifier_tasks`): `--data_dir` is
the GLUE root (`<data_dir>/MRPC/train.tsv`), every text and most labels and guids go through
`preprocess_text(x, lower=do_lower_case)` (whitespace collapsed, NFKD, combining marks dropped,
optionally lower-cased), guids are mostly the file's first column, the tasks are cola, mnli,
mismnli (MNLI's mismatched dev and test sets), mrpc, rte, sst-2, sts-b (regression), qqp, qnli and
wnli, and each test set gets a fixed dummy label. Each task's layout below is the original's.

Records: the original's `convert_single_example` and `file_based_convert_examples_to_features`
are BERT's with SentencePiece pieces (`[CLS] a [SEP] (b [SEP])`, the longer sequence truncated
first, zero padding, `input_ids`, `input_mask`, `segment_ids`, `label_ids` (float for sts-b),
`is_real_example`): `write_records` is `bert_tf.data.classifier.write_classifier_records` with
the original's `FullTokenizer` (`bert_tf.albert.tokenization`), whose SentencePiece path applies
no `preprocess_text` of its own, as the processors already did.

Where the original crashes or is silent, bad input raises `ClassifierDataError` naming the file
and line: a missing file, a row with too few columns (QQP's train and dev sets skip such rows,
as the original does, with a warning listing their lines), a label outside the task's labels,
an STS-B score that is not a number, bytes that are not UTF-8. Blank lines are skipped (the
original fails on them with IndexError, except QQP's, which it skips); row numbers in guids
still count them.

Importing this module does not import TensorFlow; only remote (`gs://`) paths do.
"""

import dataclasses
import os
from typing import Optional

from absl import logging

from bert_tf import files
from bert_tf.albert.tokenization import preprocess_text
from bert_tf.data.classifier import ClassifierDataError, InputExample, write_classifier_records
from bert_tf.data.classifier_tasks import read_rows

__all__ = ["Layout", "DataProcessor", "PROCESSORS", "get_processor", "write_records",
           "ClassifierDataError", "InputExample"]


@dataclasses.dataclass(frozen=True)
class Layout:
    """One split of a task as the original reads it.

    Attributes:
      file: path relative to the GLUE root (e.g. "MRPC/train.tsv").
      set_type: the original's name of the split ("train", "dev", "test", "dev_matched", ...).
      text_a, text_b: 0-based columns of the texts (text_b None: single sequence).
      label: column of the label (-1: the last, which must come after the other columns
        read); None: every example gets the processor's `test_label`.
      guid: column holding the guid; None: "<set_type>-<row index>" (0-based, header and blank
        lines included).
      guid_processed: whether the guid column goes through `preprocess_text`.
      has_header: whether the first row is a header (skipped).
    """
    file: str
    set_type: str
    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    guid: Optional[int] = None
    guid_processed: bool = True
    has_header: bool = True

    def min_columns(self):
        used = [c for c in (self.text_a, self.text_b, self.guid) if c is not None]
        if self.label is not None:
            used.append(max(used) + 1 if self.label == -1 else self.label)
        return max(used) + 1


class DataProcessor:
    """Reads one task's splits into `InputExample`s, as the original's processor of the task.

    Subclasses set `task_name`, `labels` (None: regression, float scores), `test_label` and
    `layouts` ({"train", "dev", "test"} -> Layout).

    Args:
      do_lower_case: `preprocess_text`'s `lower` (the original's `--do_lower_case`).
    """

    task_name = ""
    labels = None
    test_label = None
    layouts = {}
    # The original skips train/dev rows with too few columns (QQP) instead of failing.
    skip_short_rows = False

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    @property
    def is_regression(self):
        return self.labels is None

    def get_labels(self):
        """The label list (label id = index), or None for the regression task (sts-b; the
        original's list is [None]: one output)."""
        return None if self.labels is None else list(self.labels)

    def input_file(self, data_dir, split):
        """The path of a split's file ("train", "dev" or "test"), whether it exists or not."""
        return os.path.join(data_dir, *self.layouts[split].file.split("/"))

    def get_train_examples(self, data_dir):
        return self.get_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self.get_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self.get_examples(data_dir, "test")

    def process_text(self, text):
        return preprocess_text(text, lower=self.do_lower_case)

    def get_examples(self, data_dir, split):
        """list of InputExample of `split`, read from its file in the GLUE root `data_dir`."""
        layout = self.layouts[split]
        path = self.input_file(data_dir, split)
        if not files.is_file(path):
            raise ClassifierDataError(
                f"{path}: no such file (task {self.task_name!r} reads its {split} set from "
                f"{layout.file} under --data_dir, the GLUE root)")
        examples, skipped = [], []
        need = layout.min_columns()
        for index, (line_number, row) in enumerate(read_rows(path)):
            if (index == 0 and layout.has_header) or not row:
                continue
            if len(row) < need:
                if self.skip_short_rows and split != "test":
                    skipped.append(line_number)
                    continue
                raise ClassifierDataError(
                    f"{path} line {line_number}: expected at least {need} tab-separated "
                    f"columns, found {len(row)}")
            examples.append(self._example(layout, index, row, path, line_number))
        if skipped:
            logging.warning("%s: skipped %d rows with fewer than %d columns, as the original "
                            "(lines %s%s)", path, len(skipped), need,
                            ", ".join(map(str, skipped[:10])), ", ..." if len(skipped) > 10 else "")
        return examples

    def _example(self, layout, index, row, path, line_number):
        if layout.guid is None:
            guid = f"{layout.set_type}-{index}"
        elif layout.guid_processed:
            guid = self.process_text(row[layout.guid])
        else:
            guid = row[layout.guid]
        text_b = None if layout.text_b is None else self.process_text(row[layout.text_b])
        if layout.label is None:
            label = self.test_label
        else:
            label = self._label(row[layout.label], path, line_number)
        return InputExample(guid, self.process_text(row[layout.text_a]), text_b, label)

    def _label(self, raw, path, line_number):
        if self.is_regression:
            try:
                return float(raw)
            except ValueError:
                raise ClassifierDataError(
                    f"{path} line {line_number}: score {raw!r} is not a number") from None
        label = self.process_text(raw)
        if label not in self.labels:
            raise ClassifierDataError(
                f"{path} line {line_number}: label {raw!r} is not one of the task's labels "
                f"{list(self.labels)}")
        return label


def _glue(directory, train_dev, test, dev_file="dev.tsv", test_file="test.tsv",
          set_types=("train", "dev", "test")):
    """{"train", "dev", "test"} -> Layout: train and dev with the `train_dev` fields, test with
    the `test` fields, files under `directory`."""
    return {
        "train": Layout(f"{directory}/train.tsv", set_types[0], **train_dev),
        "dev": Layout(f"{directory}/{dev_file}", set_types[1], **train_dev),
        "test": Layout(f"{directory}/{test_file}", set_types[2], **test),
    }


_NLI_LABELS = ("contradiction", "entailment", "neutral")
_BINARY_LABELS = ("0", "1")
_ENTAILMENT_LABELS = ("entailment", "not_entailment")
# index, sentence 1, sentence 2, label (test without it); guids from the processed index.
_INDEXED_PAIRS = (dict(text_a=1, text_b=2, label=-1, guid=0), dict(text_a=1, text_b=2, guid=0))


class MnliProcessor(DataProcessor):
    """MultiNLI, matched dev and test sets: texts in columns 8 and 9, the label last, guids
    the processed first column (the original relies on them for GLUE submissions)."""

    task_name = "mnli"
    labels = _NLI_LABELS
    test_label = "contradiction"
    layouts = _glue("MNLI", dict(text_a=8, text_b=9, label=-1, guid=0),
                    dict(text_a=8, text_b=9, guid=0), dev_file="dev_matched.tsv",
                    test_file="test_matched.tsv", set_types=("train", "dev_matched", "test"))


class MisMnliProcessor(MnliProcessor):
    """MultiNLI with its mismatched dev and test sets."""

    task_name = "mismnli"
    layouts = _glue("MNLI", dict(text_a=8, text_b=9, label=-1, guid=0),
                    dict(text_a=8, text_b=9, guid=0), dev_file="dev_mismatched.tsv",
                    test_file="test_mismatched.tsv")


class MrpcProcessor(DataProcessor):
    """MRPC: `Quality  #1 ID  #2 ID  #1 String  #2 String`; train/dev guids are row indices,
    test guids the first column as it is."""

    task_name = "mrpc"
    labels = _BINARY_LABELS
    test_label = "0"
    layouts = _glue("MRPC", dict(text_a=3, text_b=4, label=0),
                    dict(text_a=3, text_b=4, guid=0, guid_processed=False))


class ColaProcessor(DataProcessor):
    """CoLA: train/dev have no header (source, label, original label, sentence), guids are row
    indices; test has one (index, sentence), guids its first column as it is."""

    task_name = "cola"
    labels = _BINARY_LABELS
    test_label = "0"
    layouts = _glue("CoLA", dict(text_a=3, label=1, has_header=False),
                    dict(text_a=1, guid=0, guid_processed=False))


class Sst2Processor(DataProcessor):
    """SST-2: train/dev `sentence  label` with row-index guids, test `index  sentence`."""

    task_name = "sst-2"
    labels = _BINARY_LABELS
    test_label = "0"
    layouts = _glue("SST-2", dict(text_a=0, label=1), dict(text_a=1, guid=0))


class StsbProcessor(DataProcessor):
    """STS-B, a regression task: texts in columns 7 and 8, the score (a float, not processed)
    last; test examples get the score 0."""

    task_name = "sts-b"
    labels = None
    test_label = 0.0
    layouts = _glue("STS-B", dict(text_a=7, text_b=8, label=-1, guid=0),
                    dict(text_a=7, text_b=8, guid=0))


class QqpProcessor(DataProcessor):
    """QQP: train/dev `id  qid1  qid2  question1  question2  is_duplicate` (rows with fewer
    columns skipped, as the original), test `id  question1  question2`; guids the first
    column as it is."""

    task_name = "qqp"
    labels = _BINARY_LABELS
    test_label = "0"
    skip_short_rows = True
    layouts = _glue("QQP", dict(text_a=3, text_b=4, label=5, guid=0, guid_processed=False),
                    dict(text_a=1, text_b=2, guid=0, guid_processed=False))


class QnliProcessor(DataProcessor):
    """QNLI: `index  question  sentence  label` (test without the label)."""

    task_name = "qnli"
    labels = _ENTAILMENT_LABELS
    test_label = "entailment"
    layouts = _glue("QNLI", *_INDEXED_PAIRS, set_types=("train", "dev_matched", "test_matched"))


class RteProcessor(DataProcessor):
    """RTE: `index  sentence1  sentence2  label` (test without the label)."""

    task_name = "rte"
    labels = _ENTAILMENT_LABELS
    test_label = "entailment"
    layouts = _glue("RTE", *_INDEXED_PAIRS)


class WnliProcessor(DataProcessor):
    """WNLI: RTE's layout with the labels "0"/"1"."""

    task_name = "wnli"
    labels = _BINARY_LABELS
    test_label = "0"
    layouts = _glue("WNLI", *_INDEXED_PAIRS)


PROCESSORS = {
    "cola": ColaProcessor,
    "mnli": MnliProcessor,
    "mismnli": MisMnliProcessor,
    "mrpc": MrpcProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "qqp": QqpProcessor,
    "qnli": QnliProcessor,
    "wnli": WnliProcessor,
}


def get_processor(task_name, do_lower_case=True):
    """The processor of `task_name` (case-insensitive, as the original lower-cases it).

    Raises:
      ClassifierDataError: an unknown task, naming the known ones.
    """
    name = (task_name or "").lower()
    if name not in PROCESSORS:
        raise ClassifierDataError(
            f"--task_name={task_name!r}: Task not found; expected one of {', '.join(PROCESSORS)}")
    return PROCESSORS[name](do_lower_case=do_lower_case)


def write_records(examples, label_list, max_seq_length, tokenizer, output_file, meta=None):
    """The original's `file_based_convert_examples_to_features`: writes the records of
    `examples` to `output_file` (under a temporary name, renamed when complete; with `meta`, its
    sidecar `bert_tf.data.records`). `tokenizer`: the original's `FullTokenizer` with a
    SentencePiece model (`bert_tf.albert.tokenization.FullTokenizer`). Returns the number of
    records."""
    return write_classifier_records(examples, label_list, max_seq_length, tokenizer,
                                    output_file, meta=meta)
