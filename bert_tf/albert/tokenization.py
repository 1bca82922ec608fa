"""ALBERT's tokenizer: SentencePiece (or BERT's WordPiece), with the pieces and ids of
google-research/albert's `tokenization.py`.

The module has the original module's public surface, so code written against it ports by
changing the import: `SPIECE_UNDERLINE`, `preprocess_text`, `encode_pieces`, `encode_ids`,
`FullTokenizer`, `load_vocab`, `convert_to_unicode`, `printable_text`, `convert_by_vocab`,
`convert_tokens_to_ids`, `convert_ids_to_tokens`, `whitespace_tokenize`, `BasicTokenizer`,
`WordpieceTokenizer` (the last ones are BERT's, shared through `bert_tf.text` and
`bert_tf.bert.tokenization`). Ours adds:
  - `SENTENCEPIECE_SPECIAL_TOKENS`, the `special_tokens` of a SentencePiece tokenizer
    ([CLS]/[SEP]/[MASK] control symbols, <pad>, <unk>, pieces starting a word with "▁");
    a WordPiece one has BERT's `WORDPIECE_SPECIAL_TOKENS`;
  - `AlbertTokenizer`, the family's tokenizer (`bert_tf.families`): the file given as
    --vocab_file may be a SentencePiece model, and `tokenize` runs `preprocess_text` first, as
    every caller of the original does before SentencePiece;
  - `tokenize_to_ids` on both (what the data code calls; `convert_tokens_to_ids(tokenize(t))`).
  - `preprocess_text_with_offsets`, `encode_pieces_with_offsets` (on
    `sentencepiece_pieces_with_offsets`, SentencePiece's own pieces) and
    `AlbertTokenizer.tokenize_with_offsets`: the same pieces and, for each, the characters of
    the text it stands for (what SQuAD maps predicted pieces back to the context with; the
    in-graph tokenizer's `tokenize_with_offsets` gives the same as bytes).

The original's behaviour, quirks included (the original code is the authority):
  - `preprocess_text`: whitespace runs collapsed to one space and the ends stripped (Python's
    `str.split()`), NFKD, combining characters (`unicodedata.combining`) dropped, optionally
    `str.lower()`. `FullTokenizer` with SentencePiece does none of it itself.
  - `encode_pieces`: SentencePiece's pieces, except that a piece longer than one character
    ending in a digit and "," is re-encoded without its "▁" and the "," appended. The original
    then means to drop a "▁" the re-encoding adds, but compares a str piece with the bytes
    `"▁".encode()`, which is never equal: the "▁" stays ("0," -> "▁", "0", ","). Hugging
    Face's AlbertTokenizer drops it; we keep it, as the original.
  - SentencePiece vocab = {IdToPiece(i): i}; a piece the model does not know is <unk>'s id.
  - WordPiece vocab files (`load_vocab`): the first whitespace-separated field of each line, " "
    for a blank line, a repeated token skipped (ids count the tokens kept, not the lines).
    Tokenizing is BERT's (`bert_tf.bert.tokenization`, memoized; same output).

`SPIECE_UNDERLINE` is "▁" as a str (the original's is its UTF-8 bytes, which is what makes
the comparison above fail).

Pure Python, no TensorFlow; `sentencepiece` is imported when a model is loaded.
"""

import bisect
import collections
import os
import unicodedata

from bert_tf.bert import tokenization as bert_tokenization
from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS, WordpieceTokenizer
from bert_tf.families import SpecialTokens
from bert_tf.text import (BasicTokenizer, VocabError, convert_by_vocab, convert_to_unicode,
                          printable_text, whitespace_tokenize)

__all__ = [
    "SPIECE_UNDERLINE",
    "SENTENCEPIECE_SPECIAL_TOKENS",
    "SentencePieceVocab",
    "AlbertTokenizer",
    "FullTokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "VocabError",
    "preprocess_text",
    "encode_pieces",
    "encode_ids",
    "preprocess_text_with_offsets",
    "encode_pieces_with_offsets",
    "sentencepiece_pieces_with_offsets",
    "load_vocab",
    "load_sentencepiece",
    "is_sentencepiece_model",
    "convert_to_unicode",
    "printable_text",
    "convert_by_vocab",
    "convert_tokens_to_ids",
    "convert_ids_to_tokens",
    "whitespace_tokenize",
]

