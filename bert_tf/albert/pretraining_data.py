"""ALBERT's create_pretraining_data: text files -> TFRecords of n-gram masked LM + sentence order.

The original's output record for record (google-research/albert's create_pretraining_data.py):
the same instances (`bert_tf.albert.instances`), the same eight features in its order
(input_ids, input_mask, segment_ids, token_boundary, masked_lm_positions, masked_lm_ids,
masked_lm_weights, next_sentence_labels; masked_lm_* padded to 2 x max_predictions_per_seq with
--do_permutation), round robin over the output files, the same log of the first 20 examples.

Reading, as the original's: lines end at "\\n"; with SentencePiece (`--spm_model_file`) each line
goes through `preprocess_text(line, lower=do_lower_case)` and then the pieces, with WordPiece
it is stripped; a line empty after that starts a new document; a line without tokens adds
nothing; documents without tokens are dropped.

numpy: the original draws the n-gram lengths from numpy's global state and never seeds it, so
its runs differ from each other. We seed it with `numpy_seed` (default: `random_seed`) before
anything else: our records equal an original run whose numpy was seeded with the same value
(`np.random.seed(numpy_seed)` before its main).

Every check of the flags, files and tokenizer runs before any work; output is written under a
temporary name and renamed only when the whole run has succeeded.
"""

import dataclasses
import random

import numpy as np
from absl import logging

from bert_tf.albert import instances as instances_lib
from bert_tf.albert import tokenization
from bert_tf.bert import pretraining_data as bert_pretraining_data
from bert_tf.bert.pretraining_data import Summary
from bert_tf.data import documents as documents_lib
from bert_tf.data import features as features_lib
from bert_tf.data import writer as writer_lib
from bert_tf.data.documents import DataError

NUM_LOGGED_EXAMPLES = 20
WRITE_BATCH = 2048

# The original's feature order (its log lists them so; the records' map is sorted by name).
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "token_boundary",
                 "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                 "next_sentence_labels")


@dataclasses.dataclass(frozen=True)
class AlbertPretrainingDataOptions:
    """The flags of the original's create_pretraining_data.py (same names and defaults), and
    `numpy_seed` (None: `random_seed`)."""
    input_file: str
    output_file: str
    vocab_file: str
    spm_model_file: str | None = None
    input_file_mode: str = "r"
    do_lower_case: bool = True
    do_whole_word_mask: bool = True
    do_permutation: bool = False
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False
    max_seq_length: int = 512
    ngram: int = 3
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 40
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    numpy_seed: int | None = None
    progress_seconds: float = 5.0


def check_options(options):
    """Raises DataError for a flag out of range (no file is touched)."""
    # masked_lm_prob may be 0, as in the original: the records then predict nothing.
    bert_pretraining_data.check_instance_options(options, allow_zero_masked_lm_prob=True)
    o = options
    if not isinstance(o.ngram, int) or o.ngram < 1:
        raise DataError(f"--ngram={o.ngram}: expected an integer >= 1")
    if o.input_file_mode not in ("r", "rb"):
        raise DataError(f"--input_file_mode={o.input_file_mode!r}: expected 'r' or 'rb'")
    if o.numpy_seed is not None and not 0 <= o.numpy_seed < 2 ** 32:
        raise DataError(f"--numpy_seed={o.numpy_seed}: expected an integer in [0, 2**32)")
    if o.numpy_seed is None and not 0 <= o.random_seed < 2 ** 32:
        raise DataError(f"--random_seed={o.random_seed} seeds numpy too: expected an integer in "
                        "[0, 2**32), or give --numpy_seed")
    if not o.vocab_file:
        raise DataError("--vocab_file is required (as in the original, even with --spm_model_file)")


def load_tokenizer(options):
    """The original's `FullTokenizer(vocab_file, do_lower_case, spm_model_file)`."""
    try:
        return tokenization.FullTokenizer(options.vocab_file, options.do_lower_case,
                                          options.spm_model_file)
    except tokenization.VocabError as e:
        message = str(e)
        if message.startswith("spm_model_file"):
            raise DataError(f"--{message}") from None
        raise DataError(f"--vocab_file: {message}") from None


def check_special_tokens(tokenizer, options):
    """The tokenizer's [CLS], [SEP] and [MASK] are in its vocab (the records need their ids)."""
    special = tokenizer.special_tokens
    needed = (special.cls, special.sep, special.mask)
    missing = [t for t in needed if t not in tokenizer.vocab]
    if missing:
        flag = "--spm_model_file" if tokenizer.sp_model is not None else "--vocab_file"
        path = options.spm_model_file if tokenizer.sp_model is not None else options.vocab_file
        raise DataError(f"{flag} {path!r} has no {', '.join(missing)} entry; pretraining data "
                        f"needs {needed[0]}, {needed[1]} and {needed[2]}")


