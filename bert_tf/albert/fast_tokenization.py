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

`tokenize_with_offsets(texts)` gives the same ids and, for each piece, the bytes [start, end)
of the input text it stands for: `AlbertTokenizer.tokenize_with_offsets`' characters as bytes
(the contract of `bert_tf.families.Family.graph_tokenizer`; what the SQuAD export maps
predicted pieces back to the context with). Its steps mirror the host's:
  * step 1 keeps, for each preprocessed character, the index of the text's character it comes
    from (a whitespace run's space: the run's first; NFKD and lower-casing repeat it);
  * SentencePiece's begin and end of each piece (bytes of the preprocessed text) come from
    SentencePiece's own normalization, which the graph does not re-implement: tensorflow-text's
    `SentencepieceTokenizer.tokenize_with_offsets` runs on a *character model*
    (`character_model`: the model's normalizer and user-defined symbols, one piece per
    character that is a piece of the model), which cuts the normalized text wherever a piece
    of the model can begin or end and gives each cut's place in the input; the model's
    pieces (FastSentencepieceTokenizer's ids above) then take their lengths in the normalized
    text (their vocab entries' bytes; an unknown piece the next run of characters the
    character model does not know either) and the begin and end of the cuts where they start
    and end. (tensorflow-text's FastSentencepieceTokenizer gives no offsets, and its
    SentencepieceTokenizer on the model itself breaks ties as described in 2.)
  * then the host's rules: bytes to characters, a piece of "▁" only empty where its word
    starts, whitespace trimmed from both ends, the digit-comma rule's pieces placed within the
    number (`digit_comma_spans`), and the preprocessed characters mapped back to the text's,
    a span's end extended over the characters preprocess_text drops after it (combining
    marks) up to the next character it keeps or whitespace.
It needs every character of a piece to be a piece itself (trained models are made so) and no
byte fallback; for another model `tokenize_with_offsets` raises `AlbertGraphTokenizerError`
saying so. The tests compare it with the host on the fuzz corpora of the ids (where the ids
tie, see 2, the spans are of other pieces) and around every code point. It costs about 2 to
3 times `__call__` (benchmarks/albert_offsets.py).

