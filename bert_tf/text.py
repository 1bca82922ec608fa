"""Text helpers the model families share: Unicode cleaning, the original's character classes,
the basic (pre-WordPiece) tokenizer, vocab files and the released checkpoints' case check.

These are the parts of google-research/bert's `tokenization.py` that are not WordPiece: the
fine-tuning data code (SQuAD, classifier files, serving) and every family's tokenizer use them,
and google-research/albert's `tokenization.py` carries the same functions. A family's own
tokenizer module (BERT's `bert_tf.bert.tokenization`) builds on them and, like the original
module, offers them under its own name too.

`BasicTokenizer` runs steps 1-6 of `bert_tf.bert.tokenization`'s pipeline: cleaning, spaces
around CJK ideographs, whitespace split, optional lower-casing and accent stripping,
punctuation split.

Pure Python, no TensorFlow (a vocab path with a URL scheme, `gs://...`, is read through
`tf.io.gfile`, imported only then).
"""

import collections
import re
import unicodedata

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
    punctuation splitting (steps 1-6 of `bert_tf.bert.tokenization`'s pipeline)."""

    def __init__(self, do_lower_case=True, strip_accents=True):
        self.do_lower_case = do_lower_case
        # ELECTRA's tokenizer option; like there, it only applies when lower-casing.
        self.strip_accents = strip_accents

    def tokenize(self, text):
        """Returns the list of words (str) of `text` (str or bytes)."""
        output = []
        for word in self.clean_and_split(text):
            output.extend(self.split_word(word))
        return output

    def clean_and_split(self, text):
        """Steps 1-4: the whitespace-separated words of the cleaned text."""
        return convert_to_unicode(text).translate(_CLEAN_TABLE).split()

    def split_word(self, word):
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
