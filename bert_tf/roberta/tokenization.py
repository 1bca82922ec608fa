"""RoBERTa's tokenizer: GPT-2's byte-level BPE, with the ids of Transformers' `RobertaTokenizer`
(slow, Python) and `RobertaTokenizerFast` (the `tokenizers` package), without either.

`RobertaTokenizer(vocab_file, do_lower_case=False, merges_file=None, add_prefix_space=False)`
reads `vocab.json` (token -> id) and `merges.txt` (the merges in rank order; by default the
one beside vocab.json) and tokenizes:

  1. Special tokens written in the text (`<s>`, `</s>`, `<unk>`, `<pad>`, `<mask>`) are pieces
     of their own, the text between them tokenized apart; whitespace before `<mask>` is
     dropped (Transformers' `lstrip=True` on the mask token), as are the chunks it empties.
  2. With `add_prefix_space`, each chunk not starting with " " gets one (the fast tokenizer's
     rule, per chunk: see "slow and fast" below).
  3. GPT-2's pre-tokenization regex splits each chunk:
         's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
     (a space attaches to the word after it; a whitespace run before a word leaves its last
     character to that word, or alone if it is not a space). The classes are those of the
     fast tokenizer's engine, recorded in `bert_tf.roberta.character_classes` (Unicode 16:
     Python's own `unicodedata` is older, and its `str.isspace` holds for \\x1c-\\x1f, which
     `\\s` does not), turned into a stdlib `re` pattern (no `regex` module needed).
  4. Each word's UTF-8 bytes become characters of GPT-2's byte alphabet (`bytes_to_unicode`:
     printable Latin-1 bytes stand for themselves, the 68 others for U+0100..U+0143, so a
     space is "Ġ" and a newline "Ċ"), then BPE: while two neighbouring symbols form a merge,
     the lowest-ranked merge is applied to every (non-overlapping, left to right) occurrence.
     The pieces are vocab entries by construction (checked when the files are read).

Pairs are `<s> A </s></s> B </s>`, all segment 0, and truncation counts the four special
tokens (`SPECIAL_TOKENS`: the family's `SpecialTokens`, which the data code reads). Words
tokenized one by one (SQuAD's and tagging's pre-split words) take a prefix space each, as
Transformers' `is_split_into_words=True`: tokenize them with `add_prefix_space=True`.

Where Transformers' slow and fast tokenizers differ, we follow the fast one (the default of
`AutoTokenizer`, the only one in Transformers 5), measured by the goldens of
tests/data/roberta_tokenizer/:
  - `add_prefix_space`: slow adds a space before the whole text when its first character is not
    `str.isspace`; fast before every chunk between special tokens that does not start with " "
    (so "\\tx" gets one from fast only, and "<s>x" gives "<s>" "Ġx" from fast, "Ġ" "<s>" "x"
    from slow);
  - `<mask>`'s left strip: slow strips `str.isspace` characters, fast Unicode White_Space
    (not \\x1c-\\x1f);
  - \\p{L} and \\p{N}: slow's `regex` module may have a newer Unicode version than fast's
    Oniguruma (Unicode 17 letters are letters to slow only);
  - merges.txt: slow (and fast built from slow) drops the file's first line whatever it is and
    the last line, complete or not; we skip a first line starting with "#version" only, and
    read every merge (the `tokenizers` reader's rule). Real files have both.
  - pair truncation (`longest_first`): where both sequences are cut, slow lets the first keep
    the odd piece, fast the longer one (the second on a tie). bert_tf's pair rule
    (`bert_tf.data.classifier.truncate_lengths`, the original BERT's) is slow's.
BPE itself is the same in both (one rank at a time; the fast one's priority queue merges the
same occurrences).

Offsets (`tokenize_with_offsets`): each piece's (start, end) characters of the text: the
characters any of its bytes come from (a piece holding part of a character's bytes gets the
whole character, so neighbours may share one), then without whitespace (`\\s`) at either end; a
piece standing for whitespace alone, or for the space `add_prefix_space` adds, is empty where
the next word starts. Special tokens span their text (`<mask>` without the whitespace it
strips). Transformers' fast offsets differ in trimming spaces (" ") alone, and in being one
character late for the first piece after a special token when `add_prefix_space` adds a space
there (they count the added space as the chunk's first character).

Vocabulary files (Hub snapshots carry them; `read_vocab_json`, `read_merges`,
`write_vocab_json`, `write_merges` are the pure readers and writers the Hub bridge uses,
`read_tokenizer_json` reads a snapshot's tokenizer.json and `hub_tokenizer_config` is the
tokenizer_config.json to write beside ours): all are parsed as data (JSON, text), never
evaluated; a bad file is a `VocabError` of one line naming the file (and line).

Pure Python, no TensorFlow (`bert_tf.roberta.fast_tokenization` is the in-graph twin).
"""

