"""ALBERT's tokenizer in TensorFlow ops, for SavedModels that take text: the ids of the original's
`encode_ids(sp_model, preprocess_text(text, lower=do_lower_case))`.

`TokenizerModule(model, do_lower_case)` is a `tf.Module`: texts tf.string [N] -> tf.RaggedTensor
of int64 SentencePiece ids [N, None]. Its three steps:

1. `preprocess_text`, evaluated on code points (tensorflow-text's ICU normalizers are not used:
   their Unicode version and rules are not Python's):
   * `" ".join(text.strip().split())`: characters `str.isspace` holds for (a 29-entry sorted
     table; `searchsorted` membership) are dropped at both ends and each run of them inside
     becomes one space;
   * NFKD then dropping `unicodedata.combining` characters: per character a fixed mapping.
     NFKD decomposes each character on its own and then only reorders runs of characters of
     non-zero combining class, exactly the ones dropped, so the result is the concatenation of
     each character's filtered decomposition. The characters it changes (about 18,000, 11,172
     of them Hangul syllables) are a sorted table of exceptions looked up with `searchsorted`;
     the others map to themselves;
   * with do_lower_case, `str.lower`: per character (a second exception table), except the
     capital sigma, whose final form depends on the neighbouring cased / case-ignorable
     characters; that rule is BERT's in-graph one (`bert_tf.bert.fast_tokenization`), with the
     classes read off `str.lower` itself, applied to the decomposed text as Python lowers it.
   The tables are built once per process from the Python `unicodedata` (and `str`) of the
   process that builds the module; a SavedModel keeps the tables it was built with.
2. SentencePiece: tensorflow-text's `FastSentencepieceTokenizer`, built on the serialized model
   (converted to its own format and held by the graph as a constant, so a SavedModel is
   self-contained), gives the ids of `EncodeAsIds`. Not `SentencepieceTokenizer`: its bundled
   SentencePiece breaks ties between equal-score segmentations ("000" = "0"+"00" = "00"+"0")
   the other way from the `sentencepiece` package, on about 1 text in 70 of the fuzz corpus.
   One kind of difference remains, about 1 text in 20,000 there: the host's encoder sums
   float32 scores from the start of the text, so at an exact tie the rounding of that running
   sum decides; the graph takes the segmentation the host takes when the sums are equal in
   float32 too (the one whose last piece starts earliest, e.g. what the host gives for the
   word alone). The
   tests count these ("tie": the same pieces in another order) and fail on any other.
3. The digit-comma rule of `encode_pieces`: a piece of 2+ characters ending in a character
   `str.isdigit` holds for and "," is replaced by the pieces of its text before the comma with
   every "▁" removed, encoded again (with SentencePiece's own leading "▁"), then ",". The rule
   reads the piece's text only, so it is a table of ids (`digit_comma_table`), computed when
   the module is built with the `sentencepiece` package, as the host encodes. The original's
   branch that would drop that leading "▁" compares `str` with `bytes` on Python 3 and never
   fires, so neither does it here.

Bytes that are not UTF-8 are dropped (TensorFlow's decoder, errors="ignore", drops the same
bytes as Python's `bytes.decode("utf-8", "ignore")`, which the original's `convert_to_unicode`
uses).

No core-op mode: SentencePiece (the model's normalization rules and the unigram Viterbi search)
has no reasonable core TensorFlow form, so the graph holds tensorflow-text ops and a SavedModel of it
needs `import tensorflow_text` before `tf.saved_model.load` (and `saved_model_cli` cannot run
it). `TokenizerModule(..., core_ops=True)` is refused with `AlbertGraphTokenizerError`.
"""

import functools
import os
import unicodedata

import numpy as np

from bert_tf.bert.fast_tokenization import _module_class as _bert_module_class
from bert_tf.bert.fast_tokenization_tables import (FINAL_SIGMA_INDEX,
                                                   MAX_CODE_POINT, OTHER, _case_class,
                                                   import_tf_text)

WORD_START = "\u2581"  # SentencePiece's "▁"


class AlbertGraphTokenizerError(ValueError):
    """A SentencePiece model the graph tokenizer cannot use, or a mode it does not have."""


