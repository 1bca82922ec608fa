"""ALBERT's pretraining instances: documents -> sentence-order pairs -> n-gram masked LM.

This reproduces google-research/albert's `create_pretraining_data.py` exactly: for the same
documents, vocab, flags, `random_seed` and numpy state it makes the same instances in the same
order. Two random streams, as there:

  * `random.Random(random_seed)` (Python), in the original's order: the document shuffle; per
    document `random()` < short_seq_prob ? `randint(2, max_num_tokens)`; per chunk
    `randint(1, n - 1)` for the end of A (2+ sentences), the B choice below, one `random()`
    per token truncated; per instance the shuffle of the n-gram entries, one 80/10/10 draw
    (`random()`, `random()`, `randint` over the whole vocab) per masked token, a SECOND
    shuffle of the entries (always drawn; `--do_permutation` uses its order), with
    `--do_permutation` one more shuffle; at the end the instance shuffle.
  * numpy's legacy GLOBAL state (`np.random.choice(ngrams, p=pvals)`): one draw per n-gram
    entry visited, for its length n.

The B choice (sentence order, not BERT's next sentence): a 1-sentence chunk takes B from a
random other document (label 1); otherwise `random()` < 0.5 swaps A and B (label 1) or keeps
them (label 0). `--random_next_sentence` makes it BERT's: `random()` < 0.5 -> random document.

Masking: a "word" is a piece that starts one plus the non-starting pieces after it (with
`do_whole_word_mask`; else every piece); each word i has the entry of the n-grams
`words[i:i+1] .. words[i:i+ngram]` (shorter near the end); after the shuffle each entry draws
n with p(n) ~ 1/n (`favor_shorter_ngram`, else reversed), then shrinks n until the n-gram fits
in `num_to_predict` (skipped if none does), and is skipped when a word of it is already masked.
`token_boundary` is 1 at [CLS], [SEP] and every piece that starts a word (`is_start_piece`).

The implementation is BERT's (`bert_tf.bert.instances`): ids instead of strings, one flat
corpus array, index ranges for A and B, typed instance arrays, Python's draws inlined
(`shuffle_in_place`, `randbelow`); numpy's doubles are drawn in blocks (the same sequence
`np.random.random_sample()` gives one by one) and mapped to n through the same cumulative
distribution `choice` searches, so numpy's global state ends AHEAD of where the original
leaves it (only later users of that state could tell).
"""

import array
import bisect

import numpy as np

from bert_tf.bert.instances import InstanceMaker, InstanceStore, shuffle_in_place

# The characters google-research/albert's `_is_start_piece_sp` counts as punctuation (its "€"
# and "£" are UTF-8 bytes, which never equal a str piece, so they are not in the set).
_SP_PUNCTUATION = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_SP_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz") | _SP_PUNCTUATION


def is_start_piece_sp(piece):
    """Whether SentencePiece piece `piece` (str) starts a word, by the original's rule: it
    starts with "▁" or "<", is one punctuation character, or has a character (lower-cased)
    outside a-z and the punctuation set (digits, accents, CJK, "'", "=", ... : "foreign
    characters are always a whole piece")."""
    return (piece.startswith("\u2581") or piece.startswith("<") or piece in _SP_PUNCTUATION or
            not all(c.lower() in _SP_WORD_CHARS for c in piece))


def is_start_piece_wordpiece(piece):
    """WordPiece: every piece but a "##" continuation starts a word."""
    return not piece.startswith("##")