import functools
import json
import os
import re

from bert_tf import files
from bert_tf.families import SpecialTokens
from bert_tf.roberta import character_classes
from bert_tf.text import VocabError, convert_to_unicode

__all__ = [
    "WORD_START",
    "SPECIAL_TOKENS",
    "VOCAB_FILE",
    "MERGES_FILE",
    "MERGES_HEADER",
    "WHITESPACE_CHARS",
    "ByteLevelBPEVocab",
    "RobertaTokenizer",
    "VocabError",
    "bytes_to_unicode",
    "default_merges_file",
    "pretokenize_pattern",
    "read_vocab_json",
    "read_merges",
    "write_vocab_json",
    "write_merges",
    "read_tokenizer_json",
    "special_token_names",
    "hub_tokenizer_config",
]

WORD_START = "\u0120"  # "Ġ": the space byte in GPT-2's byte alphabet
VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
TOKENIZER_JSON = "tokenizer.json"
MERGES_HEADER = "#version: 0.2"

# RoBERTa's special tokens (fairseq's dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, ..., <mask>
# last), its pair layout `<s> A </s></s> B </s>` with segment 0 throughout, and "Ġ" starting a
# piece that starts a word.
SPECIAL_TOKENS = SpecialTokens(
    cls="<s>", sep="</s>", mask="<mask>", pad="<pad>", unk="<unk>",
    word_start_prefix=WORD_START, pair_separators=2, pair_segments=False,
    pads_with_token=True)


