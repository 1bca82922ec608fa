"""The tables behind `bert_tf.bert.fast_tokenization`'s in-graph tokenizers, built in Python from
the original's own character rules (`bert_tf.text`) and from the vocab.

  build_char_tables     per code point: what the original's steps before WordPiece turn it into
                        (cleaning, CJK spacing, lower-casing + NFD + dropping Mn, punctuation
                        spacing), whether NFD may reorder it, its final-sigma class;
  e2e_char_kinds, e2e_unsafe_table, ascii_lane_is_exact
                        how the installed tensorflow-text's end-to-end WordPiece splits words,
                        probed per code point, and where that differs from a split on spaces;
  padded_table, char_flags
                        those tables in the shapes the graph gathers from;
  can_be_emitted, fast_wordpiece_vocab, core_wordpiece_tables
                        which vocab entries the original can ever emit, and the vocab as
                        tensorflow-text's WordPiece and the core-op WordPiece look pieces up.

See `bert_tf.bert.fast_tokenization`'s docstring for why these give exactly the original's ids. The
tables depend on the Python `unicodedata` version of the process that builds them.
"""

import functools
import os
import unicodedata

import numpy as np

from bert_tf.bert.tokenization import UNK_TOKEN
from bert_tf.text import is_chinese_char, is_control, is_punctuation, is_whitespace

MAX_CODE_POINT = 0x10FFFF
# Index of an extra table row for "U+03A3 in final position" (outputs U+03C2).
FINAL_SIGMA_INDEX = MAX_CODE_POINT + 1
CAPITAL_SIGMA = 0x3A3

# Character classes for the final-sigma rule.
REMOVED, IGNORABLE, CASED, OTHER = 0, 1, 2, 3


def import_tf():
    """TensorFlow, imported on first use (its C++ start-up messages quieted)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


def import_tf_text():
    """(tensorflow, tensorflow_text), imported on first use."""
    tf = import_tf()
    import tensorflow_text as tf_text

    return tf, tf_text


def _map_char(cp, do_lower_case):
    """What the original's pre-WordPiece steps turn code point `cp` into (no context).

    Returns a str whose words, split on spaces, are exactly the original's pieces.
    """
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or is_control(char):
        return ""
    if is_whitespace(char) or char.isspace():
        return " "
    out = char
    if do_lower_case:
        out = unicodedata.normalize("NFD", out.lower())
        out = "".join(c for c in out if unicodedata.category(c) != "Mn")
    out = "".join(
        " " if c.isspace() else (f" {c} " if is_punctuation(c) else c) for c in out)
    if is_chinese_char(cp):
        out = f" {out} "
    return out


def _case_class(cp):
    """Class of `cp` for Python's final-sigma rule, read off `str.lower` itself."""
    char = chr(cp)
    # "x" + SIGMA ends in final sigma iff x is cased and not case-ignorable; "A" + x + SIGMA iff
    # x is case-ignorable or cased. Together they give the three classes the rule uses.
    cased = ("%s\u03a3" % char).lower()[-1] == "\u03c2"
    ignorable_or_cased = ("A%s\u03a3" % char).lower()[-1] == "\u03c2"
    if cased:
        return CASED
    if ignorable_or_cased:
        return IGNORABLE
    return OTHER