def _code_points():
    """Every code point a UTF-8 decoder can produce (no surrogates), as a range pair."""
    return (range(0, 0xD800), range(0xE000, MAX_CODE_POINT + 1))


def _exception_table(mapping):
    """A per-character mapping given by its exceptions, in the shape the graph looks up.

    Args: mapping: dict code point -> list of code points (characters not in it map to
      themselves).
    Returns: (keys int32 [K + 1] sorted, a sentinel above every code point last;
      starts int32 [K + 1]; lengths int32 [K + 1]; values int32 [M + 1]): key k maps to
      values[starts[k] : starts[k] + lengths[k]].
    """
    keys = sorted(mapping)
    lengths = [len(mapping[k]) for k in keys]
    starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])[:-1]
    values = [c for k in keys for c in mapping[k]] + [0]  # never empty
    return (np.asarray(keys + [FINAL_SIGMA_INDEX + 1], np.int32),
            np.asarray(list(starts) + [0], np.int32),
            np.asarray(lengths + [1], np.int32),
            np.asarray(values, np.int32))


@functools.lru_cache(maxsize=1)
def build_tables():
    """The tables of step 1 (see module docstring), from this process's Python.

    Returns dict of numpy arrays:
      spaces int32 [S]: sorted code points `str.isspace` holds for;
      decompose: `_exception_table` of NFKD minus combining characters;
      lower: `_exception_table` of `str.lower` per character, plus FINAL_SIGMA_INDEX -> U+03C2;
      case_class int8 [FINAL_SIGMA_INDEX + 1]: the final-sigma classes of
        `bert_tf.bert.fast_tokenization_tables` (IGNORABLE, CASED, OTHER).
    """
    spaces = []
    decompose, lower = {}, {}
    case_class = np.full(FINAL_SIGMA_INDEX + 1, OTHER, np.int8)
    normalize, combining, category = (unicodedata.normalize, unicodedata.combining,
                                      unicodedata.category)
    for block in _code_points():
        for cp in block:
            char = chr(cp)
            if char.isspace():
                spaces.append(cp)
            # Unassigned and private-use characters decompose to themselves, have no case and
            # no combining class (BERT's tables, tested there, rely on the same).
            if category(char) in ("Cn", "Co"):
                continue
            kept = [ord(c) for c in normalize("NFKD", char) if not combining(c)]
            if kept != [cp]:
                decompose[cp] = kept
            lowered = char.lower()
            if lowered != char:
                lower[cp] = [ord(c) for c in lowered]
            case_class[cp] = _case_class(cp)
    lower[FINAL_SIGMA_INDEX] = [0x3C2]
    case_class[FINAL_SIGMA_INDEX] = _case_class(0x3C2)
    return {"spaces": np.asarray(spaces, np.int32), "decompose": _exception_table(decompose), "lower": _exception_table(lower),
            "case_class": case_class}


def model_proto(model):
    """The serialized SentencePiece model (bytes) of `model`: bytes, a path (str or PathLike,
    read through `tf.io.gfile`), a `sentencepiece.SentencePieceProcessor`, or an object holding
    one as `sp_model` (a FullTokenizer) or its bytes as `model_proto`."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        tf, _ = import_tf_text()
        path = os.fspath(model)
        if not tf.io.gfile.exists(path):
            raise AlbertGraphTokenizerError(f"{path}: no such SentencePiece model file")
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    proto = getattr(model, "model_proto", None)
    if isinstance(proto, (bytes, bytearray)):
        return bytes(proto)
    processor = getattr(model, "sp_model", model)
    if hasattr(processor, "serialized_model_proto"):
        return processor.serialized_model_proto()
    raise AlbertGraphTokenizerError(
        f"expected a SentencePiece model (bytes, path or SentencePieceProcessor), got "
        f"{type(model).__name__}")


def _checked_model(proto, source):
    """Loads `proto` with the sentencepiece library, so that a bad file is one clear error."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(proto)
    except (RuntimeError, OSError, TypeError) as e:
        raise AlbertGraphTokenizerError(
            f"{source}: not a SentencePiece model ({str(e).splitlines()[0] if str(e) else e})"
        ) from None
    return processor


