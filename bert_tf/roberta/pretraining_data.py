"""RoBERTa's pretraining data: text files -> TFRecords of FULL-SENTENCES blocks of token ids.

RoBERTa (Liu et al. 2019, §4.2 "FULL-SENTENCES") trains on inputs packed with full sentences
sampled contiguously from one or more documents, up to 512 tokens, with a separator between
documents, no next-sentence task, and masks drawn anew at training time. fairseq made that data
with `fairseq-preprocess` and `TokenBlockDataset(break_mode="complete")` (its RoBERTa recipe:
`--sample-break-mode complete --tokens-per-sample 512`). The rule, as fairseq computes it:

  1. Every input line is stripped and tokenized with GPT-2's byte-level BPE (no prefix space;
     special tokens written in the text are plain text), then gets `</s>` appended
     (`Dictionary.encode_line(append_eos=True)`): a sentence. A blank line (between documents)
     is a sentence of `</s>` alone: the document separator. So two documents meet as
     `... last </s> </s> first ...`; every blank line counts (two blank lines give two).
  2. The sentences, in input order across all files (as if the files were concatenated), are
     packed greedily into blocks of at most `block_size = max_seq_length - 1` tokens: a
     sentence joins the current block if it fits or the block is empty, else the block is
     closed and the sentence starts the next one. Blocks end where sentences end (so always on
     `</s>`) and cross document boundaries; the last block holds what is left.
  3. `<s>` is put before each block (RoBERTa's `MaskedLMTask`: `PrependTokenDataset(bos)`, which
     is why the block size is `tokens_per_sample - 1`): a record is `<s> block`, at most
     `max_seq_length` tokens, padded with `<pad>`.

`break_mode="complete_doc"` is fairseq's other mode: the same packing, but a block never
crosses a document: a blank line closes the current block and is itself dropped (a sentence of
exactly one token, `</s>` alone, is a blank line, as fairseq tells them by size), and blocks of
at most one token are dropped.

A sentence longer than the block (over `max_seq_length - 2` tokens of text) makes a block of its
own that is too long for the model (its positions): fairseq's trainer drops such a sample
with a warning (its training iterator ignores invalid sizes; validation stops on them unless
`--skip-invalid-size-inputs-valid-test`). We drop it too, count it and log the count.

Records: a `tf.train.Example` with one feature, `input_ids` (int64 [max_seq_length]: `<s>`,
the block, then the pad id), in the order of the blocks, round robin over the output files.
No `input_mask`: the pretraining input pipeline takes it as `input_ids != pad_id`, fairseq's
own rule (`src_tokens.ne(pad)`); the pad id cannot occur inside a block (text is read with
special tokens as plain text, and a vocabulary whose BPE pieces map to the pad id is refused),
so nothing is lost and records stay half the size. No `segment_ids` (all 0) and no masked
positions: masks are drawn when training, anew every epoch.

Differences from fairseq's reading: lines end at "\\n" and every "\\r" is dropped (the reader of
BERT's create_pretraining_data, `bert_tf.data.documents.read_lines`; fairseq's Python text mode
also ends a line at a lone "\\r"); the text must be UTF-8 (a bad byte is one error naming the
file and line); a file not ending with a newline ends its last line anyway (each file is read
as if it ended with one, not glued to the next file's first line).
"""

import dataclasses
import time

import numpy as np
from absl import logging

from bert_tf.bert import pretraining_data as bert_pretraining_data
from bert_tf.data import documents as documents_lib
from bert_tf.data import features as features_lib
from bert_tf.data import writer as writer_lib
from bert_tf.data.documents import DataError
from bert_tf.roberta import tokenization

BREAK_MODES = ("complete", "complete_doc")
DOCUMENT_SEPARATOR_LENGTH = 1  # a blank line's sentence: `</s>` alone
NUM_LOGGED_EXAMPLES = 5
READ_BATCH_LINES = 2048
WRITE_BATCH = 2048


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """The flags of `python -m bert_tf.roberta.create_pretraining_data`."""
    input_file: str
    output_file: str
    vocab_file: str
    merges_file: str = None  # None: merges.txt beside vocab_file
    max_seq_length: int = 512  # fairseq's --tokens-per-sample of RoBERTa's recipe
    break_mode: str = "complete"
    progress_seconds: float = 5.0