SPIECE_UNDERLINE = "\u2581"

# The original's SentencePiece models (30k-clean.model, spm_train flags of its README): <pad>
# 0, <unk> 1 and the control symbols [CLS] [SEP] [MASK]; a piece that starts a word has "▁".
SENTENCEPIECE_SPECIAL_TOKENS = SpecialTokens(
    cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="<pad>", unk="<unk>",
    word_start_prefix=SPIECE_UNDERLINE)


def preprocess_text(inputs, remove_space=True, lower=False):
    """The original's text normalisation before SentencePiece.

    Args:
      inputs: str (bytes are decoded as UTF-8, undecodable bytes dropped).
      remove_space: collapse whitespace runs to one space and strip the ends.
      lower: lower-case (`str.lower`) after the normalisation.

    Returns:
      str: NFKD-normalised, combining characters removed.
    """
    outputs = convert_to_unicode(inputs)
    if remove_space:
        outputs = " ".join(outputs.split())
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs


def encode_pieces(sp_model, text, return_unicode=True, sample=False):
    """SentencePiece pieces (list of str) of `text`, with the original's digit-comma rule.

    Args:
      sp_model: a loaded `sentencepiece.SentencePieceProcessor`.
      text: str (already `preprocess_text`-ed, as the original's callers do).
      return_unicode: kept for the original's signature (Python 3 pieces are always str).
      sample: subword regularisation, `SampleEncodeAsPieces(text, 64, 0.1)`.
    """
    del return_unicode
    if sample:
        pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
    else:
        pieces = sp_model.EncodeAsPieces(text)
    out = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            # A piece like "▁1,": the number is re-encoded on its own and the "," follows. The
            # re-encoding starts with "▁" again; the original's test to drop it never fires.
            out += sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
            out.append(",")
        else:
            out.append(piece)
    return out


def preprocess_text_with_offsets(inputs, remove_space=True, lower=False):
    """`preprocess_text(inputs, remove_space, lower)` and where each of its characters comes
    from.

    Each step of `preprocess_text` maps characters on their own: a whitespace run becomes one
    space (its first character's), NFKD decomposes each character on its own and then only
    reorders the combining characters it drops, and `str.lower` changes the length of a
    character alone (its one context rule, the final sigma, keeps it).

    Args:
      inputs: str.
    Returns:
      (text, origin): the preprocessed str, and per character of it (list of int) the index in
      `inputs` of the character it comes from.
    Raises:
      AssertionError: if the characters do not add up to `preprocess_text`'s text (a Python
        whose `str` rules differ from these).
    """
    chars, origin = [], []
    # The first character of a whitespace run after a word (the run becomes one space, even
    # when that word's characters are all dropped afterwards).
    pending = None
    in_text = False
    for i, c in enumerate(inputs):
        if remove_space and c.isspace():
            if in_text and pending is None:
                pending = i
            continue
        in_text = True
        if pending is not None:
            chars.append(" ")
            origin.append(pending)
            pending = None
        for d in unicodedata.normalize("NFKD", c):
            if not unicodedata.combining(d):
                chars.append(d)
                origin.append(i)
    text = "".join(chars)
    if lower:
        lowered = text.lower()
        if len(lowered) != len(text):
            origin = [o for c, o in zip(chars, origin) for _ in range(len(c.lower()))]
        text = lowered
    expected = preprocess_text(inputs, remove_space=remove_space, lower=lower)
    if text != expected or len(origin) != len(text):
        raise AssertionError(f"preprocess_text_with_offsets({inputs!r}) gave {text!r}, "
                             f"preprocess_text {expected!r}")
    return text, origin