class AlbertInstanceStore(InstanceStore):
    """`InstanceStore` plus each instance's `token_boundary` (one byte per token, 0/1)."""

    def __init__(self, typecode="H"):
        super().__init__(typecode)
        self.token_boundary = bytearray()

    def append(self, input_ids, num_a_tokens, positions, label_ids, is_random_next,
               token_boundary=b""):
        super().append(input_ids, num_a_tokens, positions, label_ids, is_random_next)
        self.token_boundary += token_boundary

    def get(self, i):
        """(input_ids, num_a_tokens, positions, label_ids, is_random_next, token_boundary)."""
        o = self.offsets
        return super().get(i) + (self.token_boundary[o[i]:o[i + 1]],)

    def gather(self, indices, max_seq_length, max_predictions_per_seq):
        """`InstanceStore.gather` + token_boundary uint8 [B, max_seq_length], zero-padded."""
        batch = super().gather(indices, max_seq_length, max_predictions_per_seq)
        boundary = array.array("B", self.token_boundary)
        boundary, _, _ = self._padded(boundary, self.offsets, np.asarray(indices, np.int64),
                                      max_seq_length)
        return batch + (boundary,)

    def nbytes(self):
        return super().nbytes() + len(self.token_boundary)


def numpy_doubles(block=4096):
    """The doubles of numpy's legacy global state, `np.random.random_sample()` after
    `np.random.random_sample()`, drawn `block` at a time (the same sequence)."""
    while True:
        yield from np.random.random_sample(block).tolist()