@functools.lru_cache(maxsize=2)
def build_char_tables(do_lower_case):
    """Per-code-point tables (numpy) for the graph.

    Returns dict with
      out_start int32 [0x110001], out_len int32 [0x110001]: code point c maps to
        out_flat[out_start[c] : out_start[c] + out_len[c]] (index 0x110000: final sigma);
      out_flat int32 [M];
      reorder int32 [0x110001]: 1 where the output holds a character NFD may reorder;
      case_class int32 [0x110001]: final-sigma classes (only with do_lower_case);
      always_spaced int32 [0x110001]: 1 for characters that are always a word on their own in
        the output (the original's punctuation and CJK ranges).
    """
    size = MAX_CODE_POINT + 2
    out_len = np.ones(size, np.int32)
    out_start = np.arange(size, dtype=np.int32)
    out_flat = np.arange(size, dtype=np.int32)
    extra = []
    reorder = np.zeros(size, np.int32)
    always_spaced = np.zeros(size, np.int32)
    cjk_unspaced = set()
    case_class = np.full(size, OTHER, np.int32)
    category = unicodedata.category
    for cp in range(MAX_CODE_POINT + 1):
        if 0xD800 <= cp <= 0xDFFF:
            out_len[cp] = 0  # never produced by UTF-8 decoding
            continue
        char = chr(cp)
        cat = category(char)
        if cat in ("Cn", "Co") and not is_chinese_char(cp):
            # Unassigned and private-use code points map to themselves and are neither cased
            # nor case-ignorable (the tests check this against str.lower).
            continue
        mapped = _map_char(cp, do_lower_case)
        if is_punctuation(char) or is_chinese_char(cp):
            always_spaced[cp] = 1
        if not is_chinese_char(cp):
            cjk_unspaced.update(ord(c) for c in mapped if is_chinese_char(ord(c))
                                and not is_punctuation(c))
        if do_lower_case:
            if cp == 0 or cp == 0xFFFD or is_control(char):
                case_class[cp] = REMOVED
            elif (is_whitespace(char) or char.isspace()
                  or is_chinese_char(cp)):
                case_class[cp] = OTHER  # a word boundary in the original
            else:
                case_class[cp] = _case_class(cp)
            if any(unicodedata.combining(c) for c in mapped):
                reorder[cp] = 1
        if mapped == char:
            continue
        codes = [ord(c) for c in mapped]
        if len(codes) == 1:
            out_flat[cp] = codes[0]
        else:
            out_len[cp] = len(codes)
            out_start[cp] = size + len(extra)
            extra.extend(codes)
    if do_lower_case:
        out_flat[FINAL_SIGMA_INDEX] = 0x3C2
        case_class[FINAL_SIGMA_INDEX] = CASED
    else:
        out_len[FINAL_SIGMA_INDEX] = 0
    # A CJK character some other character turns into is not always surrounded by spaces.
    always_spaced[sorted(cjk_unspaced)] = 0
    out_flat = np.concatenate([out_flat, np.asarray(extra, np.int32)])
    return {"out_start": out_start, "out_len": out_len, "out_flat": out_flat,
            "reorder": reorder, "case_class": case_class, "always_spaced": always_spaced}


_ORDINARY, _SPLIT_AS_PUNCTUATION, _SPLIT_AS_SPACE, _SPLIT_OTHERWISE = 0, 1, 2, 3


@functools.lru_cache(maxsize=1)
def e2e_char_kinds():
    """int32 [0x110001]: how tensorflow-text's end-to-end FastWordpieceTokenizer treats each
    code point inside a word, read off the installed tensorflow-text itself.

    "a" + c + "a" with the vocab {[UNK]: 0, a: 1, ##a: 2} gives [0] when c is an ordinary word
    character (_ORDINARY), [1, 0, 1] when c is split off as a word of its own
    (_SPLIT_AS_PUNCTUATION), [1, 1] when c separates words and is dropped (_SPLIT_AS_SPACE);
    anything else is _SPLIT_OTHERWISE.
    """
    tf, tf_text = import_tf_text()
    probe = tf_text.FastWordpieceTokenizer(
        vocab=["[UNK]", "a", "##a"], suffix_indicator="##", token_out_type=tf.int32,
        unknown_token="[UNK]", no_pretokenization=False)
    cps = np.arange(MAX_CODE_POINT + 1)
    cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]
    ids = probe.tokenize(tf.constant([("a%sa" % chr(c)).encode("utf-8") for c in cps.tolist()]))
    lengths = ids.row_lengths().numpy()
    flat = np.concatenate([ids.flat_values.numpy(), [-1, -1]])
    begin = ids.row_splits.numpy()[:-1]
    first, second, third = flat[begin], flat[begin + 1], flat[begin + 2]
    kinds = np.full(MAX_CODE_POINT + 2, _SPLIT_OTHERWISE, np.int32)
    kinds[cps[(lengths == 1) & (first == 0)]] = _ORDINARY
    kinds[cps[(lengths == 3) & (first == 1) & (second == 0) & (third == 1)]] = \
        _SPLIT_AS_PUNCTUATION
    kinds[cps[(lengths == 2) & (first == 1) & (second == 1)]] = _SPLIT_AS_SPACE
    kinds[ord("a")] = _ORDINARY  # "aaa" is [a, ##a, ##a]: not split
    return kinds


@functools.lru_cache(maxsize=2)
def e2e_unsafe_table(do_lower_case):
    """int32 [0x110001]: 1 for code points at which the end-to-end FastWordpieceTokenizer may
    split a word of the normalized text that a split on spaces would not.

    Characters the original always surrounds with spaces (punctuation, its CJK ranges) are
    exempt when the tokenizer splits them off as a word of their own: splitting around a word
    of one character changes nothing; so is the space itself.
    """
    kinds = e2e_char_kinds()
    unsafe = (kinds != _ORDINARY).astype(np.int32)
    # A character that is always a word on its own is safe if the tokenizer keeps it as a word
    # (not if it drops it like a space).
    spaced = build_char_tables(do_lower_case)["always_spaced"] == 1
    unsafe[spaced & (kinds == _SPLIT_AS_PUNCTUATION)] = 0
    unsafe[ord(" ")] = 0  # the word separator of the normalized text
    return unsafe