def sentencepiece_pieces_with_offsets(sp_model, text):
    """SentencePiece's pieces of `text` and their character spans [(start, end)] in `text`
    (the pieces of `EncodeAsPieces`; spans from its byte offsets, without whitespace at either
    end; a lone "▁" gets an empty span where its word starts)."""
    from sentencepiece import sentencepiece_pb2  # pylint: disable=g-import-not-at-top

    proto = sentencepiece_pb2.SentencePieceText.FromString(
        sp_model.encode(text, out_type="serialized_proto"))
    byte_ends = []  # UTF-8 end offset of each character
    total = 0
    for c in text:
        total += len(c.encode("utf-8"))
        byte_ends.append(total)
    pieces, spans = [], []
    for piece in proto.pieces:
        start = bisect.bisect_right(byte_ends, piece.begin)
        end = bisect.bisect_left(byte_ends, piece.end) + 1 if piece.end > piece.begin else start
        if not piece.piece.replace(SPIECE_UNDERLINE, ""):
            # A word-start mark alone stands for no character (its surface is the whitespace,
            # or characters SentencePiece removes, before a word): empty, where the word starts.
            start = end
            while start < len(text) and text[start].isspace():
                start += 1
            end = start
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        pieces.append(piece.piece)
        spans.append((start, end))
    return pieces, spans


def encode_pieces_with_offsets(sp_model, text):
    """`encode_pieces(sp_model, text)` and, for each piece, the characters of `text` it stands
    for.

    Returns:
      (pieces, spans): the pieces (list of str) and a (start, end) character span of `text` per
      piece, with no whitespace at either end; a piece standing for no character (a lone "▁"
      SentencePiece puts before a word it cannot start with a "▁" piece) has start == end at
      the start of its word. The digit-comma rule's pieces share the number's characters:
      "▁1990," -> "▁" (empty), "1990" (the digits), "," (the comma).
    """
    raw, raw_spans = sentencepiece_pieces_with_offsets(sp_model, text)
    pieces, spans = [], []
    for piece, (start, end) in zip(raw, raw_spans):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            number = piece[:-1].replace(SPIECE_UNDERLINE, "")
            sub, sub_spans = sentencepiece_pieces_with_offsets(sp_model, number)
            has_comma = end > start and text[end - 1] == ","
            number_end = end - 1 if has_comma else end
            exact = text[start:number_end] == number
            for sub_start, sub_end in sub_spans:
                if exact:
                    spans.append((start + sub_start, start + sub_end))
                else:  # SentencePiece normalised the number: each piece gets all of it
                    spans.append((start, number_end if sub_end > sub_start else start))
            pieces += sub
            pieces.append(",")
            spans.append((number_end, end) if has_comma else (start, end))
        else:
            pieces.append(piece)
            spans.append((start, end))
    return pieces, spans


def encode_ids(sp_model, text, sample=False):
    """The ids of `encode_pieces(sp_model, text, sample=sample)`."""
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def load_vocab(vocab_file):
    """A WordPiece vocab file by the original's rule: OrderedDict token -> id.

    Each line's first whitespace-separated field is a token (" " for a blank line); a token
    seen before is skipped, so ids count the distinct tokens (equal to line numbers in a file
    without repeats). Raises `VocabError` naming the file when it is missing or not UTF-8.
    """
    path = os.fspath(vocab_file)
    try:
        with _open(path) as f:
            data = f.read()
    except FileNotFoundError:
        raise VocabError(f"vocab file {path!r} does not exist") from None
    except IsADirectoryError:
        raise VocabError(f"vocab file {path!r} is a directory, expected a text file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VocabError(f"vocab file {path!r} is neither a SentencePiece model nor a UTF-8 "
                         "vocab file") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # what follows the last newline is no line (the original reads to EOF)
    vocab = collections.OrderedDict()
    for line in lines:
        fields = line.split()
        token = fields[0] if fields else " "
        if token not in vocab:
            vocab[token] = len(vocab)
    return vocab


def _open(path):
    if "://" in path:
        import tensorflow as tf  # only for remote file systems (gs://, ...)

        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def _read_model_bytes(path):
    with _open(path) as f:
        return f.read()


