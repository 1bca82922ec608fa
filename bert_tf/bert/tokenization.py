"""BERT's WordPiece tokenizer, giving exactly the ids of google-research/bert's `tokenization.py`.

The module has the original module's public surface, so code written against it ports by
changing the import: `FullTokenizer`, `BasicTokenizer`, `WordpieceTokenizer`, `load_vocab`,
`convert_to_unicode`, `printable_text`, `convert_by_vocab`, `convert_tokens_to_ids`,
`convert_ids_to_tokens`, `whitespace_tokenize`, `validate_case_matches_checkpoint`. The
functions that are not WordPiece (cleaning, `BasicTokenizer`, vocab files, the case check) are
shared by the families and live in `bert_tf.text`; they are named here too because the
original's module offers them (that surface is the point of this module, not a compatibility
path). Ours adds `WORDPIECE_SPECIAL_TOKENS` (a `FullTokenizer`'s `special_tokens`: [CLS],
[SEP], ... and the "##" word-boundary rule, which the data code reads instead of naming them).

Pure Python, no TensorFlow (the data pipeline imports it and wants a small memory footprint).

The pipeline, as the original defines it (the original code is the authority):
  1. bytes are decoded as UTF-8, undecodable bytes dropped;
  2. U+0000, U+FFFD and characters of category Cc/Cf are removed (tab, newline and CR are kept
     as whitespace); Zs characters and tab/newline/CR become a space;
  3. every CJK ideograph the original lists (see `bert_tf.text.is_chinese_char`) is surrounded
     by spaces;
  4. the text is split on whitespace (`str.split()`, which also splits on U+2028/U+2029);
  5. with `do_lower_case`, each word is lower-cased (`str.lower`, so with the final-sigma rule),
     NFD-normalized and stripped of category Mn characters (the last two skipped with
     `strip_accents=False`, ELECTRA's tokenizer option);
  6. each word is split around punctuation (ASCII non-alphanumerics and category P*);
  7. each piece is WordPiece-tokenized: greedy longest match first, continuations prefixed
     `##`; a piece longer than 200 code points, or one the vocab cannot cover, becomes `[UNK]`.
Steps 1-6 are `bert_tf.text.BasicTokenizer`.

Steps 5-7 only depend on the whitespace-separated word, so `FullTokenizer` memoizes their ids
per word, and step 7 per punctuation-split piece; that is the whole of the speed-up over the
original, the output is unchanged.
"""

from bert_tf.families import SpecialTokens
from bert_tf.text import (BasicTokenizer, VocabError, convert_by_vocab, convert_to_unicode,
                          load_vocab, printable_text, validate_case_matches_checkpoint,
                          whitespace_tokenize)

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
]

# WordPiece's special tokens (BERT's vocab files; ELECTRA's are BERT's); a piece that
# continues a word starts with "##" (step 7 above).
WORDPIECE_SPECIAL_TOKENS = SpecialTokens(
    cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="[PAD]", unk="[UNK]", continuation_prefix="##")
UNK_TOKEN = WORDPIECE_SPECIAL_TOKENS.unk
MAX_INPUT_CHARS_PER_WORD = 200


def convert_tokens_to_ids(vocab, tokens):
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    return convert_by_vocab(inv_vocab, ids)


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
      vocab: a token -> id mapping already read (another family's vocab-file rule, as
        ALBERT's `load_vocab`); None reads `vocab_file` with `load_vocab`.
    """

    special_tokens = WORDPIECE_SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=True, cache_size=200_000, strip_accents=True,
                 vocab=None):
        self.vocab = load_vocab(vocab_file) if vocab is None else vocab
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
            for piece in self.basic_tokenizer.split_word(word):
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
        for word in self.basic_tokenizer.clean_and_split(text):
            ids = cache.get(word)
            output += ids if ids is not None else self._word_ids(word)
        return output

    def convert_tokens_to_ids(self, tokens):
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        return convert_by_vocab(self.inv_vocab, ids)