def ascii_lane_is_exact():
    """True if, on printable ASCII plus tab/newline/CR, the end-to-end tokenizer splits exactly
    as the original: every ASCII punctuation character of the original is split off as its own
    word, tab/newline/CR/space separate words, letters and digits are ordinary."""
    kinds = e2e_char_kinds()
    for cp in range(0x20, 0x7F):
        if is_punctuation(chr(cp)):
            expected = _SPLIT_AS_PUNCTUATION
        elif cp == 0x20:
            expected = _SPLIT_AS_SPACE
        else:
            expected = _ORDINARY
        if kinds[cp] != expected:
            return False
    return all(kinds[ord(c)] == _SPLIT_AS_SPACE for c in "\t\n\r")


def padded_table(tables):
    """int32 [0x110001, max output length]: each code point's output code points, -1 padded."""
    out_len, out_start, out_flat = tables["out_len"], tables["out_start"], tables["out_flat"]
    padded = np.full((len(out_len), int(out_len.max())), -1, np.int32)
    for k in range(padded.shape[1]):
        has = out_len > k
        padded[has, k] = out_flat[out_start[has].astype(np.int64) + k]
    return padded


def char_flags(tables, e2e_unsafe):
    """int32 [0x110001] per input code point: bit 0 (1) if an output character is in
    `e2e_unsafe`, bit 1 (2) if NFD may reorder it (`tables["reorder"]`)."""
    unsafe_out = np.concatenate([[0], np.cumsum(e2e_unsafe[tables["out_flat"]])])
    start = tables["out_start"].astype(np.int64)
    count = unsafe_out[start + tables["out_len"]] - unsafe_out[start]
    return ((count > 0).astype(np.int32) | (tables["reorder"] << 1)).astype(np.int32)


def _is_word_char(char):
    """Can `char` be inside a word of several characters, after the original's steps 1-6?"""
    return not (char.isspace() or is_whitespace(char)
                or is_control(char) or char in "\x00\ufffd"
                or is_punctuation(char) or is_chinese_char(ord(char)))


def can_be_emitted(token):
    """Whether the original's WordPiece can ever output `token`.

    Its words are either one punctuation or CJK character, or runs of other characters with no
    whitespace, control, NUL or U+FFFD; its pieces are non-empty substrings of a word, "##" in
    front of every piece but the first.
    """
    body = token[2:] if token.startswith("##") else token
    if not body:
        return False
    if len(body) == 1 and not _is_word_char(body) and body != " ":
        return body == token and not (body.isspace() or is_whitespace(body)
                                      or is_control(body) or body in "\x00\ufffd")
    return all(_is_word_char(c) for c in body)


def fast_wordpiece_vocab(vocab, unk_token=UNK_TOKEN):
    """The vocab as a list by id, entries the original can never emit made unmatchable (except
    `unk_token`, which tensorflow-text needs; text never reaches it, as its brackets are
    punctuation, only our own replacement of over-long words does).

    tensorflow-text's end-to-end tokenizer would otherwise match, for instance, an entry with a
    space inside across two words; the original never can, so neither may we.
    """
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        tokens[index] = token
    for index, token in enumerate(tokens):
        if token is None or (token != unk_token and not can_be_emitted(token)):
            # U+0001 never reaches the tokenizer (ASCII-lane texts hold only printable ASCII,
            # tab, newline and CR; the general lane removes control characters), so no text
            # can match this placeholder.
            tokens[index] = f"\x01unreachable{index}"
    return tokens


def core_wordpiece_tables(vocab):
    """What the core-op WordPiece looks pieces up in.

    Args:
      vocab: dict token -> id.
    Returns:
      (first, continuation, longest): dict piece -> id for a word's first piece (every entry,
      as the original looks a first piece up in the whole vocab), dict piece -> id for the
      later pieces (the entries "##" + piece), and the longest piece in code points that the
      original can ever emit (longer substrings cannot match an emit-able entry).
    """
    first = {token: int(index) for token, index in vocab.items()}
    continuation = {token[2:]: int(index) for token, index in vocab.items()
                    if token.startswith("##") and len(token) > 2}
    longest = max((len(token[2:] if token.startswith("##") else token)
                   for token in vocab if can_be_emitted(token)), default=1)
    return first, continuation, longest
