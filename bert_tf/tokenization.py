"""WordPiece tokenization giving exactly the ids of google-research/bert's `tokenization.py`.

Same public surface as the original, so code written against it ports by changing the import:
`FullTokenizer`, `BasicTokenizer`, `WordpieceTokenizer`, `load_vocab`, `convert_to_unicode`,
`printable_text`, `convert_by_vocab`, `convert_tokens_to_ids`, `convert_ids_to_tokens`,
`whitespace_tokenize`, `validate_case_matches_checkpoint`. Ours adds `WORDPIECE_SPECIAL_TOKENS`
(a `FullTokenizer`'s `special_tokens`: [CLS], [SEP], ... and the "##" word-boundary rule, which
the data code reads instead of naming them) and `special_tokens_of`.

This module is pure Python and does not import TensorFlow (the data pipeline imports it and wants
a small memory footprint); a vocab path with a URL scheme (`gs://...`) is read through
`tf.io.gfile`, imported only then.

The pipeline, as the original defines it (the original code is the authority):
  1. bytes are decoded as UTF-8, undecodable bytes dropped;
  2. U+0000, U+FFFD and characters of category Cc/Cf are removed (tab, newline and CR are kept
     as whitespace); Zs characters and tab/newline/CR become a space;
  3. every CJK ideograph the original lists (see `_is_chinese_char`) is surrounded by spaces;
  4. the text is split on whitespace (`str.split()`, which also splits on U+2028/U+2029);
  5. with `do_lower_case`, each word is lower-cased (`str.lower`, so with the final-sigma rule),
     NFD-normalized and stripped of category Mn characters (the last two skipped with
     `strip_accents=False`, ELECTRA's tokenizer option);
  6. each word is split around punctuation (ASCII non-alphanumerics and category P*);
  7. each piece is WordPiece-tokenized: greedy longest match first, continuations prefixed
     `##`; a piece longer than 200 code points, or one the vocab cannot cover, becomes `[UNK]`.

Steps 5-7 only depend on the whitespace-separated word, so `FullTokenizer` memoizes their ids
per word, and step 7 per punctuation-split piece; that is the whole of the speed-up over the
original, the output is unchanged.
"""

import collections
import re
import unicodedata

from bert_tf.families import SpecialTokens

__all__ = [
    "FullTokenizer",
    "BasicTokenizer",
    "WordpieceTokenizer",
    "VocabError",
    "load_vocab",
    "convert_to_unicode",
    "printable_text",
    "convert_by_vocab",
    "convert_tokens_to_ids",
    "convert_ids_to_tokens",
    "whitespace_tokenize",
    "validate_case_matches_checkpoint",
    "WORDPIECE_SPECIAL_TOKENS",
    "special_tokens_of",
]

# WordPiece's special tokens (BERT's vocab files; ELECTRA's are BERT's); a piece that
# continues a word starts with "##" (step 7 below).
WORDPIECE_SPECIAL_TOKENS = SpecialTokens(
    cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="[PAD]", unk="[UNK]", continuation_prefix="##")
UNK_TOKEN = WORDPIECE_SPECIAL_TOKENS.unk
MAX_INPUT_CHARS_PER_WORD = 200

# Released checkpoints whose directory name says how their vocab was cased.
_LOWER_CASED_MODELS = (
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
)
_CASED_MODELS = (
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
)


class VocabError(ValueError):
    """A vocab file that cannot be used: missing, empty, duplicated entries, no `[UNK]`."""


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises ValueError if `do_lower_case` contradicts a released checkpoint's directory name.

    Only the released model names are recognized (e.g. `.../uncased_L-12_H-768_A-12/bert_model.ckpt`
    wants `do_lower_case=True`); any other path, or an empty one, passes silently, as in the
    original.
    """
    if not init_checkpoint:
        return
    match = re.match("^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    if model_name in _LOWER_CASED_MODELS and not do_lower_case:
        actual, kind, wanted = "False", "lowercased", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        actual, kind, wanted = "True", "cased", "False"
    else:
        return
    raise ValueError(
        f"You passed in `--do_lower_case={actual}` with `--init_checkpoint={init_checkpoint}`. "
        f"However, `{model_name}` seems to be a {kind} model, so you should pass in "
        f"`--do_lower_case={wanted}` so that the fine-tuning matches how the model was "
        "pre-trained. If this error is wrong, please just comment out this check.")


def convert_to_unicode(text):
    """Returns `text` as `str`; bytes are decoded as UTF-8 with undecodable bytes dropped."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)} (expected str or bytes)")


def printable_text(text):
    """Returns `text` as a `str` suitable for printing or logging (same as convert_to_unicode)."""
    return convert_to_unicode(text)


def _read_bytes(path):
    path = str(path)
    if "://" in path:
        import tensorflow as tf  # only for remote file systems (gs://, ...)

        if not tf.io.gfile.exists(path):
            raise VocabError(f"vocab file {path!r} does not exist")
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise VocabError(f"vocab file {path!r} does not exist") from None
    except IsADirectoryError:
        raise VocabError(f"vocab file {path!r} is a directory, expected a text file") from None