def bytes_to_unicode():
    """GPT-2's byte alphabet: dict byte (0..255) -> a printable character standing for it.

    The bytes of printable Latin-1 characters ("!".."~", "¡".."¬", "®".."ÿ": 188 of them) stand
    for themselves; the other 68 (controls, space, DEL, NBSP, soft hyphen...) take U+0100,
    U+0101, ... in byte order, so every piece is printable and no piece holds a space.
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + extra)
            extra += 1
    return dict(sorted(table.items()))


def _class_body(ranges):
    """The inside of a stdlib `re` character class holding code point `ranges`."""
    def char(cp):
        return "\\U%08x" % cp
    return "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges)


def pretokenize_pattern():
    """GPT-2's pre-tokenization regex for the stdlib `re`, with the classes spelled out
    (`character_classes`): the same matches as `regex`/Oniguruma's
    `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`."""
    letters = _class_body(character_classes.LETTERS)
    numbers = _class_body(character_classes.NUMBERS)
    spaces = _class_body(character_classes.WHITESPACE)
    return (f"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+"
            f"| ?[^{spaces}{letters}{numbers}]+|[{spaces}]+(?![^{spaces}])|[{spaces}]+")


def _read_text(path, what):
    path = os.fspath(path)
    try:
        if files.is_remote(path):
            gfile = files.tf_gfile()
            if not gfile.exists(path):
                raise FileNotFoundError(path)
            with gfile.GFile(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except FileNotFoundError:
        raise VocabError(f"{what} {path!r} does not exist") from None
    except IsADirectoryError:
        raise VocabError(f"{what} {path!r} is a directory, expected a file") from None
    except OSError as e:
        raise VocabError(f"{what} {path!r}: cannot read ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise VocabError(f"{what} {path}:{line}: not UTF-8 text") from None


def read_vocab_json(path):
    """vocab.json: a JSON object token -> id, as a dict in id order.

    Ids must be non-negative integers, each given once; no token may appear twice. Raises
    `VocabError`, one line naming the file (and line), otherwise.
    """
    path = os.fspath(path)
    text = _read_text(path, "vocab file")

    def pairs_hook(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise VocabError(f"vocab file {path}: token {key!r} appears twice")
            seen.add(key)
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as e:
        raise VocabError(f"vocab file {path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, dict) or not data:
        raise VocabError(f"vocab file {path}: expected a non-empty JSON object "
                         "{token: id, ...} (vocab.json)")
    owner = {}
    for token, index in data.items():
        if type(index) is not int or index < 0:  # noqa: E721 (bool is no id)
            raise VocabError(f"vocab file {path}: token {token!r} has id {index!r}; ids are "
                             "non-negative integers")
        if index in owner:
            raise VocabError(f"vocab file {path}: id {index} is given to both "
                             f"{owner[index]!r} and {token!r}")
        owner[index] = token
    return dict(sorted(data.items(), key=lambda item: item[1]))


def read_merges(path):
    """merges.txt: the merges in rank order, list of (left, right) symbol pairs.

    A first line starting with "#version" is skipped; every other line, but an empty one after
    the last newline, is two symbols separated by one space. Raises `VocabError` naming the
    file and line otherwise. (Transformers' slow reader drops the first and the last line
    whatever they hold; the `tokenizers` reader is this one.)
    """
    path = os.fspath(path)
    text = _read_text(path, "merges file")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    merges = []
    for number, line in enumerate(lines, 1):
        line = line[:-1] if line.endswith("\r") else line
        if number == 1 and line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise VocabError(f"merges file {path}:{number}: expected two symbols separated by "
                             f"one space, found {line[:60]!r}")
        merges.append((parts[0], parts[1]))
    return merges


def write_vocab_json(path, vocab):
    """Writes vocab.json (token -> id, in id order; non-ASCII as itself, as Transformers
    writes it) whole or not at all (`bert_tf.files.write_atomic`)."""
    ordered = dict(sorted(vocab.items(), key=lambda item: item[1]))
    return files.write_atomic(path, json.dumps(ordered, ensure_ascii=False) + "\n")


def write_merges(path, merges):
    """Writes merges.txt: the "#version: 0.2" header, then one "left right" line per merge in
    rank order, whole or not at all."""
    lines = [MERGES_HEADER] + [f"{a} {b}" for a, b in merges]
    return files.write_atomic(path, "\n".join(lines) + "\n")


def special_token_names(special_tokens=SPECIAL_TOKENS):
    """The tokens split out of text: cls, sep, unk, pad and mask (`<s>`, `</s>`, `<unk>`,
    `<pad>`, `<mask>`)."""
    return (special_tokens.cls, special_tokens.sep, special_tokens.unk, special_tokens.pad,
            special_tokens.mask)


def read_tokenizer_json(path):
    """A Hub snapshot's tokenizer.json (Transformers' fast tokenizer file; some snapshots have
    no vocab.json and merges.txt) as (vocab, merges, settings).

    Only what this tokenizer computes is accepted, else a `VocabError` line naming the file
    and what differs: a BPE model without dropout, affixes, byte fallback or `ignore_merges`;
    no normalizer; a ByteLevel pre-tokenizer with GPT-2's regex; added tokens among `<s>`,
    `</s>`, `<unk>`, `<pad>`, `<mask>` only, the mask alone stripping whitespace on its left.

    Returns:
      (vocab: dict token -> id in id order (the model's, with the added tokens), merges: list
      of (left, right) in rank order, settings: dict with `add_prefix_space` and
      `trim_offsets`).
    """
    path = os.fspath(path)
    try:
        data = json.loads(_read_text(path, "tokenizer file"))
    except json.JSONDecodeError as e:
        raise VocabError(f"tokenizer file {path}:{e.lineno}: not valid JSON ({e.msg})") from None

    def refuse(what):
        raise VocabError(f"tokenizer file {path}: {what}; bert_tf's RoBERTa tokenizer is "
                         "GPT-2's byte-level BPE with RoBERTa's special tokens")

    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        refuse(f"model type {model.get('type') if isinstance(model, dict) else None!r}, "
               "not BPE")
    for key, allowed in (("dropout", (None,)), ("continuing_subword_prefix", (None, "")),
                         ("end_of_word_suffix", (None, "")), ("byte_fallback", (None, False)),
                         ("ignore_merges", (None, False))):
        if model.get(key) not in allowed:
            refuse(f"model.{key} is {model[key]!r}")
    if data.get("normalizer") is not None:
        refuse(f"it has a normalizer ({data['normalizer'].get('type')!r})")
    pre = data.get("pre_tokenizer")
    if not isinstance(pre, dict) or pre.get("type") != "ByteLevel" or not pre.get("use_regex",
                                                                                    True):
        refuse(f"pre_tokenizer {pre.get('type') if isinstance(pre, dict) else pre!r} is not "
               "ByteLevel with GPT-2's regex")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(type(v) is int and v >= 0  # noqa: E721
                                              for v in vocab.values()):
        refuse("model.vocab is not a {token: id} object of non-negative ids")
    vocab = dict(vocab)
    merges = []
    for rank, merge in enumerate(model.get("merges") or []):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(p, str) and p for p in pair)):
            refuse(f"model.merges[{rank}] is {merge!r}, not two symbols")
        merges.append((pair[0], pair[1]))
    specials = special_token_names()
    for added in data.get("added_tokens") or []:
        content, index = added.get("content"), added.get("id")
        if content not in specials:
            refuse(f"added token {content!r} (id {index}) is not one of {' '.join(specials)}")
        if (bool(added.get("lstrip")) != (content == SPECIAL_TOKENS.mask)
                or added.get("rstrip") or added.get("single_word")):
            refuse(f"added token {content!r} has lstrip={added.get('lstrip')}, rstrip="
                   f"{added.get('rstrip')}, single_word={added.get('single_word')} (only "
                   f"{SPECIAL_TOKENS.mask} strips, on its left)")
        if vocab.get(content, index) != index:
            refuse(f"added token {content!r} has id {index}, the model's vocab {vocab[content]}")
        vocab[content] = index
    owner = {}
    for token, index in vocab.items():
        if index in owner:
            refuse(f"id {index} is given to both {owner[index]!r} and {token!r}")
        owner[index] = token
    settings = {"add_prefix_space": bool(pre.get("add_prefix_space", False)),
                "trim_offsets": bool(pre.get("trim_offsets", True))}
    return dict(sorted(vocab.items(), key=lambda item: item[1])), merges, settings


def hub_tokenizer_config(add_prefix_space=False):
    """tokenizer_config.json of a Hub snapshot whose vocab.json and merges.txt are ours: what
    Transformers' AutoTokenizer reads to build RobertaTokenizer(Fast) with these ids (the mask
    token's left strip is the class's default)."""
    special = SPECIAL_TOKENS
    return {
        "tokenizer_class": "RobertaTokenizer",
        "add_prefix_space": bool(add_prefix_space),
        "trim_offsets": True,
        "errors": "replace",
        "bos_token": special.cls, "eos_token": special.sep, "sep_token": special.sep,
        "cls_token": special.cls, "unk_token": special.unk, "pad_token": special.pad,
        "mask_token": special.mask,
    }


class ByteLevelBPEVocab(dict):
    """{token: id} of a byte-level BPE vocabulary, carrying its `merges` (list of (left,
    right) in rank order) and the files they came from: the `vocab` the family hands its graph
    tokenizer (`bert_tf.roberta.fast_tokenization.TokenizerModule`), as ALBERT's
    `SentencePieceVocab` carries its model.

    Checks what BPE needs: each of the 256 byte symbols, each merge's symbols and its result
    are entries; the special tokens are entries. Raises `VocabError` (naming the files).
    """

    def __init__(self, vocab, merges, vocab_file="vocab.json", merges_file="merges.txt",
                 special_tokens=SPECIAL_TOKENS):
        super().__init__(vocab)
        self.merges = list(merges)
        self.vocab_file = os.fspath(vocab_file)
        self.merges_file = os.fspath(merges_file)
        missing = [b for b, c in bytes_to_unicode().items() if c not in self]
        if missing:
            raise VocabError(
                f"vocab file {self.vocab_file}: no entry for the byte symbol "
                f"{bytes_to_unicode()[missing[0]]!r} (byte {missing[0]}) and {len(missing) - 1} "
                "more; a byte-level BPE vocab has all 256")
        for rank, (a, b) in enumerate(self.merges):
            for symbol in (a, b, a + b):
                if symbol not in self:
                    raise VocabError(
                        f"merges file {self.merges_file}: merge {rank + 1} ({a} {b}) needs "
                        f"{symbol!r}, which vocab file {self.vocab_file} does not have")
        for token in special_token_names(special_tokens):
            if token not in self:
                raise VocabError(f"vocab file {self.vocab_file}: no {token} entry")

    @classmethod
    def from_files(cls, vocab_file, merges_file):
        return cls(read_vocab_json(vocab_file), read_merges(merges_file), vocab_file,
                   merges_file)


def default_merges_file(vocab_file):
    """merges.txt beside `vocab_file`."""
    path = os.fspath(vocab_file)
    if files.is_remote(path):
        return path.rsplit("/", 1)[0] + "/" + MERGES_FILE
    return os.path.join(os.path.dirname(path), MERGES_FILE)


# The characters of `\\s` (the regex's whitespace, Unicode White_Space).
WHITESPACE_CHARS = frozenset(
    chr(c) for a, b in character_classes.WHITESPACE for c in range(a, b + 1))

_WHITESPACE_STRING = "".join(sorted(WHITESPACE_CHARS))

@functools.lru_cache(maxsize=1)
def _pretokenizer():
    """The compiled pattern, once per process (its classes are a few thousand ranges)."""
    return re.compile(pretokenize_pattern())


class RobertaTokenizer:
    """The RoBERTa family's tokenizer (`bert_tf.families.Family.tokenizer`): byte-level BPE
    with Transformers' RobertaTokenizer(Fast)'s pieces and ids (see the module docstring).

    Args:
      vocab_file: vocab.json (the commands' --vocab_file).
      do_lower_case: must be False (or None): RoBERTa's BPE is cased and Transformers'
        tokenizer never lower-cases; True is refused (one line) rather than ignored.
      merges_file: merges.txt (--merges_file); None = merges.txt beside vocab_file.
      add_prefix_space: a space before each text (each chunk between special tokens) that
        does not start with one, so its first word is tokenized as any other ("Ġword").
        Words tokenized one by one want it (Transformers' `is_split_into_words=True`).
      cache_size: how many distinct words to memoize (0: none); only speed changes.
      split_special_tokens: special tokens written in the text are text like any other
        (Transformers' option of that name): "<mask>" becomes the pieces of "<", "mask", ">".
        fairseq's GPT-2 encoder, which made RoBERTa's pretraining data, reads text this way
        (bert_tf.roberta.pretraining_data uses it).

    Attributes:
      vocab: a `ByteLevelBPEVocab` (token -> id, with `merges`); inv_vocab: id -> token.
      special_tokens: `SPECIAL_TOKENS` (class attribute).

    Raises:
      VocabError: a missing or bad vocab.json / merges.txt, one line naming the file.
      ValueError: do_lower_case=True.
    """

    special_tokens = SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=False, merges_file=None,
                 add_prefix_space=False, cache_size=200_000, split_special_tokens=False,
                 **kwargs):
        del kwargs  # other families' options (spm_model_file, strip_accents...): none apply
        if do_lower_case:
            raise ValueError(
                "do_lower_case=True: RoBERTa's byte-level BPE is cased (Transformers' "
                "RobertaTokenizer never lower-cases); pass do_lower_case=False "
                "(--do_lower_case=false)")
        self.do_lower_case = False
        self.add_prefix_space = bool(add_prefix_space)
        self.split_special_tokens = bool(split_special_tokens)
        if merges_file is None:
            merges_file = default_merges_file(vocab_file)
        self.vocab = ByteLevelBPEVocab.from_files(vocab_file, merges_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.merges = self.vocab.merges
        # (left, right) -> rank; a merge listed twice keeps its last rank, as both of
        # Transformers' readers.
        self.bpe_ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in self.byte_encoder.items()}
        self._byte_chars = [self.byte_encoder[b] for b in range(256)]
        special = self.special_tokens
        self.unk_id = self.vocab[special.unk]
        self._special = special_token_names(special)
        self._special_pattern = re.compile("|".join(re.escape(t) for t in sorted(
            self._special, key=len, reverse=True)))
        self._lstrip = {special.mask}
        self._pattern = _pretokenizer()
        self._cache = {}
        self._cache_size = cache_size

    # --- the pipeline -----------------------------------------------------------------------

    def _chunks(self, text):
        """Step 1: [(chunk, start, special)] of `text`: a special token written in it
        (special True), or the text between two (whitespace before `<mask>` removed, empty
        chunks dropped); `start` is the chunk's first character in `text`."""
        if self.split_special_tokens:
            return [(text, 0, False)] if text else []
        out = []
        position = 0
        for match in self._special_pattern.finditer(text):
            before = text[position:match.start()]
            if match.group() in self._lstrip:
                before = before.rstrip(_WHITESPACE_STRING)
            if before:
                out.append((before, position, False))
            out.append((match.group(), match.start(), True))
            position = match.end()
        if position < len(text):
            out.append((text[position:], position, False))
        return out

    def _bpe(self, word):
        """Step 4 on one word in the byte alphabet: its pieces (list of str)."""
        symbols = list(word)
        ranks = self.bpe_ranks
        while len(symbols) > 1:
            best, best_rank = None, None
            for pair in zip(symbols, symbols[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = pair, rank
            if best is None:
                break
            left, right = best
            merged, out, i, n = left + right, [], 0, len(symbols)
            while i < n:
                if i + 1 < n and symbols[i] == left and symbols[i + 1] == right:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols = out
        return symbols

    def _word_pieces(self, word):
        """A pre-tokenized word (str) -> (pieces, ids), memoized."""
        value = self._cache.get(word)
        if value is None:
            byte_chars = self._byte_chars
            # A lone surrogate (a str from JSON escapes) has no UTF-8: dropped, as bytes that
            # are not UTF-8 are.
            pieces = self._bpe("".join(byte_chars[b]
                                       for b in word.encode("utf-8", "ignore")))
            value = (pieces, [self.vocab[p] for p in pieces])
            if self._cache_size:
                if len(self._cache) >= self._cache_size:
                    self._cache.clear()
                self._cache[word] = value
        return value

    def _prefixed(self, chunk):
        return " " + chunk if self.add_prefix_space and not chunk.startswith(" ") else chunk

    def tokenize_to_ids(self, text):
        """The ids of `tokenize(text)` (no special tokens added)."""
        text = convert_to_unicode(text)
        ids = []
        vocab = self.vocab
        for chunk, _, special in self._chunks(text):
            if special:
                ids.append(vocab[chunk])
                continue
            for word in self._pattern.findall(self._prefixed(chunk)):
                value = self._cache.get(word)
                ids += (value if value is not None else self._word_pieces(word))[1]
        return ids

    def tokenize(self, text):
        """The pieces (list of str, in the byte alphabet) of `text` (str or bytes; bytes are
        decoded as UTF-8, undecodable bytes dropped, and a lone surrogate of a str, which has
        no UTF-8, gives no piece). No special tokens are added."""
        text = convert_to_unicode(text)
        pieces = []
        for chunk, _, special in self._chunks(text):
            if special:
                pieces.append(chunk)
                continue
            for word in self._pattern.findall(self._prefixed(chunk)):
                pieces += self._word_pieces(word)[0]
        return pieces

    def tokenize_with_offsets(self, text):
        """`tokenize(text)` and the characters of `text` each piece stands for.

        Returns:
          (pieces, spans): the pieces (list of str) and per piece a (start, end) span of
          characters of `text`: those any of its bytes come from, without whitespace (`\\s`)
          at either end; empty (start == end, at the end of its characters) for a piece of
          whitespace alone or of the space `add_prefix_space` adds (see the module docstring).
        """
        text = convert_to_unicode(text)
        pieces, spans = [], []
        space = WHITESPACE_CHARS
        for chunk, start, special in self._chunks(text):
            if special:
                pieces.append(chunk)
                spans.append((start, start + len(chunk)))
                continue
            prefixed = self._prefixed(chunk)
            # Position i of `prefixed` is character i + shift of `text`; an added space is
            # at start - 1, clamped to start below.
            shift = start - (len(prefixed) - len(chunk))
            for match in self._pattern.finditer(prefixed):
                word = match.group()
                char_of_byte = []  # the character (in `prefixed`) of each byte of the word
                for i, c in enumerate(word, match.start()):
                    char_of_byte += [i] * len(c.encode("utf-8", "ignore"))
                byte = 0
                for piece in self._word_pieces(word)[0]:
                    a = char_of_byte[byte]
                    byte += len(piece)  # one byte-alphabet character per byte
                    b = end = char_of_byte[byte - 1] + 1
                    while a < b and prefixed[a] in space:
                        a += 1
                    while b > a and prefixed[b - 1] in space:
                        b -= 1
                    if a == b:
                        a = b = end
                    pieces.append(piece)
                    spans.append((max(a + shift, start), max(b + shift, start)))
        return pieces, spans

    # --- ids and tokens -----------------------------------------------------------------------

    def convert_tokens_to_ids(self, tokens):
        """Ids of `tokens`; a token the vocab does not have is `<unk>`'s id (as Transformers)."""
        vocab, unk = self.vocab, self.unk_id
        return [vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.inv_vocab[int(i)] for i in ids]

    def convert_tokens_to_string(self, tokens):
        """The text of pieces `tokens`: their bytes decoded as UTF-8 (undecodable sequences
        replaced by U+FFFD, as Transformers' `errors="replace"`); special tokens as written."""
        decoder = self.byte_decoder
        out, pending = [], bytearray()
        for token in tokens:
            if token in self._special:
                out.append(pending.decode("utf-8", "replace"))
                pending = bytearray()
                out.append(token)
            else:
                pending += bytes(decoder[c] for c in token)
        out.append(pending.decode("utf-8", "replace"))
        return "".join(out)

    def decode(self, ids):
        """The text of piece ids `ids` (`convert_tokens_to_string`)."""
        return self.convert_tokens_to_string(self.convert_ids_to_tokens(ids))