def digit_comma_table(processor):
    """`encode_pieces`' digit-comma rule as a table of ids, for a loaded SentencePiece model.

    The rule looks at a piece's text only, and every piece but an unknown one is its vocab
    entry, so it is a mapping of ids: the id of an entry of 2+ characters ending in a `str.isdigit`
    character and "," maps to the ids of that entry without the comma, every "▁" removed,
    encoded again by `processor` (the host's sentencepiece: the same pieces as the original
    gets), then the id of ",". An unknown piece's text is made of characters that are not
    pieces; with "," a piece (checked), it never ends in ",".

    Returns: an `_exception_table` (keys: ids).
    """
    comma = processor.PieceToId(",")
    if comma == processor.unk_id():
        raise AlbertGraphTokenizerError(
            "the SentencePiece model has no \",\" piece: an unknown piece could then end in a "
            "comma, which the in-graph tokenizer does not handle")
    mapping = {}
    for index in range(processor.GetPieceSize()):
        piece = processor.IdToPiece(index)
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            again = processor.EncodeAsPieces(piece[:-1].replace(WORD_START, ""))
            mapping[index] = [processor.PieceToId(p) for p in again] + [comma]
    return _exception_table(mapping)


def _make_module_class():
    tf, tf_text = import_tf_text()
    bert_class = _bert_module_class()

    def _member(sorted_values, flat):
        """bool [C]: which of `flat` [C] are in `sorted_values` (a sorted int32 tensor)."""
        index = tf.searchsorted(sorted_values, flat)
        found = tf.gather(sorted_values, tf.minimum(index, tf.size(sorted_values) - 1))
        return tf.equal(found, flat)

    def _apply_exceptions(table, flat, row_splits):
        """Maps each code point of `flat` [C] (rows `row_splits` [N + 1] int64) through an
        `_exception_table`; returns (mapped flat [C'], its row_splits [N + 1])."""
        keys, starts, lengths, values = table
        index = tf.searchsorted(keys, flat)  # the sentinel key keeps it in range
        hit = tf.equal(tf.gather(keys, index), flat)
        counts = tf.where(hit, tf.gather(lengths, index), 1)
        source = (tf.repeat(tf.where(hit, tf.gather(starts, index), 0), counts)
                  + tf.ragged.range(counts).flat_values)
        mapped = tf.where(tf.repeat(hit, counts), tf.gather(values, source),
                          tf.repeat(flat, counts))
        ends = tf.concat([[0], tf.cumsum(tf.cast(counts, tf.int64))], 0)
        return mapped, tf.gather(ends, row_splits)

    class TokenizerModule(tf.Module):
        """In-graph ALBERT tokenizer: tf.string [N] -> tf.RaggedTensor int64 ids [N, None].

        See the module docstring. Holds its tables and the (converted) SentencePiece model as
        constants, so a SavedModel of it (or of a model holding it) is self-contained; loading
        it needs `import tensorflow_text` first.
        """

        def __init__(self, model, do_lower_case=True, core_ops=False, name="albert_tokenizer"):
            super().__init__(name=name)
            if core_ops:
                raise AlbertGraphTokenizerError(
                    "ALBERT's in-graph tokenizer has no core-op mode (SentencePiece runs on "
                    "tensorflow-text ops): build it with core_ops=False; a SavedModel holding "
                    "it needs `import tensorflow_text` before loading")
            proto = model_proto(model)
            source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else "model"
            processor = _checked_model(proto, source)
            self.do_lower_case = bool(do_lower_case)
            self.core_ops = False  # as BERT's attribute: a SavedModel needs tensorflow_text
            self.vocab_size = int(processor.GetPieceSize())
            tables = build_tables()
            self._spaces = tf.constant(tables["spaces"])
            self._decompose = tuple(tf.constant(t) for t in tables["decompose"])
            if self.do_lower_case:
                self._lower = tuple(tf.constant(t) for t in tables["lower"])
                self._case_class = tf.constant(tables["case_class"])
            try:
                self._sentencepiece = tf_text.FastSentencepieceTokenizer(proto)
            except Exception as e:  # the converter's errors have no common type
                raise AlbertGraphTokenizerError(
                    f"{source}: tensorflow-text cannot convert this SentencePiece model "
                    f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
            self._digit_comma = tuple(tf.constant(t) for t in digit_comma_table(processor))

        # str.lower's final-sigma rule, as BERT's graph tokenizer evaluates it (it reads
        # `self._case_class`).
        _final_sigma = bert_class._final_sigma

        def _collapse_spaces(self, flat, row_splits):
            """`" ".join(text.strip().split())` on code points: flat int32 [C], row_splits
            int64 [N + 1] -> (flat [C'], row_splits [N + 1]), spaces as U+0020."""
            space = _member(self._spaces, flat)
            word = tf.logical_not(space)
            size = tf.size(flat, out_type=tf.int64)
            row = tf.searchsorted(row_splits, tf.range(size), side="right") - 1
            words_upto = tf.cumsum(tf.cast(word, tf.int64))  # inclusive, over all texts
            words_before_row = tf.concat([[0], words_upto], 0)
            # A space is kept (as one space) where it follows a non-space of its text and some
            # non-space of its text comes after it.
            previous_word = tf.concat([[False], word[:-1]], 0) & tf.not_equal(
                tf.range(size), tf.gather(row_splits, row))
            later_word = words_upto < tf.gather(words_before_row, tf.gather(row_splits, row + 1))
            keep = word | (previous_word & later_word)
            kept = tf.squeeze(tf.where(keep), 1)
            ends = tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0)
            values = tf.where(tf.gather(space, kept), 32, tf.gather(flat, kept))
            return values, tf.gather(ends, row_splits)

        def _preprocess(self, texts):
            cps = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")
            flat, row_splits = self._collapse_spaces(cps.flat_values, cps.row_splits)
            flat, row_splits = _apply_exceptions(self._decompose, flat, row_splits)
            if self.do_lower_case:
                flat = self._final_sigma(flat, row_splits)
                flat, row_splits = _apply_exceptions(self._lower, flat, row_splits)
            return tf.strings.unicode_encode(
                tf.RaggedTensor.from_row_splits(flat, row_splits, validate=False), "UTF-8")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def preprocess(self, texts):
            """texts tf.string [N] -> tf.string [N]: `preprocess_text(text, lower=...)`."""
            return self._preprocess(texts)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def sentencepiece_ids(self, texts):
            """texts tf.string [N] -> SentencePiece's ids int32 ragged [N, None] before the
            digit-comma rule (`EncodeAsIds(preprocess_text(...))`; for diagnostics)."""
            return self._sentencepiece.tokenize(self._preprocess(texts))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def __call__(self, texts):
            """texts tf.string [N] -> ids tf.RaggedTensor int64 [N, None]."""
            ids = self._sentencepiece.tokenize(self._preprocess(texts))
            flat, row_splits = _apply_exceptions(
                self._digit_comma, ids.flat_values, tf.cast(ids.row_splits, tf.int64))
            return tf.RaggedTensor.from_row_splits(tf.cast(flat, tf.int64), row_splits,
                                                   validate=False)

    return TokenizerModule


@functools.lru_cache(maxsize=1)
def _module_class():
    return _make_module_class()


def TokenizerModule(model, do_lower_case=True, core_ops=False, **kwargs):  # noqa: N802
    """Builds ALBERT's in-graph tokenizer `tf.Module` (see the module docstring).

    Args:
      model: the SentencePiece model: its bytes, the path of its `.model` file, a
        `sentencepiece.SentencePieceProcessor`, or an object with `sp_model` (a FullTokenizer)
        or `model_proto` (bytes). It takes the place of the `vocab` of `Family.graph_tokenizer`.
      do_lower_case: as for FullTokenizer (`preprocess_text(lower=...)`).
      core_ops: must be False: there is no core-op mode (refused with
        `AlbertGraphTokenizerError`); the graph needs tensorflow-text.
      name: the tf.Module name.
    Returns: the module; `module(texts)` takes tf.string [N] and gives int64 ids
      tf.RaggedTensor [N, None]; `module.pieces(texts)` the pieces (tf.string, ragged) and
      `module.preprocess(texts)` the preprocessed texts tf.string [N].
    """
    return _module_class()(model, do_lower_case=do_lower_case, core_ops=core_ops, **kwargs)