def load_vocab(vocab_file):
    """Reads a vocab file (one token per line; id = 0-based line number) into an OrderedDict.

    Lines are split on b"\\n" only and each token is stripped of surrounding whitespace, as the
    original does. Unlike the original, which silently keeps the last id of a repeated token,
    a duplicated entry, a line that is not UTF-8, or an empty file raise `VocabError` naming the
    file and line.

    Returns:
      collections.OrderedDict token (str) -> id (int).
    """
    data = _read_bytes(vocab_file)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise VocabError(f"vocab file {str(vocab_file)!r} is empty")
    vocab = collections.OrderedDict()
    for index, raw in enumerate(lines):
        try:
            token = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise VocabError(
                f"vocab file {str(vocab_file)!r} line {index + 1}: not valid UTF-8 ({e})") from None
        token = token.strip()
        if token in vocab:
            raise VocabError(
                f"vocab file {str(vocab_file)!r} line {index + 1}: duplicate entry {token!r} "
                f"(first seen on line {vocab[token] + 1}); each token must appear once")
        vocab[token] = index
    return vocab


def convert_by_vocab(vocab, items):
    """Maps each item through `vocab` (a dict); a missing item raises KeyError as the original."""
    return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
    """Splits `text` on whitespace (Python's `str.split()` definition)."""
    return text.split()


# Character classes, exactly as the original defines them.

def is_whitespace(char):
    if char in " \t\n\r":
        return True
    return unicodedata.category(char) == "Zs"


def is_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


# The ranges the original calls "Chinese characters" (it omits later extensions on purpose of
# compatibility: CJK Extension G and beyond, kana, hangul and Thai are NOT split per character).
CHINESE_CHAR_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_chinese_char(cp):
    for lo, hi in CHINESE_CHAR_RANGES:
        if lo <= cp <= hi:
            return True
    return False


class _CleanTable(dict):
    """`str.translate` table for steps 2 and 3 (cleaning, spaces around CJK), filled on demand.

    Both steps map each character independently, so one table does both.
    """

    def __missing__(self, cp):
        char = chr(cp)
        if cp == 0 or cp == 0xFFFD or is_control(char):
            value = None
        elif is_whitespace(char):
            value = " "
        elif is_chinese_char(cp):
            value = " " + char + " "
        else:
            value = char
        self[cp] = value
        return value


_CLEAN_TABLE = _CleanTable()


class _PunctuationTable(dict):
    """`str.translate` table surrounding punctuation characters with spaces."""

    def __missing__(self, cp):
        char = chr(cp)
        value = " " + char + " " if is_punctuation(char) else char
        self[cp] = value
        return value


_PUNCTUATION_TABLE = _PunctuationTable()