def load_sentencepiece(model_file, flag="spm_model_file"):
    """A `sentencepiece.SentencePieceProcessor` loaded from `model_file` (read as bytes, as the
    original does, so remote paths work). Raises `VocabError` naming the file (and `flag`)."""
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top

    path = os.fspath(model_file)
    try:
        data = _read_model_bytes(path)
    except FileNotFoundError:
        raise VocabError(f"{flag} {path!r} does not exist") from None
    except IsADirectoryError:
        raise VocabError(f"{flag} {path!r} is a directory, expected a SentencePiece model") from None
    model = spm.SentencePieceProcessor()
    try:
        model.LoadFromSerializedProto(data)
    except RuntimeError:
        raise VocabError(f"{flag} {path!r} is not a SentencePiece model") from None
    if model.GetPieceSize() == 0:
        raise VocabError(f"{flag} {path!r} is not a SentencePiece model (no pieces)")
    return model


def is_sentencepiece_model(path):
    """Whether `path` is a file SentencePiece loads (a serialized model, `*.model`)."""
    try:
        load_sentencepiece(path)
    except VocabError:
        return False
    return True


class SentencePieceVocab(dict):
    """{piece: id} of a SentencePiece model, carrying the model as `sp_model`: the `vocab` the
    family hands its graph tokenizer (`bert_tf.albert.fast_tokenization.TokenizerModule`)."""

    def __init__(self, sp_model):
        super().__init__((sp_model.IdToPiece(i), i) for i in range(sp_model.GetPieceSize()))
        self.sp_model = sp_model


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids)


def _wordpiece_tokenizer(vocab_file, do_lower_case):
    """BERT's memoized FullTokenizer over a vocab read by ALBERT's `load_vocab`."""
    vocab = load_vocab(vocab_file)
    unk = WORDPIECE_SPECIAL_TOKENS.unk
    if unk not in vocab:
        raise VocabError(f"vocab file {os.fspath(vocab_file)!r} is neither a SentencePiece "
                         f"model nor a WordPiece vocab with an {unk} entry")
    return bert_tokenization.FullTokenizer(vocab_file, do_lower_case, vocab=vocab)


class FullTokenizer:
    """The original's `FullTokenizer`: SentencePiece when `spm_model_file` is given (no
    lower-casing, no normalisation: callers run `preprocess_text`), else BERT's WordPiece over
    `vocab_file`.

    Attributes:
      vocab: token -> id (SentencePiece: every piece; WordPiece: `load_vocab`'s).
      inv_vocab: id -> token.
      sp_model: the `SentencePieceProcessor`, or None (WordPiece).
      special_tokens: `SENTENCEPIECE_SPECIAL_TOKENS` or `WORDPIECE_SPECIAL_TOKENS`.
      do_lower_case: as given (SentencePiece: unused here).

    Raises:
      VocabError: naming the file, when it is not a SentencePiece model (spm_model_file) or a
        vocab file with [UNK] (vocab_file).
    """

    def __init__(self, vocab_file, do_lower_case=True, spm_model_file=None):
        self.do_lower_case = do_lower_case
        self.sp_model = None
        if spm_model_file:
            self.sp_model = load_sentencepiece(spm_model_file)
            self.vocab = SentencePieceVocab(self.sp_model)
            self.special_tokens = SENTENCEPIECE_SPECIAL_TOKENS
            self._wordpiece = None
        else:
            self._wordpiece = _wordpiece_tokenizer(vocab_file, do_lower_case)
            self.vocab = self._wordpiece.vocab
            self.basic_tokenizer = self._wordpiece.basic_tokenizer
            self.wordpiece_tokenizer = self._wordpiece.wordpiece_tokenizer
            self.special_tokens = WORDPIECE_SPECIAL_TOKENS
        self.inv_vocab = {v: k for k, v in self.vocab.items()}

    @classmethod
    def from_scratch(cls, vocab_file, do_lower_case, spm_model_file):
        return cls(vocab_file, do_lower_case, spm_model_file)

    def tokenize(self, text):
        """The pieces (list of str) of `text`, as the original's `tokenize`."""
        if self.sp_model is not None:
            return encode_pieces(self.sp_model, text)
        return self._wordpiece.tokenize(text)

    def tokenize_to_ids(self, text):
        """`convert_tokens_to_ids(tokenize(text))`."""
        if self.sp_model is not None:
            return self.convert_tokens_to_ids(self.tokenize(text))
        return self._wordpiece.tokenize_to_ids(text)

    def convert_tokens_to_ids(self, tokens):
        if self.sp_model is not None:
            # PieceToId: a piece the model does not know is <unk>'s id.
            unk = self.sp_model.unk_id()
            vocab = self.vocab
            return [vocab.get(printable_text(t), unk) for t in tokens]
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        if self.sp_model is not None:
            return [self.sp_model.IdToPiece(int(i)) for i in ids]
        return convert_by_vocab(self.inv_vocab, ids)


