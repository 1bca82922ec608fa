"""RACE (reading comprehension, 4-option multiple choice) as google-research/albert's
race_utils.py reads and converts it: files -> examples -> features -> TFRecords.

  reader     `RaceProcessor`: `<data_dir>/RACE/<train|dev|test>/<middle|high>/all.txt`, one JSON
             document per line (`article`, `questions`, `options` (4 per question), `answers`
             ("A".."D"), `id`); middle before high, `--high_only` / `--middle_only` keep one
             level. Texts go through `preprocess_text(text, lower=do_lower_case)` (article,
             question, each option); an option is put in place of every "_" of its question,
             or after it with a space when the question has none. One example per question:
             its article, the 4 question+option texts ("endings"), the answer's index.
  features   `convert_single_example`: for each ending, `[CLS] article [SEP] ending [SEP]`;
             the ending keeps its LAST `max_qa_length` pieces (Python's `pieces[-n:]`: 0 keeps
             them all), then the article its first `max_seq_length - 3 - len(ending)`; segment
             0 up to the first [SEP], 1 after; zero padding to max_seq_length.
  records    `write_race_records`: the original's tf.train.Example records: input_ids,
             input_mask, segment_ids the 4 choices' sequences one after the other
             (int64 [4 * max_seq_length]), label_ids [1], is_real_example [1]; serialized
             without protobuf objects (the bytes of protobuf's deterministic serialization),
             written under a temporary name and renamed, with a `<file>.meta.json` sidecar.

Beyond the original (which reads all.txt only): a level directory without all.txt is read
from the release's one-document files (`<level>/*.txt`, each one JSON document, in name order),
as RACE.tar.gz ships them. Where the original crashes or is silent, ours refuses in one line
naming the file and line (`RaceDataError`): a missing file, a line that is not JSON or not a
RACE document, a question without 4 options or without an answer A-D (the original trains on
a label past the 4 choices with a zero loss), answers and questions of different counts, an
ending longer than `max_seq_length - 3` pieces after truncation (the original fails an
assert); blank lines are skipped.

Importing this module does not import TensorFlow; only `record_feature_spec` and remote
(`gs://`) paths do.
"""

import dataclasses
import glob
import json
import os
from typing import List

from absl import logging

from bert_tf import files
from bert_tf.albert.tokenization import preprocess_text
from bert_tf.data.classifier import write_example_records
from bert_tf.data.features import TAG_INT64_LIST, LengthPrefixed, map_entry, varint
from bert_tf.text import convert_to_unicode

LABELS = ("A", "B", "C", "D")
NUM_CHOICES = len(LABELS)
LEVELS = ("middle", "high")
# Split -> the directory of RACE/ it is read from.
SPLIT_DIRS = {"train": "train", "dev": "dev", "test": "test"}
ALL_FILE = "all.txt"
NUM_LOGGED_EXAMPLES = 5
# The record's features in the order protobuf's deterministic serialization writes them.
RECORD_FEATURES = ("input_ids", "input_mask", "is_real_example", "label_ids", "segment_ids")


class RaceDataError(ValueError):
    """A RACE file or flag that cannot be read as the original reads it; says which."""


@dataclasses.dataclass
class RaceExample:
    """One question: the original's InputExample (its `start_ending` is always None).

    Attributes:
      example_id: the document's `id`.
      context_sentence: the article, preprocessed.
      endings: the 4 question+option texts, preprocessed.
      label: the answer's index, 0..3.
      source: "<file>:<line>" of the document (for errors).
    """

    example_id: str
    context_sentence: str
    endings: List[str]
    label: int
    source: str = ""


@dataclasses.dataclass
class RaceFeatures:
    """The original's InputFeatures of one example: 4 lists of max_seq_length ints each."""

    example_id: str
    input_ids: List[List[int]]
    input_mask: List[List[int]]
    segment_ids: List[List[int]]
    label_id: int
    is_real_example: bool = True


def _is_str_list(value, length=None):
    return (isinstance(value, list) and all(isinstance(v, str) for v in value)
            and (length is None or len(value) == length))