def start_table(tokenizer):
    """`is_start[id]` for the vocab (SentencePiece or WordPiece rule), plus one entry at
    `len(vocab)`: the id standing for pieces SentencePiece does not know that do NOT start a
    word (e.g. "xyz" of an unknown "XYZ"): the original decides by the piece, the id is
    <unk>'s for all of them, so such pieces are read as this extra id and written as <unk>."""
    rule = (instances_lib.is_start_piece_sp if tokenizer.sp_model is not None
            else instances_lib.is_start_piece_wordpiece)
    size = max(tokenizer.vocab.values()) + 1
    table = bytearray(size + 1)
    for token, i in tokenizer.vocab.items():
        table[i] = 1 if rule(token) else 0
    return table


def lines_to_ids_function(tokenizer):
    """f(list of str lines, already preprocessed) -> list of id lists (see `start_table`)."""
    if tokenizer.sp_model is None:
        return documents_lib.lines_to_ids_function(tokenizer)
    vocab = tokenizer.vocab
    unk = tokenizer.sp_model.unk_id()
    unknown_inside = max(vocab.values()) + 1
    memo = {}

    def unknown(piece):
        value = memo.get(piece)
        if value is None:
            value = memo[piece] = (unk if instances_lib.is_start_piece_sp(piece)
                                   else unknown_inside)
        return value

    def lines_to_ids(lines):
        out = []
        for line in lines:
            ids = []
            for piece in tokenization.encode_pieces(tokenizer.sp_model, line):
                i = vocab.get(piece)
                ids.append(i if i is not None else unknown(piece))
            out.append(ids)
        return out

    return lines_to_ids


def read_corpus(input_files, tokenizer, do_lower_case, progress=None, batch_lines=2048):
    """The documents of the input files as a `Corpus`, read the original's way (see the module
    docstring); ids may include `start_table`'s extra id."""
    typecode = documents_lib.id_typecode(max(tokenizer.vocab.values()) + 2)
    corpus = documents_lib.Corpus(typecode)
    lines_to_ids = lines_to_ids_function(tokenizer)
    spm = tokenizer.sp_model is not None
    pending, starts_document = [], []
    new_document = True
    lines_read = 0

    def flush():
        for ids, new in zip(lines_to_ids(pending), starts_document):
            if ids:
                corpus.add_sentence(ids, new_document=new)
        pending.clear()
        starts_document.clear()
        if progress is not None:
            progress(lines_read, corpus)

    for path in input_files:
        for line in documents_lib.read_lines(path):
            lines_read += 1
            if spm:
                line = tokenization.preprocess_text(line, lower=do_lower_case)
            if not line:
                new_document = True
                continue
            pending.append(line)
            starts_document.append(new_document)
            new_document = False
            if len(pending) >= batch_lines:
                flush()
    flush()
    return corpus.finish()


class AlbertExampleEncoder(features_lib.BatchExampleEncoder):
    """BERT's record encoder plus the `token_boundary` feature (last in the sorted map)."""

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size):
        super().__init__(max_seq_length, max_predictions_per_seq, vocab_size)
        entry = features_lib.map_entry("token_boundary", features_lib.TAG_INT64_LIST,
                                       b"\x00" * max_seq_length)
        self._boundary_prefix = entry[:-max_seq_length]

    def encode_batch(self, input_ids, lengths, num_a_tokens, masked_lm_positions, masked_lm_ids,
                     num_predictions, is_random_next, token_boundary):
        """`BatchExampleEncoder.encode_batch` + token_boundary uint8 [B, max_seq_length]."""
        records = super().encode_batch(input_ids, lengths, num_a_tokens, masked_lm_positions,
                                       masked_lm_ids, num_predictions, is_random_next)
        length = self.max_seq_length
        boundary = np.asarray(token_boundary, np.uint8).tobytes()
        prefix, head = self._boundary_prefix, self._example_head
        out = []
        for r, record in enumerate(records):
            skip = 2
            while record[skip - 1] & 0x80:  # the Example's length varint
                skip += 1
            features = record[skip:] + prefix + boundary[r * length:(r + 1) * length]
            out.append(head[len(features)] + features)
        return out