No core-op mode: SentencePiece (the model's normalization rules and the unigram Viterbi search)
has no reasonable core TensorFlow form, so the graph holds tensorflow-text ops and a SavedModel of it
needs `import tensorflow_text` before `tf.saved_model.load` (and `saved_model_cli` cannot run
it). `TokenizerModule(..., core_ops=True)` is refused with `AlbertGraphTokenizerError`.
"""

import functools
import os
import unicodedata

import numpy as np

from bert_tf.albert.tokenization import sentencepiece_pieces_with_offsets
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


def digit_comma_spans(processor):
    """Where the digit-comma rule's pieces lie in the text, aligned with `digit_comma_table`:
    the host's `encode_pieces_with_offsets` spans of the re-encoded number's pieces, relative
    to the number (its SentencePiece spans in the number on its own, which the piece's text
    fixes), for the graph's `tokenize_with_offsets`.

    Returns dict of numpy arrays:
      value_start, value_end int32 [M + 1]: per value of the table, the characters of the
        number the piece stands for (-1 for the final ",");
      number int object [K + 1] (bytes): per key, the number (the piece without "▁" and ",");
      number_length int32 [K + 1]: its characters.
    """
    keys = digit_comma_table(processor)[0][:-1]
    value_start, value_end, number, number_length = [], [], [], []
    for index in keys:
        text = processor.IdToPiece(int(index))[:-1].replace(WORD_START, "")
        pieces, spans = sentencepiece_pieces_with_offsets(processor, text)
        if pieces != processor.EncodeAsPieces(text):  # the table's ids are EncodeAsPieces'
            raise AlbertGraphTokenizerError(f"the pieces of {text!r} differ between encodings")
        value_start += [a for a, _ in spans] + [-1]
        value_end += [b for _, b in spans] + [-1]
        number.append(text.encode("utf-8"))
        number_length.append(len(text))
    return {"value_start": np.asarray(value_start + [0], np.int32),
            "value_end": np.asarray(value_end + [0], np.int32),
            "number": np.asarray(number + [b""], object),
            "number_length": np.asarray(number_length + [0], np.int32)}


def piece_tables(processor):
    """Per id of a loaded SentencePiece model: the UTF-8 bytes of its piece (what it takes of
    SentencePiece's normalized text; 0 for the unknown piece, whose text varies) and whether
    it is made of "▁" only (it stands for no character of the text).

    Returns (piece_bytes int32 [V], word_start_only bool [V]).
    """
    size = processor.GetPieceSize()
    piece_bytes = np.zeros(size, np.int32)
    word_start_only = np.zeros(size, bool)
    for index in range(size):
        piece = processor.IdToPiece(index)
        if index != processor.unk_id():
            piece_bytes[index] = len(piece.encode("utf-8"))
        word_start_only[index] = bool(piece) and not piece.replace(WORD_START, "")
    return piece_bytes, word_start_only


def character_model(proto):
    """A SentencePiece model that normalizes text as the model `proto` (bytes) does and cuts it
    at every place that model's pieces can begin or end: its normalizer, its user-defined
    symbols (which the normalizer leaves alone, and which are one piece each in both) and one
    piece per character that is a piece of the model; other characters are unknown to both,
    and SentencePiece makes each run of them one unknown piece in both. tensorflow-text's
    `SentencepieceTokenizer.tokenize_with_offsets` on it gives, for each character of the
    normalized text, the bytes of the input it comes from, which the model's own pieces then
    take by their lengths (the graph's `tokenize_with_offsets`).

    Returns:
      (bytes of the serialized model, problem): problem is None, or a sentence saying why the
      model's pieces cannot be placed this way (a piece holding a character that is not a
      piece itself, which no trained model has; byte fallback).
    """
    from sentencepiece import sentencepiece_model_pb2  # pylint: disable=g-import-not-at-top

    model = sentencepiece_model_pb2.ModelProto.FromString(proto)
    kinds = sentencepiece_model_pb2.ModelProto.SentencePiece
    user_defined = [p.piece for p in model.pieces if p.type == kinds.USER_DEFINED]
    singles = {p.piece for p in model.pieces if p.type in (kinds.NORMAL, kinds.USER_DEFINED)
               and len(p.piece) == 1}
    problem = None
    if model.trainer_spec.byte_fallback:
        problem = "the SentencePiece model falls back to bytes"
    for piece in model.pieces:
        if piece.type == kinds.NORMAL and not set(piece.piece) <= singles:
            problem = (f"the SentencePiece piece {piece.piece!r} holds a character that is not "
                       "a piece itself")
            break
    derived = sentencepiece_model_pb2.ModelProto()
    derived.CopyFrom(model)
    del derived.pieces[:]
    derived.pieces.add(piece="<unk>", type=kinds.UNKNOWN, score=0.0)
    for piece in user_defined:
        derived.pieces.add(piece=piece, type=kinds.USER_DEFINED, score=0.0)
    for char in sorted(singles - set(user_defined)):
        derived.pieces.add(piece=char, type=kinds.NORMAL, score=-1.0)
    spec = derived.trainer_spec
    spec.model_type = spec.UNIGRAM
    spec.vocab_size = len(derived.pieces)
    spec.unk_id, spec.pad_id, spec.bos_id, spec.eos_id = 0, -1, -1, -1
    del spec.control_symbols[:]
    return derived.SerializeToString(), problem


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
        `_exception_table`; returns (mapped flat [C'], its row_splits [N + 1], how many
        values each of `flat` became int32 [C])."""
        keys, starts, lengths, values = table
        index = tf.searchsorted(keys, flat)  # the sentinel key keeps it in range
        hit = tf.equal(tf.gather(keys, index), flat)
        counts = tf.where(hit, tf.gather(lengths, index), 1)
        source = (tf.repeat(tf.where(hit, tf.gather(starts, index), 0), counts)
                  + tf.ragged.range(counts).flat_values)
        mapped = tf.where(tf.repeat(hit, counts), tf.gather(values, source),
                          tf.repeat(flat, counts))
        ends = tf.concat([[0], tf.cumsum(tf.cast(counts, tf.int64))], 0)
        return mapped, tf.gather(ends, row_splits), counts

    def _utf8_bytes(code_points):
        """UTF-8 length of each code point (int32 [C]) -> int64 [C]."""
        return tf.cast(1 + tf.cast(code_points >= 0x80, tf.int32)
                       + tf.cast(code_points >= 0x800, tf.int32)
                       + tf.cast(code_points >= 0x10000, tf.int32), tf.int64)

    def _next_at_or_after(sorted_positions, positions, limit):
        """The first of `sorted_positions` (int64 [M]) >= each of `positions`, at most `limit`
        (both int64 [K])."""
        padded = tf.concat([sorted_positions, [tf.int64.max]], 0)
        return tf.minimum(tf.gather(padded, tf.searchsorted(sorted_positions, positions)),
                          limit)

    def _gather_or(values, index, default):
        """values[index] where 0 <= index < len(values), else `default` (index int64)."""
        inside = (index >= 0) & (index < tf.size(values, out_type=tf.int64))
        padded = tf.concat([values, [tf.zeros([], values.dtype)]], 0)
        picked = tf.gather(padded, tf.where(inside, index, tf.size(values, out_type=tf.int64)))
        return tf.where(inside, picked, default)

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
            # For tokenize_with_offsets: each piece's length in SentencePiece's normalized text,
            # where the digit-comma rule's pieces lie, and the character model (see
            # `character_model`) that tells where each normalized character comes from.
            self._unk_id = int(processor.unk_id())
            piece_bytes, word_start_only = piece_tables(processor)
            self._piece_bytes = tf.constant(piece_bytes)
            self._word_start_only = tf.constant(word_start_only)
            spans = digit_comma_spans(processor)
            self._digit_comma_start = tf.constant(spans["value_start"])
            self._digit_comma_end = tf.constant(spans["value_end"])
            self._numbers = tf.constant(spans["number"], tf.string)
            self._number_lengths = tf.constant(spans["number_length"])
            characters, self._offsets_problem = character_model(proto)
            self._characters = tf_text.SentencepieceTokenizer(characters, out_type=tf.string)

        # str.lower's final-sigma rule, as BERT's graph tokenizer evaluates it (it reads
        # `self._case_class`).
        _final_sigma = bert_class._final_sigma

        def _collapse_spaces(self, flat, row_splits):
            """`" ".join(text.strip().split())` on code points: flat int32 [C], row_splits
            int64 [N + 1] -> (flat [C'], row_splits [N + 1], the index in `flat` of each
            character kept [C']), spaces as U+0020 (a run's first character)."""
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
            return values, tf.gather(ends, row_splits), kept

        def _preprocess_code_points(self, flat, row_splits):
            """`preprocess_text` on code points: flat int32 [C], row_splits int64 [N + 1] ->
            (flat [C'], row_splits [N + 1], origin int64 [C']: the index in `flat` of the
            character each output character comes from)."""
            flat, row_splits, kept = self._collapse_spaces(flat, row_splits)
            flat, row_splits, counts = _apply_exceptions(self._decompose, flat, row_splits)
            origin = tf.repeat(kept, counts)
            if self.do_lower_case:
                flat = self._final_sigma(flat, row_splits)  # in place
                flat, row_splits, counts = _apply_exceptions(self._lower, flat, row_splits)
                origin = tf.repeat(origin, counts)
            return flat, row_splits, origin

        def _preprocess(self, texts):
            cps = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")
            flat, row_splits, _ = self._preprocess_code_points(cps.flat_values, cps.row_splits)
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
            flat, row_splits, _ = _apply_exceptions(
                self._digit_comma, ids.flat_values, tf.cast(ids.row_splits, tf.int64))
            return tf.RaggedTensor.from_row_splits(tf.cast(flat, tf.int64), row_splits,
                                                   validate=False)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def tokenize_with_offsets(self, texts):
            """texts tf.string [N] -> (ids, starts, ends), int64 tf.RaggedTensors [N, None]:
            the ids of `__call__` and the bytes [start, end) of each text each piece stands
            for, those of `AlbertTokenizer.tokenize_with_offsets`' characters (see the module
            docstring)."""
            if self._offsets_problem:
                raise AlbertGraphTokenizerError(
                    f"tokenize_with_offsets is not available: {self._offsets_problem}")
            decoded, byte_starts = tf.strings.unicode_decode_with_offsets(
                texts, "UTF-8", errors="ignore")
            raw, raw_splits = decoded.flat_values, decoded.row_splits
            flat, row_splits, origin = self._preprocess_code_points(raw, raw_splits)
            preprocessed = tf.strings.unicode_encode(
                tf.RaggedTensor.from_row_splits(flat, row_splits, validate=False), "UTF-8")
            pieces, start, stop = self._sentencepiece_spans(preprocessed, flat, row_splits)
            ids, start, stop = self._digit_comma_spans(preprocessed, flat, row_splits, pieces,
                                                       start, stop)
            rows = ids.value_rowids()
            # preprocess_text's characters -> the text's: a span ends after its last
            # character and the characters preprocess_text drops after it (combining marks),
            # up to the next character it keeps or whitespace, as the host.
            raw_last = tf.gather(raw_splits, rows + 1)
            kept = tf.scatter_nd(origin[:, None], tf.ones_like(origin, tf.int32),
                                 tf.shape(raw, out_type=tf.int64)) > 0
            stops = tf.where(kept | _member(self._spaces, raw))[:, 0]
            nonempty = stop > start
            position = tf.where(start < tf.gather(row_splits, rows + 1),
                                _gather_or(origin, start, 0), raw_last)
            first = tf.where(nonempty, _gather_or(origin, start, 0), position)
            last = tf.where(nonempty, _next_at_or_after(
                stops, _gather_or(origin, stop - 1, 0) + 1, raw_last), position)
            # Characters -> bytes (a position past the last character: the text's length).
            text_bytes = tf.gather(tf.cast(tf.strings.length(texts), tf.int64), rows)

            def to_bytes(character):
                return tf.where(character < raw_last,
                                _gather_or(byte_starts.flat_values, character, 0), text_bytes)

            return (ids, ids.with_flat_values(to_bytes(first)),
                    ids.with_flat_values(to_bytes(last)))

        def _sentencepiece_spans(self, preprocessed, flat, row_splits):
            """The model's pieces of the preprocessed texts (before the digit-comma rule) and
            the characters of `flat` each stands for, as the host's
            `sentencepiece_pieces_with_offsets`.

            Args: preprocessed tf.string [N]; flat int32 [C], row_splits int64 [N + 1]: its
              code points.
            Returns: (pieces, start, stop): the ids, int32 RaggedTensor [N, None]; int64 [K]
              indexes into `flat`, each piece's characters [start, stop) without whitespace
              at either end (a piece of "▁" only: empty, where its word starts).
            """
            ids = self._sentencepiece.tokenize(preprocessed)
            piece_ids = ids.flat_values
            rows = tf.cast(ids.value_rowids(), tf.int64)
            # Each piece's bytes of SentencePiece's normalized text: its vocab entry's, or, for
            # an unknown piece, the next run of characters the character model does not know.
            units, unit_begin, unit_end = self._characters.tokenize_with_offsets(preprocessed)
            unit_bytes = tf.cast(tf.strings.length(units.flat_values), tf.int64)
            unit_stop = tf.cumsum(unit_bytes)
            unknown_units = tf.equal(self._characters.string_to_id(units.flat_values), 0)
            unknown = tf.equal(piece_ids, self._unk_id)
            piece_bytes = tf.where(
                unknown, _gather_or(tf.boolean_mask(unit_bytes, unknown_units),
                                    tf.cumsum(tf.cast(unknown, tf.int64), exclusive=True), 0),
                tf.cast(tf.gather(self._piece_bytes, piece_ids), tf.int64))
            piece_stop = tf.cumsum(piece_bytes)
            # Every piece boundary is a character model's one (see `character_model`): its
            # SentencePiece begin and end, bytes of the preprocessed text.
            begin = _gather_or(tf.cast(unit_begin.flat_values, tf.int64), tf.searchsorted(
                unit_stop - unit_bytes, piece_stop - piece_bytes, out_type=tf.int64), 0)
            end = _gather_or(tf.cast(unit_end.flat_values, tf.int64), tf.searchsorted(
                unit_stop, piece_stop, out_type=tf.int64), 0)
            # Bytes -> characters, as the host.
            char_end = tf.cumsum(_utf8_bytes(flat))
            base = tf.gather(tf.concat([[0], char_end], 0), tf.gather(row_splits, rows))
            start = tf.searchsorted(char_end, base + begin, side="right", out_type=tf.int64)
            stop = tf.where(end > begin, tf.searchsorted(char_end, base + end,
                                                         out_type=tf.int64) + 1, start)
            last = tf.gather(row_splits, rows + 1)
            nonspace = tf.where(~_member(self._spaces, flat))[:, 0]
            # A piece of "▁" only stands for no character: empty, where its word starts.
            lone = tf.gather(self._word_start_only, piece_ids) & ~unknown
            word = _next_at_or_after(nonspace, stop, last)
            start, stop = tf.where(lone, word, start), tf.where(lone, word, stop)
            # No whitespace at either end.
            start = tf.minimum(_next_at_or_after(nonspace, start, last), stop)
            before = tf.searchsorted(nonspace, stop, out_type=tf.int64) - 1
            stop = tf.maximum(_gather_or(nonspace, before, -1) + 1, start)
            return ids, start, stop

        def _digit_comma_spans(self, preprocessed, flat, row_splits, pieces, start, stop):
            """The digit-comma rule on pieces and their spans (`_sentencepiece_spans`), as the
            host's `encode_pieces_with_offsets`: the number's pieces at their places in it
            where the text holds the number as the piece writes it (else each the whole
            number, or empty for a "▁"), the "," on the text's comma.

            Returns: (ids int64 RaggedTensor [N, None], start, stop int64 [K'])."""
            piece_ids = pieces.flat_values
            flat_ids, splits, counts = _apply_exceptions(
                self._digit_comma, piece_ids, tf.cast(pieces.row_splits, tf.int64))
            ids = tf.RaggedTensor.from_row_splits(tf.cast(flat_ids, tf.int64), splits,
                                                  validate=False)
            keys, value_starts = self._digit_comma[:2]
            key = tf.searchsorted(keys, piece_ids)
            hit = tf.equal(tf.gather(keys, key), piece_ids)
            source = tf.repeat(tf.range(tf.size(piece_ids, out_type=tf.int64)), counts)
            start, stop = tf.gather(start, source), tf.gather(stop, source)
            rows = ids.value_rowids()
            at = tf.where(tf.gather(hit, source))[:, 0]  # the rule's pieces
            key = tf.gather(tf.gather(key, source), at)
            value = (tf.gather(value_starts, key)
                     + tf.gather(tf.ragged.range(counts).flat_values, at))
            a, b = tf.gather(self._digit_comma_start, value), tf.gather(self._digit_comma_end,
                                                                        value)
            a, b = tf.cast(a, tf.int64), tf.cast(b, tf.int64)
            s, e, row = tf.gather(start, at), tf.gather(stop, at), tf.gather(rows, at)
            has_comma = (e > s) & tf.equal(_gather_or(flat, e - 1, 0), ord(","))
            number_end = e - tf.cast(has_comma, tf.int64)
            char_start = tf.concat([[0], tf.cumsum(_utf8_bytes(flat))], 0)
            base = tf.gather(char_start, tf.gather(row_splits, row))
            begin = tf.gather(char_start, s) - base
            written = tf.strings.substr(tf.gather(preprocessed, row), begin,
                                        tf.gather(char_start, number_end) - base - begin)
            exact = (tf.equal(number_end - s,
                              tf.cast(tf.gather(self._number_lengths, key), tf.int64))
                     & tf.equal(written, tf.gather(self._numbers, key)))
            comma = a < 0
            new_start = tf.where(comma, tf.where(has_comma, number_end, s),
                                 tf.where(exact, s + a, s))
            new_stop = tf.where(comma, e, tf.where(exact, s + b,
                                                   tf.where(b > a, number_end, s)))
            start = tf.tensor_scatter_nd_update(start, at[:, None], new_start)
            stop = tf.tensor_scatter_nd_update(stop, at[:, None], new_stop)
            return ids, start, stop

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
      tf.RaggedTensor [N, None]; `module.tokenize_with_offsets(texts)` the same ids and each
      piece's bytes of the text (int64 RaggedTensors starts, ends [N, None]);
      `module.preprocess(texts)` the preprocessed texts tf.string [N].
    """
    return _module_class()(model, do_lower_case=do_lower_case, core_ops=core_ops, **kwargs)