@dataclasses.dataclass
class Summary:
    """What a run did: lines read, blocks written, too-long blocks skipped, the files."""
    num_lines: int
    num_blocks: int
    num_skipped: int
    output_files: list


def check_options(options):
    """Raises DataError for a flag out of range (no file is touched)."""
    length = options.max_seq_length
    if not isinstance(length, int) or isinstance(length, bool) or length < 3:
        raise DataError(f"--max_seq_length={length}: expected an integer >= 3 "
                        "(<s>, one token and </s>)")
    if options.break_mode not in BREAK_MODES:
        raise DataError(f"--break_mode={options.break_mode!r}: expected one of "
                        f"{', '.join(BREAK_MODES)}")
    if not options.vocab_file:
        raise DataError("--vocab_file is required (RoBERTa's vocab.json)")


def load_tokenizer(vocab_file, merges_file=None):
    """RoBERTa's byte-level BPE as fairseq's GPT-2 encoder reads pretraining text: no prefix
    space, special tokens written in the text taken as text. DataError naming the flag and
    file on a bad vocab.json / merges.txt or one without the special tokens the records need.
    """
    try:
        tokenizer = tokenization.RobertaTokenizer(vocab_file, merges_file=merges_file,
                                                  split_special_tokens=True)
    except tokenization.VocabError as e:
        merges = merges_file or tokenization.default_merges_file(vocab_file)
        flag = "--merges_file" if merges in str(e) else "--vocab_file"
        raise DataError(f"{flag}: {e}") from None
    except OSError as e:
        raise DataError(f"--vocab_file: cannot read {vocab_file!r}: {e.strerror or e}") from None
    special = tokenizer.special_tokens
    missing = [t for t in (special.cls, special.sep, special.pad) if t not in tokenizer.vocab]
    if missing:
        raise DataError(f"--vocab_file: {vocab_file!r} has no {', '.join(missing)} entry; "
                        f"records start with {special.cls}, sentences end with {special.sep} "
                        f"and are padded with {special.pad}")
    return tokenizer


def read_sentences(input_files, lines_to_ids, eos_id, batch_lines=READ_BATCH_LINES):
    """Yields one id list per input line, `</s>` appended (a blank line: `[eos_id]`).

    Args:
      input_files: paths, read in this order (`bert_tf.data.documents.read_lines`).
      lines_to_ids: f(list of str) -> list of id lists.
      eos_id: the id of `</s>`.
    """
    pending = []
    for path in input_files:
        for line in documents_lib.read_lines(path):
            pending.append(line)
            if len(pending) >= batch_lines:
                for ids in lines_to_ids(pending):
                    yield list(ids) + [eos_id]
                pending = []
    if pending:
        for ids in lines_to_ids(pending):
            yield list(ids) + [eos_id]


def pack_blocks(sentences, block_size, break_mode="complete"):
    """Packs sentences into blocks as fairseq's TokenBlockDataset does (see the module doc).

    Args:
      sentences: iterable of id lists, each ending with `</s>` (a blank line is `[</s>]`).
      block_size: the most tokens of a block (`max_seq_length - 1`); a single sentence longer
        than that is a block of its own, longer than `block_size` (as fairseq's).
      break_mode: "complete" or "complete_doc".

    Yields:
      Blocks: lists of ids, in order.
    """
    if break_mode not in BREAK_MODES:
        raise ValueError(f"break_mode={break_mode!r}: expected one of {BREAK_MODES}")
    crosses_documents = break_mode == "complete"
    block = []
    for sentence in sentences:
        if not crosses_documents and len(sentence) == DOCUMENT_SEPARATOR_LENGTH:
            # A blank line closes the document's block and is not part of any block.
            if len(block) > 1:
                yield block
            block = []
            continue
        if block and len(block) + len(sentence) > block_size:
            if crosses_documents or len(block) > 1:
                yield block
            block = []
        block.extend(sentence)
    if block and (crosses_documents or len(block) > 1):
        yield block