class RaceProcessor:
    """The original's RaceProcessor (texts through `preprocess_text` with SentencePiece,
    `use_spm`; else as they are).

    Args:
      do_lower_case: lower-case the texts (preprocess_text's `lower`).
      high_only, middle_only: read one level only.
      use_spm: whether the tokenizer is SentencePiece (the original's run_race requires it).
    """

    def __init__(self, do_lower_case=True, high_only=False, middle_only=False, use_spm=True):
        if high_only and middle_only:
            raise RaceDataError("--high_only and --middle_only together leave no level of RACE "
                                "to read: give at most one")
        self.do_lower_case = do_lower_case
        self.high_only = high_only
        self.middle_only = middle_only
        self.use_spm = use_spm

    def get_labels(self):
        return list(LABELS)

    def levels(self):
        return [level for level in LEVELS
                if not (level == "middle" and self.high_only)
                and not (level == "high" and self.middle_only)]

    def get_train_examples(self, data_dir):
        return self.get_examples(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self.get_examples(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self.get_examples(data_dir, "test")

    def split_dir(self, data_dir, split):
        return os.path.join(data_dir, "RACE", SPLIT_DIRS[split])

    def input_files(self, data_dir, split):
        """The files a split is read from, in order: each level's all.txt, or (when a level
        has none) its one-document files by name. Raises RaceDataError when a level has
        neither."""
        paths = []
        for level in self.levels():
            directory = os.path.join(self.split_dir(data_dir, split), level)
            all_file = os.path.join(directory, ALL_FILE)
            if files.is_file(all_file):
                paths.append(all_file)
                continue
            documents = sorted(glob.glob(os.path.join(glob.escape(directory), "*.txt"))
                               if not files.is_remote(directory) else
                               files.tf_gfile().glob(os.path.join(directory, "*.txt")))
            if not documents:
                raise RaceDataError(
                    f"{all_file}: no such file (RACE's {split} set is read from "
                    f"<data_dir>/RACE/{SPLIT_DIRS[split]}/<middle|high>/{ALL_FILE}, one JSON "
                    "document per line, or from the release's one-document .txt files there)")
            paths.extend(documents)
        return paths

    def has_split(self, data_dir, split):
        try:
            self.input_files(data_dir, split)
        except RaceDataError:
            return False
        return True

    def process_text(self, text):
        if self.use_spm:
            return preprocess_text(text, lower=self.do_lower_case)
        return convert_to_unicode(text)

    def get_examples(self, data_dir, split):
        """The examples of a split (see `input_files`), in file and line order."""
        paths = self.input_files(data_dir, split)
        documents = [path for path in paths if os.path.basename(path) != ALL_FILE]
        if documents:
            logging.info("%s: no %s; reading its %d one-document files", os.path.dirname(
                documents[0]), ALL_FILE, len(documents))
        examples = []
        for path in paths:
            examples.extend(self.read_file(path))
        return examples

    def read_file(self, path):
        """The examples of one file (JSON lines; a one-document file may span lines)."""
        try:
            with files.tf_gfile().GFile(path, "rb") if files.is_remote(path) else open(
                    path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise RaceDataError(f"{path}: cannot read ({e.strerror or e})") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data[:e.start].count(b"\n") + 1
            raise RaceDataError(f"{path}:{line}: not UTF-8 ({e.reason})") from None
        if os.path.basename(path) != ALL_FILE:
            return self.read_document(text, path, 1)
        examples = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                examples.extend(self.read_document(line, path, number))
        return examples

    def read_document(self, text, path, line):
        """The examples of one JSON document `text` (read from `path`:`line`)."""
        where = f"{path}:{line}"
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise RaceDataError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(doc, dict):
            raise RaceDataError(f"{where}: not a RACE document (a JSON object with article, "
                                "questions, options, answers and id)")
        missing = [k for k in ("article", "questions", "options", "answers", "id")
                   if k not in doc]
        if missing:
            raise RaceDataError(f"{where}: the RACE document lacks {', '.join(missing)}")
        article, questions, options, answers = (doc["article"], doc["questions"],
                                                doc["options"], doc["answers"])
        if not isinstance(article, str):
            raise RaceDataError(f"{where}: 'article' is not a string")
        if not _is_str_list(questions) or not _is_str_list(answers):
            raise RaceDataError(f"{where}: 'questions' and 'answers' must be lists of strings")
        if not isinstance(options, list):
            raise RaceDataError(f"{where}: 'options' is not a list")
        if not len(answers) == len(questions) == len(options):
            raise RaceDataError(
                f"{where}: {len(questions)} questions, {len(options)} option lists and "
                f"{len(answers)} answers: each question needs its options and answer")
        context = self.process_text(article)
        examples = []
        for i, (question, choices, answer) in enumerate(zip(questions, options, answers)):
            if not _is_str_list(choices, NUM_CHOICES):
                raise RaceDataError(f"{where}: question {i + 1} has not {NUM_CHOICES} options "
                                    f"(strings): {json.dumps(choices, ensure_ascii=False)[:80]}")
            if answer not in LABELS:
                raise RaceDataError(f"{where}: question {i + 1}'s answer is {answer!r}, not one "
                                    f"of {', '.join(LABELS)}")
            question = self.process_text(question)
            endings = []
            for choice in choices:
                option = self.process_text(choice)
                endings.append(question.replace("_", option) if "_" in question
                               else " ".join([question, option]))
            examples.append(RaceExample(str(doc["id"]), context, endings,
                                        LABELS.index(answer), where))
        return examples


# ---------------------------------------------------------------------------------------------
# Features.

class _Converter:
    """Examples -> (4 unpadded id lists, their segment-0 lengths, label): the original's
    convert_single_example, the article tokenized once for the questions that share it."""

    def __init__(self, max_seq_length, tokenizer, max_qa_length):
        if max_seq_length < 4:
            raise RaceDataError(f"--max_seq_length={max_seq_length}: a RACE sequence needs at "
                                "least 4 positions ([CLS] article [SEP] ending [SEP])")
        if max_qa_length < 0:
            raise RaceDataError(f"--max_qa_length must be >= 0, got {max_qa_length}")
        self.max_seq_length = max_seq_length
        self.max_qa_length = max_qa_length
        self.tokenizer = tokenizer
        special = tokenizer.special_tokens
        self.cls, self.sep = special.cls, special.sep
        self._context = (None, None)

    def context_tokens(self, text):
        if self._context[0] != text:
            self._context = (text, self.tokenizer.tokenize(text))
        return self._context[1]

    def choices(self, example):
        """[(tokens, num_a)] of the 4 endings: `[CLS] article [SEP] ending [SEP]`, truncated
        as the original; num_a = the segment-0 length (article + 2)."""
        context = self.context_tokens(example.context_sentence)
        budget = self.max_seq_length - 3
        out = []
        for j, ending in enumerate(example.endings):
            ending_tokens = self.tokenizer.tokenize(ending)[-self.max_qa_length:]
            if len(ending_tokens) > budget:
                raise RaceDataError(
                    f"{example.source}: an ending ({example.example_id}, choice {LABELS[j]}) "
                    f"keeps {len(ending_tokens)} pieces after --max_qa_length="
                    f"{self.max_qa_length}, more than --max_seq_length - 3 = {budget}: lower "
                    "--max_qa_length (the original fails an assert here)")
            context_choice = context
            if len(context) + len(ending_tokens) > budget:
                context_choice = context[:budget - len(ending_tokens)]
            tokens = [self.cls] + context_choice + [self.sep] + ending_tokens + [self.sep]
            out.append((tokens, len(context_choice) + 2))
        return out

    def convert(self, ex_index, example):
        """(list of 4 (input_ids, num_a), label) of one example; logs the first ones."""
        choices = self.choices(example)
        ids = [(self.tokenizer.convert_tokens_to_ids(tokens), num_a)
               for tokens, num_a in choices]
        if ex_index < NUM_LOGGED_EXAMPLES:
            logging.info("*** Example ***")
            logging.info("id: %s", example.example_id)
            for index, ((tokens, num_a), (input_ids, _)) in enumerate(zip(choices, ids)):
                padded = self.padded(input_ids, num_a)
                logging.info("choice: %d", index)
                logging.info("tokens: %s", " ".join(tokens))
                logging.info("input_ids: %s", " ".join(map(str, padded[0])))
                logging.info("input_mask: %s", " ".join(map(str, padded[1])))
                logging.info("segment_ids: %s", " ".join(map(str, padded[2])))
                logging.info("label: %d", example.label)
        return ids, example.label

    def padded(self, input_ids, num_a):
        n = len(input_ids)
        padding = [0] * (self.max_seq_length - n)
        return (list(input_ids) + padding, [1] * n + padding,
                [0] * num_a + [1] * (n - num_a) + padding)


def convert_single_example(example_index, example, max_seq_length, tokenizer, max_qa_length):
    """The original's convert_single_example: `RaceFeatures` of one `RaceExample`."""
    converter = _Converter(max_seq_length, tokenizer, max_qa_length)
    choices, label = converter.convert(example_index, example)
    padded = [converter.padded(ids, num_a) for ids, num_a in choices]
    return RaceFeatures(example.example_id, [p[0] for p in padded], [p[1] for p in padded],
                        [p[2] for p in padded], label)


# ---------------------------------------------------------------------------------------------
# Records.

def record_feature_spec(max_seq_length):
    """The `tf.io.parse_example` spec of a RACE record: the original's flat int64
    [4 * max_seq_length] lists read as [4, max_seq_length] (its model reshapes them so), the
    int64 scalars label_ids and is_real_example."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = {name: tf.io.FixedLenFeature([NUM_CHOICES, max_seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    spec["label_ids"] = tf.io.FixedLenFeature([], tf.int64)
    spec["is_real_example"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


class RaceExampleEncoder:
    """Serializes RACE features straight to `tf.train.Example` bytes: those of
    `SerializeToString(deterministic=True)` of the Example the original builds (features in
    sorted name order; its default serialization may order them otherwise, the parsed
    features are the same).

    Args:
      max_seq_length: the length of each choice's sequence.
      vocab_size: ids are < vocab_size.
    """

    def __init__(self, max_seq_length, vocab_size):
        self.max_seq_length = max_seq_length
        self._varints = [varint(n) for n in range(max(vocab_size, 2))]
        self._example_head = LengthPrefixed(b"\x0a")
        self._is_real = [map_entry("is_real_example", TAG_INT64_LIST, varint(v))
                         for v in (0, 1)]
        self._labels = [map_entry("label_ids", TAG_INT64_LIST, varint(v))
                        for v in range(NUM_CHOICES)]

    def encode(self, choices, label_id, is_real_example=True):
        """The serialized Example of one example.

        Args:
          choices: 4 (input_ids, num_a) pairs: each choice's unpadded ids (at most
            max_seq_length) and how many of them are segment 0.
          label_id: 0..3.
          is_real_example: False for padding examples.
        """
        length = self.max_seq_length
        ids, mask, segments = [], [], []
        for input_ids, num_a in choices:
            n = len(input_ids)
            pad = b"\x00" * (length - n)
            ids.append(b"".join(map(self._varints.__getitem__, input_ids)) + pad)
            mask.append(b"\x01" * n + pad)
            segments.append(b"\x00" * num_a + b"\x01" * (n - num_a) + pad)
        features = b"".join((
            map_entry("input_ids", TAG_INT64_LIST, b"".join(ids)),
            map_entry("input_mask", TAG_INT64_LIST, b"".join(mask)),
            self._is_real[1 if is_real_example else 0],
            self._labels[label_id],
            map_entry("segment_ids", TAG_INT64_LIST, b"".join(segments)),
        ))
        return self._example_head[len(features)] + features


def write_race_records(examples, max_seq_length, tokenizer, output_file, max_qa_length,
                       meta=None):
    """Writes the original's `file_based_convert_examples_to_features` records.

    Records are written to a temporary file renamed when all are written (an error or a full
    disk removes it); then, if `meta` is given, the sidecar `<output_file>.meta.json` records
    it (`bert_tf.data.records`). Any old sidecar is removed first.

    Args:
      examples: list of RaceExample.
      max_seq_length, max_qa_length: the original's flags.
      tokenizer: the SentencePiece FullTokenizer (`bert_tf.albert.tokenization`).
      output_file: path of the TFRecord file.
      meta: dict from `bert_tf.data.records.records_meta`, or None for no sidecar.

    Returns:
      the number of records written (= len(examples)).
    """
    converter = _Converter(max_seq_length, tokenizer, max_qa_length)
    encoder = RaceExampleEncoder(max_seq_length, max(tokenizer.vocab.values()) + 1)
    return write_example_records(
        examples, output_file, lambda ex_index, example: encoder.encode(
            *converter.convert(ex_index, example)), meta)
