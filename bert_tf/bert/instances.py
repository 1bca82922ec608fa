"""Pretraining instances: documents -> (A, B) pairs -> masked-LM predictions.

This reproduces google-research/bert's `create_pretraining_data.py` exactly (REFERENCE.md §9):
for the same documents, vocab, flags and seed it makes the same instances in the same order,
because every random choice is drawn from one `random.Random(seed)` in the original's order:

  1. shuffle the document list (once);
  2. for each of `dupe_factor` passes, for each document:
     - `random()` < short_seq_prob ? target length = `randint(2, max_num_tokens)`;
     - per chunk of sentences reaching the target: `randint(1, n - 1)` for the end of A (only
       when the chunk has 2+ sentences); `random()` < 0.5 for a random B (not drawn when the
       chunk has one sentence, which always gets a random B); for a random B, up to 10
       `randint` draws for a document other than the current one, then `randint` for the
       first sentence; one `random()` per token removed by truncation (front or back of the
       longer side);
     - masking: shuffle of the candidate list, then per masked token `random()` < 0.8 ->
       [MASK], else `random()` < 0.5 -> keep, else `randint` over the vocab -> random word;
  3. shuffle the instance list.

Unlike the original, tokens are ids, documents live in one flat integer array with sentence
boundaries, the spans A and B are index ranges into it (truncation moves the ends instead of
deleting list items), and finished instances are appended to compact typed arrays
(`InstanceStore`) instead of lists of token strings. Shuffles and `randint` draws call the
same `getrandbits` sequence as `random.Random.shuffle` / `randint` do, inlined.
"""

import array

import numpy as np

from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
from bert_tf.data.documents import DataError


class InstanceStore:
    """Instances in flat typed arrays (about 2 bytes per token instead of a Python string).

    Instance i has ids `input_ids[offsets[i]:offsets[i + 1]]` ([CLS] A [SEP] B [SEP], masked),
    `num_a_tokens[i]` segment-0 tokens, `is_random_next[i]`, and predictions
    `masked_lm_positions/ids[pred_offsets[i]:pred_offsets[i + 1]]` sorted by position.
    """

    def __init__(self, typecode="H"):
        self.input_ids = array.array(typecode)
        self.offsets = array.array("q", [0])
        self.num_a_tokens = array.array("H")
        self.is_random_next = bytearray()
        self.masked_lm_positions = array.array("H")
        self.masked_lm_ids = array.array(typecode)
        self.pred_offsets = array.array("q", [0])

    def __len__(self):
        return len(self.num_a_tokens)

    def append(self, input_ids, num_a_tokens, positions, label_ids, is_random_next):
        self.input_ids.extend(input_ids)
        self.offsets.append(len(self.input_ids))
        self.num_a_tokens.append(num_a_tokens)
        self.is_random_next.append(1 if is_random_next else 0)
        self.masked_lm_positions.extend(positions)
        self.masked_lm_ids.extend(label_ids)
        self.pred_offsets.append(len(self.masked_lm_positions))

    def get(self, i):
        """Returns (input_ids, num_a_tokens, positions, label_ids, is_random_next)."""
        o, p = self.offsets, self.pred_offsets
        return (self.input_ids[o[i]:o[i + 1]], self.num_a_tokens[i],
                self.masked_lm_positions[p[i]:p[i + 1]], self.masked_lm_ids[p[i]:p[i + 1]],
                self.is_random_next[i] == 1)

    def gather(self, indices, max_seq_length, max_predictions_per_seq):
        """Instances `indices` as zero-padded numpy arrays, for `BatchExampleEncoder.encode_batch`.

        Returns:
          (input_ids [B, max_seq_length], lengths [B], num_a_tokens [B],
           masked_lm_positions [B, max_predictions_per_seq], masked_lm_ids [B, ...],
           num_predictions [B], is_random_next [B]).
        """
        indices = np.asarray(indices, dtype=np.int64)
        ids, starts, lengths = self._padded(self.input_ids, self.offsets, indices, max_seq_length)
        positions, pred_starts, num_predictions = self._padded(
            self.masked_lm_positions, self.pred_offsets, indices, max_predictions_per_seq)
        labels, _, _ = self._padded(self.masked_lm_ids, self.pred_offsets, indices,
                                    max_predictions_per_seq)
        num_a = np.frombuffer(self.num_a_tokens, np.uint16)[indices]
        nsp = np.frombuffer(self.is_random_next, np.uint8)[indices]
        del starts, pred_starts
        return ids, lengths, num_a, positions, labels, num_predictions, nsp

    @staticmethod
    def _padded(values, offsets, indices, width):
        values = np.frombuffer(values, values.typecode)
        offsets = np.frombuffer(offsets, np.int64)
        starts = offsets[indices]
        lengths = offsets[indices + 1] - starts
        column = np.arange(width)
        inside = column < lengths[:, None]
        where = np.where(inside, starts[:, None] + column, 0)
        if len(values):
            matrix = np.where(inside, values[where], 0)
        else:
            matrix = np.zeros((len(indices), width), np.int64)
        return matrix, starts, lengths

    def nbytes(self):
        return sum(a.itemsize * len(a) for a in (self.input_ids, self.offsets, self.num_a_tokens,
                                                 self.masked_lm_positions, self.masked_lm_ids,
                                                 self.pred_offsets)) + len(self.is_random_next)