class BasicTokenizer:
    """Cleaning, CJK splitting, whitespace splitting, optional lower-casing/accent stripping,
    punctuation splitting (steps 1-6 of the module docstring)."""

    def __init__(self, do_lower_case=True, strip_accents=True):
        self.do_lower_case = do_lower_case
        # ELECTRA's tokenizer option; like there, it only applies when lower-casing.
        self.strip_accents = strip_accents

    def tokenize(self, text):
        """Returns the list of words (str) of `text` (str or bytes)."""
        output = []
        for word in self._clean_and_split(text):
            output.extend(self._split_word(word))
        return output

    def _clean_and_split(self, text):
        """Steps 1-4: the whitespace-separated words of the cleaned text."""
        return convert_to_unicode(text).translate(_CLEAN_TABLE).split()

    def _split_word(self, word):
        """Steps 5-6 on one whitespace-separated word: a list of non-empty pieces."""
        if self.do_lower_case:
            word = word.lower()
            if self.strip_accents:
                word = self._run_strip_accents(word)
        # Surrounding punctuation with spaces then splitting is the original's punctuation split
        # followed by its final whitespace split (which also drops pieces left empty when a word
        # was nothing but accents).
        return word.translate(_PUNCTUATION_TABLE).split()

    def _run_strip_accents(self, text):
        if text.isascii():
            return text
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    def _run_split_on_punc(self, text):
        return text.translate(_PUNCTUATION_TABLE).split()

    def _tokenize_chinese_chars(self, text):
        out = []
        for char in text:
            out.append(f" {char} " if is_chinese_char(ord(char)) else char)
        return "".join(out)

    def _is_chinese_char(self, cp):
        return is_chinese_char(cp)

    def _clean_text(self, text):
        out = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or is_control(char):
                continue
            out.append(" " if is_whitespace(char) else char)
        return "".join(out)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocab (step 7 of the module docstring)."""

    def __init__(self, vocab, unk_token=UNK_TOKEN,
                 max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        # No vocab entry is longer than this, so longer candidate substrings can be skipped
        # without changing the result.
        self._max_len = max((len(t) for t in vocab), default=0)

    def tokenize(self, text):
        """Returns the word pieces of each whitespace-separated word of `text`."""
        output = []
        for word in convert_to_unicode(text).split():
            output.extend(self.tokenize_word(word))
        return output

    def tokenize_word(self, word):
        """Word pieces of one word (no whitespace inside); `[unk_token]` if it cannot be covered."""
        n = len(word)
        if n > self.max_input_chars_per_word:
            return [self.unk_token]
        vocab = self.vocab
        max_len = self._max_len
        pieces = []
        start = 0
        while start < n:
            if start == 0:
                end = n if n < max_len else max_len
                while end > start and word[start:end] not in vocab:
                    end -= 1
                if end == start:
                    return [self.unk_token]
                pieces.append(word[start:end])
            else:
                end = n if n - start < max_len - 2 else start + max_len - 2
                while end > start and "##" + word[start:end] not in vocab:
                    end -= 1
                if end == start:
                    return [self.unk_token]
                pieces.append("##" + word[start:end])
            start = end
        return pieces


class FullTokenizer:
    """BasicTokenizer then WordpieceTokenizer, with the original's interface.

    `special_tokens` (class attribute): `WORDPIECE_SPECIAL_TOKENS`, the tokens the data code
    lays out ([CLS], [SEP], ...) and the word-boundary rule of the pieces ("##").

    Args:
      vocab_file: path of a vocab file (one token per line).
      do_lower_case: lower-case and strip accents (uncased models) or not (cased models).
      strip_accents: with `do_lower_case`, strip accents (BERT always does); False keeps them,
        as ELECTRA's tokenizer option `strip_accents=False`.
      cache_size: how many distinct words (and, separately, word pieces) to memoize; 0
        disables the memos. They only change speed, never output.
    """

    special_tokens = WORDPIECE_SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=True, cache_size=200_000, strip_accents=True):
        self.vocab = load_vocab(vocab_file)
        if UNK_TOKEN not in self.vocab:
            raise VocabError(
                f"vocab file {str(vocab_file)!r} has no {UNK_TOKEN} entry; WordPiece needs it for "
                "words the vocab cannot cover")
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.do_lower_case = do_lower_case
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case, strip_accents=strip_accents)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        # Two memos of ids: whole whitespace-separated words ("word," and "(word" are distinct
        # entries) and the punctuation-split pieces they are made of (which they share), so
        # WordPiece runs once per distinct piece.
        self._cache = {}
        self._piece_cache = {}
        self._cache_size = cache_size

    @classmethod
    def from_pretrained(cls, folder, do_lower_case=None, **kwargs):
        """The tokenizer of a local folder: its vocab.txt, else a Hub snapshot's
        tokenizer.json WordPiece vocab. `do_lower_case` None = as its tokenizer_config.json
        (or tokenizer.json) says, else as a released model's folder name says, else True."""
        # An import upward, at call time: the Hub bridge reads the folder's tokenizer files.
        from bert_tf.hf.tokenizer_files import tokenizer_from_pretrained

        return tokenizer_from_pretrained(cls, folder, do_lower_case, **kwargs)

    def _memo(self, cache, key, value):
        if self._cache_size:
            if len(cache) >= self._cache_size:
                cache.clear()
            cache[key] = value

    def _word_ids(self, word):
        """Steps 5-7 on one whitespace-separated word: its list of ids (memoized)."""
        ids = self._cache.get(word)
        if ids is None:
            ids = []
            piece_cache, vocab = self._piece_cache, self.vocab
            for piece in self.basic_tokenizer._split_word(word):
                piece_ids = piece_cache.get(piece)
                if piece_ids is None:
                    piece_ids = [vocab[t] for t in self.wordpiece_tokenizer.tokenize_word(piece)]
                    self._memo(piece_cache, piece, piece_ids)
                ids += piece_ids
            self._memo(self._cache, word, ids)
        return ids

    def tokenize(self, text):
        """Returns the list of WordPiece tokens (str) of `text` (str or bytes)."""
        inv_vocab = self.inv_vocab
        return [inv_vocab[i] for i in self.tokenize_to_ids(text)]

    def tokenize_to_ids(self, text):
        """`convert_tokens_to_ids(tokenize(text))`, without making the token strings."""
        output = []
        cache = self._cache
        for word in self.basic_tokenizer._clean_and_split(text):
            ids = cache.get(word)
            output += ids if ids is not None else self._word_ids(word)
        return output

    def convert_tokens_to_ids(self, tokens):
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        return convert_by_vocab(self.inv_vocab, ids)


def special_tokens_of(tokenizer):
    """The `SpecialTokens` of `tokenizer`: its `special_tokens`, else WordPiece's.

    A tokenizer without the attribute is google-research/bert's own `FullTokenizer` (the tests
    and their scripts compare our data code with the original's on it), which is WordPiece.
    """
    return getattr(tokenizer, "special_tokens", WORDPIECE_SPECIAL_TOKENS)