def ngram_cdf(ngram, favor_shorter_ngram):
    """The cumulative distribution `np.random.choice(ngrams, p=...)` searches in the original:
    p(n) ~ 1/n for n = 1..ngram (reversed without favor_shorter_ngram), normalised twice as
    there (once when built, once at the call), then `cumsum() / cdf[-1]` as `choice` does.
    Returns a list of floats; n = 1 + bisect_right(cdf, u) for a double u."""
    pvals = 1. / np.arange(1, ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not favor_shorter_ngram:
        pvals = pvals[::-1]
    p = pvals[:ngram] / pvals[:ngram].sum(keepdims=True)
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return cdf.tolist()


class AlbertInstanceMaker(InstanceMaker):
    """Builds the original's ALBERT training instances from a `Corpus` of ids.

    Args:
      vocab: token -> id, in vocab order (the random-word draw indexes its values).
      max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq,
      do_whole_word_mask, random_next_sentence, do_permutation, ngram, favor_shorter_ngram:
        the flags of the same names.
      rng: the `random.Random(random_seed)`.
      is_start: bytearray, `is_start[id]` = 1 when the token of that id starts a word
        (`is_start_piece_sp` / `is_start_piece_wordpiece`); may be longer than the vocab
        (ids beyond it stand for pieces the model does not know, see pretraining_data).
      special_tokens: the tokenizer's `SpecialTokens` ([CLS], [SEP], [MASK]).
      numpy_doubles: iterator of numpy's doubles (`numpy_doubles()` by default).
    """

    def __init__(self, vocab, max_seq_length, short_seq_prob, masked_lm_prob,
                 max_predictions_per_seq, do_whole_word_mask, rng, is_start, special_tokens,
                 random_next_sentence=False, do_permutation=False, ngram=3,
                 favor_shorter_ngram=True, numpy_doubles_iter=None):
        super().__init__(vocab, max_seq_length, short_seq_prob, masked_lm_prob,
                         max_predictions_per_seq, do_whole_word_mask, rng,
                         special_tokens=special_tokens)
        self.is_start = is_start
        self.random_next_sentence = random_next_sentence
        self.do_permutation = do_permutation
        self.ngram = ngram
        self.cdf = ngram_cdf(ngram, favor_shorter_ngram)
        self._doubles = numpy_doubles_iter if numpy_doubles_iter is not None else numpy_doubles()

    def make_instances(self, corpus, dupe_factor, store=None, progress=None):
        if store is None:
            store = AlbertInstanceStore(corpus.tokens.typecode)
        return super().make_instances(corpus, dupe_factor, store, progress)

    # -- one document ---------------------------------------------------------------------------

    def pair(self, corpus, order, document_index, chunk_start, a_end, last, target_seq_length):
        """`InstanceMaker.pair` with the original's sentence-order choice: a 1-sentence chunk
        takes B from a random other document (label 1); else `random()` < 0.5 swaps A and B
        (label 1) or keeps them (label 0). `random_next_sentence`: BERT's choice."""
        if self.random_next_sentence or last == chunk_start:
            return super().pair(corpus, order, document_index, chunk_start, a_end, last,
                                target_seq_length)
        bounds = corpus.sentence_bounds
        a0, a1, b1 = bounds[chunk_start], bounds[chunk_start + a_end], bounds[last + 1]
        if self._random() < 0.5:
            return a1, b1, a0, a1, True, last  # sentence order swapped
        return a0, a1, a1, b1, False, last

    # -- masking --------------------------------------------------------------------------------

    def mask(self, ids, len_a):
        """N-gram masks `ids` ([CLS] A [SEP] B [SEP]) in place, the original's way.

        Returns:
          (positions, label_ids, token_boundary): the predicted positions ascending, the
          original ids there, and bytes of 0/1 per token.
        """
        n = len(ids)
        sep_a = len_a + 1
        is_start = self.is_start
        boundary = bytearray(map(is_start.__getitem__, ids))
        boundary[0] = boundary[sep_a] = boundary[n - 1] = 1
        if self.masked_lm_prob == 0:
            return [], [], boundary
        cand = list(range(1, sep_a))
        cand += range(sep_a + 1, n - 1)
        if self.do_whole_word_mask:
            # A word starts at a starting piece, and at the first candidate. [SEP] is no
            # boundary: a non-starting piece right after it joins the last word of A.
            starts = [k for k, p in enumerate(cand) if boundary[p]]
            if not starts or starts[0]:
                starts.insert(0, 0)
        else:
            starts = list(range(len(cand)))
        num_words = len(starts)
        starts.append(len(cand))  # starts[w + m] - starts[w]: pieces of words w .. w + m - 1
        num_to_predict = self._num_to_predict[n]

        entries = list(range(num_words))
        shuffle_in_place(entries, self._getrandbits)
        covered = bytearray(num_words + self.ngram)
        chosen = self._choose(entries, starts, num_words, num_to_predict, covered, 0)
        chosen_pieces = [p for w, m in chosen for p in cand[starts[w]:starts[w + m]]]

        labels_at = {p: ids[p] for p in chosen_pieces}
        self.replace(ids, chosen_pieces)

        getrandbits = self._getrandbits
        shuffle_in_place(entries, getrandbits)  # the original's second shuffle, always drawn
        if self.do_permutation:
            selected = self._choose(entries, starts, num_words, num_to_predict, covered, 0)
            src = sorted(p for w, m in selected for p in cand[starts[w]:starts[w + m]])
            tgt = list(src)
            shuffle_in_place(tgt, getrandbits)
            before = {p: ids[p] for p in src}
            for s, t in zip(src, tgt):
                ids[s] = before[t]
            labels_at.update(before)
        positions = sorted(labels_at)
        return positions, [labels_at[p] for p in positions], boundary

    def _choose(self, entries, starts, num_words, num_to_predict, covered, count):
        """Visits the n-gram entries in `entries` order, the original's selection loop.

        Args:
          entries: word numbers in visiting order.
          starts: starts[w] = first candidate of word w (starts[num_words] = candidates).
          covered: bytearray per word; words taken are marked (and ones marked are skipped).
          count: predictions made so far (0: each selection loop counts its own).

        Returns:
          [(w, m)]: the n-grams taken (words w .. w + m - 1), in order.
        """
        doubles, cdf, bisect_right = self._doubles, self.cdf, bisect.bisect_right
        taken = []
        for w in entries:
            if count >= num_to_predict:
                break
            m = 1 + bisect_right(cdf, next(doubles))
            # The n-gram of m words, shrunk until it fits (slices end at the last word).
            while True:
                last = w + m if w + m < num_words else num_words
                size = starts[last] - starts[w]
                if count + size <= num_to_predict or m == 1:
                    break
                m -= 1
            if count + size > num_to_predict:
                continue
            m = last - w
            if any(covered[w:last]):
                continue
            covered[w:last] = b"\x01" * m
            taken.append((w, m))
            count += size
        return taken