_SHUFFLE_STEPS = {}


def _shuffle_steps(n):
    """[(i, bit length of i + 1) for i = n-1 .. 1]: the draws of shuffling n items."""
    steps = _SHUFFLE_STEPS.get(n)
    if steps is None:
        steps = _SHUFFLE_STEPS[n] = [(i, (i + 1).bit_length()) for i in range(n - 1, 0, -1)]
    return steps


def shuffle_in_place(x, getrandbits):
    """`random.Random.shuffle(x)`: the same swaps from the same `getrandbits` draws, inlined
    (`_randbelow(i + 1)` draws `bit_length(i + 1)` bits until the value is <= i)."""
    for i, k in _shuffle_steps(len(x)):
        j = getrandbits(k)
        while j > i:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


def randbelow(n, getrandbits):
    """`random.Random._randbelow(n)`; `randint(a, b)` is `a + randbelow(b - a + 1)`."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


class InstanceMaker:
    """Builds the original's training instances from a `Corpus`.

    Args:
      vocab: OrderedDict token -> id, in vocab-file order (the random-word draw indexes this
        order, as the original's `list(tokenizer.vocab.keys())`).
      max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq,
      do_whole_word_mask: the flags of the same names.
      rng: the `random.Random(random_seed)` every choice is drawn from.
      special_tokens: the tokenizer's `SpecialTokens` (`families.special_tokens_of`): its
        cls, sep and mask, and the word-boundary rule of whole-word masking; WordPiece's by
        default (BERT's).
    """

    def __init__(self, vocab, max_seq_length, short_seq_prob, masked_lm_prob,
                 max_predictions_per_seq, do_whole_word_mask, rng,
                 special_tokens=WORDPIECE_SPECIAL_TOKENS):
        special = special_tokens
        for token in (special.cls, special.sep, special.mask):
            if token not in vocab:
                raise DataError(f"the vocab has no {token} entry; pretraining data needs "
                                f"{special.cls}, {special.sep} and {special.mask}")
        self.cls_id = vocab[special.cls]
        self.sep_id = vocab[special.sep]
        self.mask_id = vocab[special.mask]
        self.vocab_word_ids = list(vocab.values())
        self.max_seq_length = max_seq_length
        self.max_num_tokens = max_seq_length - 3  # [CLS] A [SEP] B [SEP]
        self.short_seq_prob = short_seq_prob
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.do_whole_word_mask = do_whole_word_mask
        size = max(vocab.values()) + 1
        # Whole-word masking glues a piece that continues a word (WordPiece: "##") to the word
        # before it.
        self.is_continuation = bytearray(size)
        for token, i in vocab.items():
            if special.is_continuation(token):
                self.is_continuation[i] = 1
        self._num_to_predict = [self.num_to_predict(n) for n in range(max_seq_length + 1)]
        self.rng = rng
        self._random = rng.random
        self._getrandbits = rng.getrandbits

    # -- corpus level ---------------------------------------------------------------------------

    def shuffle_documents(self, corpus):
        """The original's one document shuffle; returns the shuffled order of document indexes."""
        order = list(range(corpus.num_documents))
        self.rng.shuffle(order)
        return order

    def make_instances(self, corpus, dupe_factor, store=None, progress=None):
        """All instances of the corpus in the original's order, before the final shuffle.

        Args:
          corpus: a `Corpus` with at least one document.
          dupe_factor: number of passes over the documents.
          store: an `InstanceStore` to append to (a new one by default).
          progress: optional callable(documents_done, instances_made), called after each document.

        Returns:
          The `InstanceStore`.
        """
        if store is None:
            store = InstanceStore(corpus.tokens.typecode)
        order = self.shuffle_documents(corpus)
        done = 0
        for _ in range(dupe_factor):
            for document_index in range(len(order)):
                self.instances_from_document(corpus, order, document_index, store)
                done += 1
                if progress is not None:
                    progress(done, len(store))
        return store

    def final_order(self, num_instances):
        """The original's final instance shuffle, as a permutation of instance indexes."""
        order = list(range(num_instances))
        self.rng.shuffle(order)
        return order

    # -- one document ---------------------------------------------------------------------------

    def instances_from_document(self, corpus, order, document_index, store):
        """Appends the instances of document `order[document_index]` to `store`."""
        random_ = self._random
        getrandbits = self._getrandbits
        bounds = corpus.sentence_bounds
        max_num_tokens = self.max_num_tokens

        d = order[document_index]
        first, end = corpus.document_bounds[d], corpus.document_bounds[d + 1]
        target_seq_length = max_num_tokens
        if random_() < self.short_seq_prob:
            target_seq_length = 2 + randbelow(max_num_tokens - 1, getrandbits)

        chunk_start = first  # first sentence of the current chunk
        current_length = 0
        i = first
        while i < end:
            current_length += bounds[i + 1] - bounds[i]
            if i == end - 1 or current_length >= target_seq_length:
                chunk_size = i - chunk_start + 1
                a_end = 1
                if chunk_size >= 2:
                    a_end = 1 + randbelow(chunk_size - 1, getrandbits)
                a0, a1, b0, b1, is_random_next, i = self.pair(
                    corpus, order, document_index, chunk_start, a_end, i, target_seq_length)
                a0, a1, b0, b1 = self.truncate(a0, a1, b0, b1)

                tokens = corpus.tokens
                ids = [self.cls_id]
                ids += tokens[a0:a1]
                ids.append(self.sep_id)
                ids += tokens[b0:b1]
                ids.append(self.sep_id)
                len_a = a1 - a0
                # A family's `mask` may return more per-token features after the labels
                # (ALBERT's token_boundary); its store takes them after is_random_next.
                positions, labels, *features = self.mask(ids, len_a)
                store.append(ids, len_a + 2, positions, labels, is_random_next, *features)

                chunk_start = i + 1
                current_length = 0
            i += 1

    def pair(self, corpus, order, document_index, chunk_start, a_end, last, target_seq_length):
        """The (A, B) pair of the chunk of sentences `chunk_start .. last`, A being its first
        `a_end` sentences: the original's next-sentence choice (a 1-sentence chunk, or
        `random()` < 0.5: B from a random other document, label 1; else the rest, label 0).

        Returns:
          (a0, a1, b0, b1, is_random_next, last_used): the token ranges of A and B, the label,
          and the last sentence of the chunk the pair used (the unused ones start the next
          chunk).
        """
        bounds = corpus.sentence_bounds
        a0, a1 = bounds[chunk_start], bounds[chunk_start + a_end]
        if last == chunk_start or self._random() < 0.5:
            b0, b1 = self.random_b(corpus, order, document_index, target_seq_length - (a1 - a0))
            return a0, a1, b0, b1, True, chunk_start + a_end - 1
        return a0, a1, a1, bounds[last + 1], False, last

    def random_b(self, corpus, order, document_index, target_b_length):
        """B from a random other document (up to 10 tries): sentences from a random one on,
        until `target_b_length` tokens. Returns the token range (b0, b1)."""
        getrandbits = self._getrandbits
        bounds, doc_bounds = corpus.sentence_bounds, corpus.document_bounds
        for _ in range(10):
            random_index = randbelow(len(order), getrandbits)
            if random_index != document_index:
                break
        r = order[random_index]
        r_first, r_end = doc_bounds[r], doc_bounds[r + 1]
        j = r_first + randbelow(r_end - r_first, getrandbits)
        b0, b1 = bounds[j], bounds[j + 1]
        while b1 - b0 < target_b_length and j + 1 < r_end:
            j += 1
            b1 = bounds[j + 1]
        return b0, b1

    def truncate(self, a0, a1, b0, b1):
        """The original's truncate_seq_pair on token ranges: one `random()` per removed token,
        from the front or back of the longer side (B on ties), until the pair fits in
        `max_num_tokens`. Returns the new (a0, a1, b0, b1)."""
        random_ = self._random
        len_a, len_b = a1 - a0, b1 - b0
        for _ in range(len_a + len_b - self.max_num_tokens):
            if len_a > len_b:
                if random_() < 0.5:
                    a0 += 1
                else:
                    a1 -= 1
                len_a -= 1
            else:
                if random_() < 0.5:
                    b0 += 1
                else:
                    b1 -= 1
                len_b -= 1
        return a0, a1, b0, b1

    # -- masking --------------------------------------------------------------------------------

    def num_to_predict(self, num_tokens):
        return min(self.max_predictions_per_seq,
                   max(1, int(round(num_tokens * self.masked_lm_prob))))

    def mask(self, ids, len_a):
        """Masks `ids` ([CLS] A [SEP] B [SEP]) in place with the original's 80/10/10 rule.

        Returns:
          (positions, label_ids): the masked positions, ascending, and the original ids there.
        """
        n = len(ids)
        sep_a = len_a + 1
        getrandbits = self._getrandbits
        num_to_predict = self._num_to_predict[n]

        if not self.do_whole_word_mask:
            chosen = list(range(1, sep_a))
            chosen += range(sep_a + 1, n - 1)
            shuffle_in_place(chosen, getrandbits)
            del chosen[num_to_predict:]
        else:
            cand = list(range(1, sep_a))
            cand += range(sep_a + 1, n - 1)
            is_cont = self.is_continuation
            # A word starts at every piece that continues none (WordPiece: no "##"), and at the
            # first candidate. [SEP] is no boundary: a continuing piece right after it joins the
            # last word of A, as in the original.
            starts = [i for i, p in enumerate(cand) if not is_cont[ids[p]]]
            if not starts or starts[0]:
                starts.insert(0, 0)
            ends = starts[1:]
            ends.append(len(cand))
            # Shuffling the word numbers draws exactly what shuffling the words would.
            words = list(range(len(starts)))
            shuffle_in_place(words, getrandbits)
            chosen = []
            count = 0
            for w in words:
                if count >= num_to_predict:
                    break
                begin = starts[w]
                size = ends[w] - begin
                if count + size > num_to_predict:
                    continue  # a whole word that does not fit is skipped, not split
                # (The original also skips a word with an already covered piece; words are disjoint,
                # so that never happens.)
                chosen += cand[begin:begin + size]
                count += size

        positions = sorted(chosen)
        labels = [ids[p] for p in positions]
        self.replace(ids, chosen)
        return positions, labels

    def replace(self, ids, chosen):
        """The original's 80/10/10 rule on `ids` at the positions `chosen`, drawn in `chosen`
        order: `random()` < 0.8 -> [MASK]; else `random()` < 0.5 -> kept (still predicted);
        else a random word (`randint` over the vocab)."""
        random_ = self._random
        getrandbits = self._getrandbits
        mask_id = self.mask_id
        vocab_words = self.vocab_word_ids
        for pos in chosen:
            if random_() < 0.8:
                ids[pos] = mask_id
            elif random_() >= 0.5:
                ids[pos] = vocab_words[randbelow(len(vocab_words), getrandbits)]