class RecordEncoder:
    """`tf.train.Example` bytes of one block: `input_ids` = `<s>` block, padded to
    max_seq_length with the pad id (int64, [max_seq_length])."""

    def __init__(self, max_seq_length, vocab_size, bos_id, pad_id):
        self.max_seq_length = max_seq_length
        self.bos_id, self.pad_id = bos_id, pad_id
        self._varints = features_lib.VarintTable(vocab_size)
        self._head = features_lib.Int64EntryHeads("input_ids")

    def input_ids(self, block):
        """The record's ids: int64 [max_seq_length]."""
        ids = np.full(self.max_seq_length, self.pad_id, np.int64)
        ids[0] = self.bos_id
        ids[1:1 + len(block)] = block
        return ids

    def encode(self, block):
        packed, _ = self._varints.encode(self.input_ids(block))
        packed = packed.tobytes()
        entry = self._head[len(packed)] + packed
        return b"\x0a" + features_lib.varint(len(entry)) + entry


def feature_spec(max_seq_length):
    """The `tf.io.parse_example` spec of a record: {"input_ids": int64 [max_seq_length]}."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top  (readers only)

    return {"input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64)}


def _log_block(tokenizer, ids):
    tokens = tokenizer.convert_ids_to_tokens([int(i) for i in ids])
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokens))
    logging.info("input_ids: %s", " ".join(str(int(i)) for i in ids))


def create_pretraining_data(options, tokenizer=None):
    """Runs the command with `options`; returns a `Summary`.

    Raises:
      DataError: bad flags, input files, vocab files or output paths (before any work), an
        input without any block, or a vocabulary that maps text to the pad id.
      files.OutputError: a full disk or an unwritable output (nothing left under the final name).
    """
    check_options(options)
    input_files = bert_pretraining_data.check_input_files(options.input_file)
    out_paths = bert_pretraining_data.output_paths(options.output_file)
    writer_lib.check_writable(out_paths)
    if tokenizer is None:
        tokenizer = load_tokenizer(options.vocab_file, options.merges_file)
    special, vocab = tokenizer.special_tokens, tokenizer.vocab
    bos_id, eos_id, pad_id = vocab[special.cls], vocab[special.sep], vocab[special.pad]
    block_size = options.max_seq_length - 1
    encoder = RecordEncoder(options.max_seq_length, max(vocab.values()) + 1, bos_id, pad_id)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    lines = [0]

    def counted(sentences):
        for sentence in sentences:
            lines[0] += 1
            yield sentence

    sentences = counted(read_sentences(input_files, documents_lib.lines_to_ids_function(tokenizer),
                                       eos_id))
    progress = bert_pretraining_data.Progress("", options.progress_seconds)
    num_blocks = num_skipped = 0
    start = time.monotonic()
    with writer_lib.RoundRobinRecordWriter(out_paths) as writer:
        batch = []
        for block in pack_blocks(sentences, block_size, options.break_mode):
            if len(block) > block_size:
                num_skipped += 1
                continue
            if pad_id in block:
                raise DataError(f"--vocab_file: {options.vocab_file!r} maps a piece of the text "
                                f"to the pad id {pad_id} ({special.pad}); records find their "
                                "length by the pad id, so it must never stand for text")
            if num_blocks < NUM_LOGGED_EXAMPLES:
                _log_block(tokenizer, encoder.input_ids(block)[:len(block) + 1])
            batch.append(encoder.encode(block))
            num_blocks += 1
            if len(batch) >= WRITE_BATCH:
                writer.write_many(batch)
                batch = []
                progress.maybe_log("read %d lines, wrote %d blocks", lines[0], num_blocks)
        if not num_blocks:
            raise DataError(f"--input_file: no block to write from {input_files} "
                            f"({lines[0]} lines, {num_skipped} too long for "
                            f"--max_seq_length={options.max_seq_length})")
        writer.write_many(batch)
    if num_skipped:
        logging.warning("skipped %d sentence(s) over %d tokens (longer than --max_seq_length=%d "
                        "less <s> and </s>), as fairseq's trainer drops them",
                        num_skipped, options.max_seq_length - 2, options.max_seq_length)
    logging.info("Wrote %d blocks from %d lines in %.1f s", num_blocks, lines[0],
                 time.monotonic() - start)
    return Summary(lines[0], num_blocks, num_skipped, out_paths)