class AlbertTokenizer(FullTokenizer):
    """The ALBERT family's tokenizer (`bert_tf.families.Family.tokenizer`): what the original's
    scripts do around `FullTokenizer`, for the core code that only passes --vocab_file.

    `AlbertTokenizer(vocab_file, do_lower_case, spm_model_file=None)`: `vocab_file` may be the
    SentencePiece model itself (30k-clean.model; any file SentencePiece loads is taken as one),
    or `spm_model_file` names it; otherwise `vocab_file` is a WordPiece vocab. With
    SentencePiece, `tokenize(text)` is `encode_pieces(preprocess_text(text,
    lower=do_lower_case))`: the pieces the original's create_pretraining_data, run_classifier,
    ... feed the model. WordPiece tokenizes as BERT (no `preprocess_text`, as the original's
    create_pretraining_data on that path).

    Raises:
      VocabError: one line naming the file, when it is neither a SentencePiece model nor a
        WordPiece vocab (with [UNK]).
    """

    # The family's tokens (what `bert_tf.families` code reads from the class); an instance on
    # the WordPiece path has BERT's instead.
    special_tokens = SENTENCEPIECE_SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=True, spm_model_file=None, **kwargs):
        del kwargs  # other families' options (cache_size, ...): nothing to tune here
        if not spm_model_file and vocab_file is not None and is_sentencepiece_model(vocab_file):
            spm_model_file = vocab_file
        super().__init__(vocab_file, do_lower_case, spm_model_file)

    def preprocess(self, text):
        """`preprocess_text(text, lower=do_lower_case)` with SentencePiece, else `text`."""
        if self.sp_model is None:
            return text
        return preprocess_text(text, lower=self.do_lower_case)

    def tokenize(self, text):
        return super().tokenize(self.preprocess(text))

    def tokenize_to_ids(self, text):
        return super().tokenize_to_ids(self.preprocess(text))

    def tokenize_with_offsets(self, text):
        """`tokenize(text)` and the characters of `text` each piece stands for (SentencePiece).

        Returns:
          (pieces, spans): the pieces of `tokenize(text)` (list of str) and, per piece, the
          (start, end) span of the characters of `text` it comes from: a span never starts or
          ends with whitespace, covers the combining marks `preprocess_text` drops after its
          last character, and is empty (start == end, where its word starts) for a piece that
          stands for no character, such as a lone "▁". `text[start:end]` of a run of pieces is
          the original text they were made from, accents, case and spacing included.
        Raises:
          TypeError: on the WordPiece path (BERT's SQuAD post-processing maps WordPiece
            pieces back to the text; this tokenizer's `special_tokens` say which path it is).
        """
        if self.sp_model is None:
            raise TypeError("tokenize_with_offsets needs a SentencePiece model; this tokenizer "
                            "reads a WordPiece vocab")
        text = convert_to_unicode(text)
        normalized, origin = preprocess_text_with_offsets(text, lower=self.do_lower_case)
        pieces, spans = encode_pieces_with_offsets(self.sp_model, normalized)
        # The end of each character of `text`, extended over the characters after it that
        # preprocess_text drops (combining marks), up to the next kept or whitespace character.
        kept = set(origin)
        extent = [0] * len(text)
        next_stop = len(text)
        for i in range(len(text) - 1, -1, -1):
            extent[i] = next_stop
            if i in kept or text[i].isspace():
                next_stop = i
        original = []
        for start, end in spans:
            if end > start:
                original.append((origin[start], extent[origin[end - 1]]))
            else:
                position = origin[start] if start < len(origin) else len(text)
                original.append((position, position))
        return pieces, original