def _batch_for_writing(store, indices, max_seq_length, num_predictions, unknown_inside, unk_id):
    batch = store.gather(indices, max_seq_length, num_predictions)
    if unk_id is not None:
        # Pieces SentencePiece does not know are <unk> in the records, whatever their extra id.
        ids, labels = batch[0], batch[4]
        ids[ids == unknown_inside] = unk_id
        labels[labels == unknown_inside] = unk_id
    return batch


def _log_example(tokenizer, values):
    """The original's log of one example: its tokens, then every feature."""
    ids, length = values["input_ids"], sum(values["input_mask"])
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenizer.inv_vocab[i] for i in ids[:length]))
    for name in FEATURE_NAMES:
        logging.info("%s: %s", name, " ".join(str(x) for x in values[name]))


def _features_of_row(batch, r):
    ids, lengths, num_a, positions, labels, count, nsp, boundary = batch
    n, k, a = int(lengths[r]), int(count[r]), int(num_a[r])
    length, preds = ids.shape[1], positions.shape[1]
    return {
        "input_ids": ids[r].tolist(),
        "input_mask": [1] * n + [0] * (length - n),
        "segment_ids": [0] * a + [1] * (n - a) + [0] * (length - n),
        "token_boundary": boundary[r].tolist(),
        "masked_lm_positions": positions[r].tolist(),
        "masked_lm_ids": labels[r].tolist(),
        "masked_lm_weights": [1.0] * k + [0.0] * (preds - k),
        "next_sentence_labels": [int(nsp[r])],
    }


def create_pretraining_data(options):
    """Runs ALBERT's create_pretraining_data with `options`; returns a `Summary`.

    Raises:
      DataError: bad flags, input files, tokenizer files or output paths (before any work), or
        an input without any non-empty document (before anything is written).
    """
    check_options(options)
    input_files = bert_pretraining_data.check_input_files(options.input_file)
    out_paths = bert_pretraining_data.output_paths(options.output_file)
    writer_lib.check_writable(out_paths)
    tokenizer = load_tokenizer(options)
    check_special_tokens(tokenizer, options)
    # Before anything else draws from it (the original's state when seeded before its main).
    np.random.seed(options.random_seed if options.numpy_seed is None else options.numpy_seed)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    progress = bert_pretraining_data.Progress("", options.progress_seconds)
    corpus = read_corpus(
        input_files, tokenizer, options.do_lower_case,
        progress=lambda lines, c: progress.maybe_log("read %d lines, %d documents, %d tokens",
                                                     lines, c.num_documents, len(c.tokens)))
    if corpus.num_documents == 0:
        raise DataError(f"--input_file: no non-empty document in {input_files}")
    num_documents = corpus.num_documents

    rng = random.Random(options.random_seed)
    maker = instances_lib.AlbertInstanceMaker(
        tokenizer.vocab, options.max_seq_length, options.short_seq_prob, options.masked_lm_prob,
        options.max_predictions_per_seq, options.do_whole_word_mask, rng, start_table(tokenizer),
        tokenizer.special_tokens, random_next_sentence=options.random_next_sentence,
        do_permutation=options.do_permutation, ngram=options.ngram,
        favor_shorter_ngram=options.favor_shorter_ngram)
    total_docs = num_documents * options.dupe_factor
    store = maker.make_instances(
        corpus, options.dupe_factor,
        progress=lambda done, made: progress.maybe_log(
            "documents %d/%d, %d instances", done, total_docs, made, rate=made))
    order = maker.final_order(len(store))
    del corpus
    logging.info("number of instances: %i", len(store))

    logging.info("*** Writing to output files ***")
    for path in out_paths:
        logging.info("  %s", path)
    unknown_inside = max(tokenizer.vocab.values()) + 1
    unk_id = tokenizer.sp_model.unk_id() if tokenizer.sp_model is not None else None
    num_predictions = options.max_predictions_per_seq * (2 if options.do_permutation else 1)
    encoder = AlbertExampleEncoder(options.max_seq_length, num_predictions, unknown_inside)
    with writer_lib.RoundRobinRecordWriter(out_paths) as writer:
        for begin in range(0, len(order), WRITE_BATCH):
            batch = _batch_for_writing(store, order[begin:begin + WRITE_BATCH],
                                       options.max_seq_length, num_predictions, unknown_inside,
                                       unk_id)
            if begin == 0:
                for r in range(min(NUM_LOGGED_EXAMPLES, len(batch[1]))):
                    _log_example(tokenizer, _features_of_row(batch, r))
            writer.write_many(encoder.encode_batch(*batch))
            progress.maybe_log("wrote %d/%d instances", begin + len(batch[1]), len(order))
    logging.info("Wrote %d total instances", len(order))
    return Summary(num_documents, len(order), out_paths)
