"""RoBERTa's byte-level BPE in core TensorFlow ops, for SavedModels that take text: the ids (and
offsets) of `bert_tf.roberta.tokenization.RobertaTokenizer`, with no tensorflow-text and no
custom op (a SavedModel of it loads with `import tensorflow` alone).

`TokenizerModule(vocab, do_lower_case=False, add_prefix_space=False)` is a `tf.Module`:
texts tf.string [N] -> tf.RaggedTensor int64 ids [N, None]; `tokenize_words` the same with a
prefix space (words tokenized one by one); `tokenize_with_offsets` adds each piece's byte
offsets in its input. The host tokenizer's steps (see its module docstring), in the graph:

1. Classes. The text is decoded to code points (bytes that are not UTF-8 dropped, as the host
   decodes bytes) and mapped to a CLASS STRING of one ASCII byte per character: ASCII stands
   for itself, and every other character for a representative of its class in GPT-2's regex
   (`bert_tf.roberta.character_classes`, by `searchsorted` in the class ranges): a letter "A",
   a number "0", whitespace "\\v", anything else "!". The representatives are in none of the
   special tokens nor contractions, so every regular expression below sees, on the class
   string, the matches the host's sees on the text, at the same character positions; and
   RE2 never needs Unicode tables (its own are of another Unicode version).
2. Special tokens: one `regex_replace` marks `<s>`, `</s>`, `<unk>`, `<pad>` and
   `\\s*<mask>` (the mask's left strip: the whitespace it takes is marked as dropped), then
   `tf.strings.split` cuts the class string into chunks at the marks.
3. With `add_prefix_space`, a space is put before each chunk that does not start with one
   (it stands for no character of the text).
4. GPT-2's regex, whose `\\s+(?!\\S)` RE2 cannot run (no lookahead). On a whitespace run
   [p, q) that no earlier alternative takes, the lookahead gives: the whole run at the end of
   the chunk; else [p, q-1), then the run's last character starts the next token (with the
   word after it when it is a space, alone otherwise); a single character alone. The same
   matches without lookahead, RE2 being leftmost-first like the host's backtracking engine:
       ('s|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?O+|W+$)|(W*)( L+| N+| O+|W)
   (W whitespace, L letters, N numbers, O the rest; `$` is RE2's end of text), where a match
   of the last two groups is two tokens: the run minus its last character, and the rest.
   A delimiter is written after each token and the chunks are split at them.
5. Each token's characters become UTF-8 bytes (`unicode_encode` of its code points, plus
   the added space) and byte symbols (a 256-entry table); BPE runs once per distinct token of
   the batch (`tf.unique`): a `tf.while_loop` over the tokens that still have a merge, each
   step finding every neighbour pair's rank (a `StaticHashTable` of left * V + right -> rank)
   and each token's lowest, and applying that merge to every non-overlapping occurrence, left
   to right (consecutive occurrences of a pair of equal symbols: every other one), exactly as
   the host. Finished tokens leave the loop.
6. Offsets (`tokenize_with_offsets`): a piece's bytes are located among its token's
   characters, whitespace is trimmed at both ends (a piece of whitespace alone is empty at
   its end), and the characters are turned into byte offsets of the input
   (`unicode_decode_with_offsets`): the host's character spans, in bytes.

No Python runs per request and each function is traced once (fixed input signatures).
"""

import functools

import numpy as np

from bert_tf.roberta import character_classes
from bert_tf.roberta.tokenization import SPECIAL_TOKENS, bytes_to_unicode, special_token_names

# Class representatives in the class string (step 1), by class index.
LETTER, NUMBER, SPACE, OTHER = 0, 1, 2, 3
REPRESENTATIVE = {LETTER: "A", NUMBER: "0", SPACE: "\v", OTHER: "!"}
# Delimiters of the class string: non-ASCII, so never in it.
TOKEN_END = "\u241e"
DROPPED = "\u2421"
_W = "[\\t\\n\\x0b\\x0c\\r ]"
_L = "[A-Za-z]"
_N = "[0-9]"
_O = "[^\\t\\n\\x0b\\x0c\\r A-Za-z0-9]"
PRETOKENIZE = (f"('s|'t|'re|'ve|'m|'ll|'d| ?{_L}+| ?{_N}+| ?{_O}+|{_W}+$)"
               f"|({_W}*)( {_L}+| {_N}+| {_O}+|{_W})")


class RobertaGraphTokenizerError(ValueError):
    """A vocabulary the in-graph tokenizer cannot use, or an option it does not have."""


def class_tables():
    """The classes of step 1 as sorted ranges: (starts int32 [R], classes int8 [R]), every code
    point from starts[i] to starts[i + 1] - 1 of class classes[i] (gaps are OTHER)."""
    spans = sorted([(a, b, LETTER) for a, b in character_classes.LETTERS]
                   + [(a, b, NUMBER) for a, b in character_classes.NUMBERS]
                   + [(a, b, SPACE) for a, b in character_classes.WHITESPACE])
    starts, classes = [], []
    position = 0
    for a, b, kind in spans:
        if a < position:
            raise RobertaGraphTokenizerError(f"overlapping character classes at U+{a:04X}")
        if a > position:
            starts.append(position)
            classes.append(OTHER)
        starts.append(a)
        classes.append(kind)
        position = b + 1
    starts.append(position)
    classes.append(OTHER)
    # The class string keeps ASCII as itself: check that the regex's ASCII classes are those.
    for cp in range(128):
        kind = classes[int(np.searchsorted(starts, cp, side="right")) - 1]
        char = chr(cp)
        expected = (LETTER if char.isascii() and char.isalpha() else NUMBER if char.isdigit()
                    else SPACE if char in "\t\n\x0b\x0c\r " else OTHER)
        if kind != expected:
            raise RobertaGraphTokenizerError(f"character class of U+{cp:04X} is {kind}, the "
                                             f"class string assumes {expected}")
    return np.asarray(starts, np.int32), np.asarray(classes, np.int8)


def bpe_tables(vocab):
    """The BPE tables of a `ByteLevelBPEVocab`: (byte_ids int64 [256]: the id of each byte's
    symbol; keys int64 [M]: left id * V + right id of each merge; ranks int64 [M]; merged
    int64 [M]: the id of each rank's result; piece_bytes int64 [V]: bytes per vocab entry;
    V = the largest id + 1)."""
    size = max(vocab.values()) + 1
    byte_ids = np.asarray([vocab[c] for _, c in sorted(bytes_to_unicode().items())], np.int64)
    ranks = {}
    for rank, (a, b) in enumerate(vocab.merges):
        ranks[vocab[a] * size + vocab[b]] = rank  # a merge listed twice keeps its last rank
    keys = np.asarray(list(ranks), np.int64)
    values = np.asarray(list(ranks.values()), np.int64)
    merged = np.asarray([vocab[a + b] for a, b in vocab.merges], np.int64)
    # A piece's characters stand for one byte each (the special tokens are ASCII); an entry
    # with other characters (BPE never gives one) counts its UTF-8 bytes.
    alphabet = set(bytes_to_unicode().values())
    piece_bytes = np.zeros(size, np.int64)
    for token, index in vocab.items():
        piece_bytes[index] = (len(token) if all(c in alphabet for c in token)
                              else len(token.encode("utf-8")))
    return byte_ids, keys, values, merged, piece_bytes, size


def _make_module_class():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    def where1(mask):
        return tf.squeeze(tf.where(mask), 1)

    class TokenizerModule(tf.Module):
        """In-graph RoBERTa tokenizer: tf.string [N] -> tf.RaggedTensor int64 ids [N, None].

        See the module docstring. Holds its tables as constants, so a SavedModel of it (or of
        a model holding it) is self-contained and needs only `tensorflow`.
        """

        def __init__(self, vocab, do_lower_case=False, add_prefix_space=False, core_ops=True,
                     name="roberta_tokenizer"):
            super().__init__(name=name)
            if do_lower_case:
                raise RobertaGraphTokenizerError(
                    "do_lower_case=True: RoBERTa's byte-level BPE is cased (Transformers' "
                    "RobertaTokenizer never lower-cases); pass do_lower_case=False")
            if not core_ops:
                raise RobertaGraphTokenizerError(
                    "RoBERTa's in-graph tokenizer has core TensorFlow ops only (core_ops=True)")
            if not hasattr(vocab, "merges"):
                raise RobertaGraphTokenizerError(
                    "expected the host tokenizer's vocab (a ByteLevelBPEVocab, with its merges), "
                    f"got {type(vocab).__name__}")
            self.do_lower_case = False
            self.core_ops = True
            self.add_prefix_space = bool(add_prefix_space)
            starts, classes = class_tables()
            self._class_starts = tf.constant(starts)
            self._class_chars = tf.constant(
                [ord(REPRESENTATIVE[int(c)]) for c in classes], tf.int32)
            self._class_is_space = tf.constant(classes == SPACE)
            byte_ids, keys, ranks, merged, piece_bytes, size = bpe_tables(vocab)
            self.vocab_size = size
            self._byte_ids = tf.constant(byte_ids)
            self._merged = tf.constant(np.concatenate([merged, [-1]]))
            self._piece_bytes = tf.constant(piece_bytes)
            self._no_rank = len(merged)
            if len(keys):
                self._ranks = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant(ranks)),
                    default_value=self._no_rank)
            else:  # a vocabulary without merges: every byte a piece
                self._ranks = None
            self._size = tf.constant(size, tf.int64)
            specials = special_token_names()
            self._special_ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(specials)),
                    tf.constant([vocab[t] for t in specials], tf.int64)),
                default_value=-1)
            others = "|".join(t for t in specials if t != SPECIAL_TOKENS.mask)
            self._special_pattern = f"({_W}*)({SPECIAL_TOKENS.mask})|({others})"
            self._special_rewrite = f"{TOKEN_END}{DROPPED}\\1{TOKEN_END}\\2\\3{TOKEN_END}"
            self._pretokenize_rewrite = f"\\1{TOKEN_END}\\2{TOKEN_END}\\3{TOKEN_END}"

        # --- steps 1-4: tokens as character ranges ------------------------------------------

        def _tokens(self, texts, prefix_space):
            """texts [N] -> the tokens of every text, in order, as a dict:
              cps: int32 [C] code points of all texts; char_rows: int64 [N + 1] their rows;
              byte_starts: int64 [C] each character's first byte in its input;
              is_space: bool [C];
              row: int64 [T] each token's text; start, end: int64 [T] its characters
              [start, end) in `cps`; prefixed: bool [T] whether an added space comes first;
              special: int64 [T] the id of a special token, else -1.
            """
            decoded, byte_starts = tf.strings.unicode_decode_with_offsets(
                texts, "UTF-8", errors="ignore")
            cps = decoded.flat_values
            char_rows = decoded.row_splits
            kind = tf.searchsorted(self._class_starts, cps, side="right") - 1
            ascii_or_class = tf.where(cps < 128, cps, tf.gather(self._class_chars, kind))
            is_space = tf.gather(self._class_is_space, kind)
            class_text = tf.strings.unicode_encode(
                tf.RaggedTensor.from_row_splits(ascii_or_class, char_rows, validate=False),
                "UTF-8")
            # Step 2: chunks.
            marked = tf.strings.regex_replace(class_text, self._special_pattern,
                                              self._special_rewrite)
            chunks = tf.strings.split(marked, TOKEN_END)  # ragged [N, K]
            chunk = chunks.flat_values
            chunk_row = chunks.value_rowids()
            dropped = tf.equal(tf.strings.substr(chunk, 0, len(DROPPED.encode("utf-8"))),
                               DROPPED)
            length = tf.cast(tf.strings.length(chunk), tf.int64)  # ASCII: bytes = characters
            length = tf.where(dropped, length - len(DROPPED.encode("utf-8")), length)
            chunk_start = (tf.cumsum(length, exclusive=True)
                           - tf.gather(tf.cumsum(length, exclusive=True),
                                       tf.gather(chunks.row_splits, chunk_row))
                           + tf.gather(char_rows, chunk_row))  # index in cps
            special = self._special_ids.lookup(chunk)
            normal = where1(~dropped & (special < 0) & (length > 0))
            is_special = where1(special >= 0)
            # Step 3: the prefix space.
            text = tf.gather(chunk, normal)
            if prefix_space:
                prefixed = tf.not_equal(tf.strings.substr(text, 0, 1), " ")
                text = tf.where(prefixed, tf.strings.join([" ", text]), text)
            else:
                prefixed = tf.zeros_like(normal, tf.bool)
            # Step 4: GPT-2's regex.
            pieces = tf.strings.split(
                tf.strings.regex_replace(text, PRETOKENIZE, self._pretokenize_rewrite),
                TOKEN_END)  # ragged [K', None]
            piece_length = tf.cast(tf.strings.length(pieces.flat_values), tf.int64)
            piece_chunk = pieces.value_rowids()
            offset = (tf.cumsum(piece_length, exclusive=True)
                      - tf.gather(tf.cumsum(piece_length, exclusive=True),
                                  tf.gather(pieces.row_splits, piece_chunk)))
            keep = where1(piece_length > 0)
            piece_chunk = tf.gather(piece_chunk, keep)
            offset = tf.gather(offset, keep)
            piece_length = tf.gather(piece_length, keep)
            chunk_prefixed = tf.cast(tf.gather(prefixed, piece_chunk), tf.int64)
            base = tf.gather(tf.gather(chunk_start, normal), piece_chunk) - chunk_prefixed
            word_start = base + offset
            word_end = word_start + piece_length
            word_prefixed = (chunk_prefixed > 0) & tf.equal(offset, 0)
            word_start = tf.where(word_prefixed, word_start + 1, word_start)
            # Special tokens, then all tokens in text order (an added space sorts before the
            # character it precedes).
            special_start = tf.gather(chunk_start, is_special)
            start = tf.concat([word_start, special_start], 0)
            end = tf.concat([word_end, special_start + tf.gather(length, is_special)], 0)
            prefixed_all = tf.concat(
                [word_prefixed, tf.zeros_like(is_special, tf.bool)], 0)
            special_all = tf.concat([tf.fill(tf.shape(word_start), tf.constant(-1, tf.int64)),
                                     tf.gather(special, is_special)], 0)
            order = tf.argsort(2 * start - tf.cast(prefixed_all, tf.int64), stable=True)
            return {
                "cps": cps, "char_rows": char_rows, "is_space": is_space,
                "byte_starts": tf.cast(byte_starts.flat_values, tf.int64),
                "start": tf.gather(start, order), "end": tf.gather(end, order),
                "prefixed": tf.gather(prefixed_all, order),
                "special": tf.gather(special_all, order),
                "row": tf.gather(tf.concat([
                    tf.gather(tf.gather(chunk_row, normal), piece_chunk),
                    tf.gather(chunk_row, is_special)], 0), order),
            }

        # --- step 5: BPE --------------------------------------------------------------------

        def _bpe(self, symbols, lengths):
            """BPE of words given as byte-symbol ids: symbols int64 [S] (words in a row),
            lengths int64 [U] -> (pieces int64 [P], piece lengths int64 [U])."""
            num_words = tf.size(lengths, out_type=tf.int64)
            if self._ranks is None:
                return symbols, lengths
            no_rank = tf.constant(self._no_rank, tf.int64)
            size = self._size
            empty = tf.zeros([0], tf.int64)

            def finish(done, word, symbols, lengths):
                """Appends words `word` [A'] (symbols of lengths) to done (word, position,
                id)."""
                rows = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), lengths)
                starts = tf.cumsum(lengths, exclusive=True)
                position = tf.range(tf.size(symbols, out_type=tf.int64)) - tf.gather(starts, rows)
                done_word, done_position, done_id = done
                return (tf.concat([done_word, tf.gather(word, rows)], 0),
                        tf.concat([done_position, position], 0),
                        tf.concat([done_id, symbols], 0))

            def step(word, symbols, lengths, done_word, done_position, done_id):
                n = tf.size(symbols, out_type=tf.int64)
                count = tf.size(lengths, out_type=tf.int64)
                rows = tf.repeat(tf.range(count), lengths)
                ends = tf.cumsum(lengths)
                index = tf.range(n)
                # Pair (i, i + 1) exists where i is not its word's last symbol.
                has_pair = index + 1 < tf.gather(ends, rows)
                following = tf.concat([symbols[1:], [0]], 0)
                rank = tf.where(has_pair, self._ranks.lookup(symbols * size + following),
                                no_rank)
                lowest = tf.math.unsorted_segment_min(rank, rows, count)
                # Every occurrence of the word's lowest pair; consecutive ones (a pair of equal
                # symbols) are taken every other one from the first, left to right.
                hit = (rank < no_rank) & tf.equal(rank, tf.gather(lowest, rows))
                previous_hit = tf.concat([[False], hit[:-1]], 0)
                run_start = hit & ~previous_hit
                run_first = tf.gather(tf.concat([[0], where1(run_start)], 0),
                                      tf.cumsum(tf.cast(run_start, tf.int64)))
                take = hit & tf.equal((index - run_first) % 2, 0)
                merged = tf.where(take, tf.gather(self._merged, tf.minimum(rank, no_rank)),
                                  symbols)
                drop = tf.concat([[False], take[:-1]], 0)
                kept = where1(~drop)
                symbols = tf.gather(merged, kept)
                lengths = lengths - tf.math.unsorted_segment_sum(
                    tf.cast(take, tf.int64), rows, count)
                # Words without a merge this step, or merged into one symbol, are finished.
                more = (lowest < no_rank) & (lengths > 1)
                symbol_more = tf.gather(more, tf.repeat(tf.range(count), lengths))
                done = finish((done_word, done_position, done_id),
                              tf.boolean_mask(word, ~more),
                              tf.boolean_mask(symbols, ~symbol_more),
                              tf.boolean_mask(lengths, ~more))
                return (tf.boolean_mask(word, more), tf.boolean_mask(symbols, symbol_more),
                        tf.boolean_mask(lengths, more)) + done

            single = lengths <= 1
            symbol_single = tf.repeat(single, lengths)
            done = finish((empty, empty, empty), where1(single),
                          tf.boolean_mask(symbols, symbol_single),
                          tf.boolean_mask(lengths, single))
            vector = tf.TensorShape([None])
            state = (where1(~single), tf.boolean_mask(symbols, ~symbol_single),
                     tf.boolean_mask(lengths, ~single)) + done
            state = tf.while_loop(lambda word, *_: tf.size(word) > 0, step, state,
                                  shape_invariants=(vector,) * 6)
            done_word, done_position, done_id = state[3:]
            counts = tf.math.unsorted_segment_sum(tf.ones_like(done_word), done_word, num_words)
            starts = tf.cumsum(counts, exclusive=True)
            pieces = tf.scatter_nd(
                tf.expand_dims(tf.gather(starts, done_word) + done_position, 1), done_id,
                tf.shape(done_id, out_type=tf.int64))
            return pieces, counts

        def _pieces(self, tokens):
            """The BPE pieces of every token: (ids int64 [P], token of each piece int64 [P],
            pieces per token int64 [T])."""
            start, end = tokens["start"], tokens["end"]
            is_word = tokens["special"] < 0
            chars = tf.ragged.range(start, end)
            cps = tf.gather(tokens["cps"], chars.flat_values)
            words = tf.RaggedTensor.from_row_splits(cps, chars.row_splits, validate=False)
            encoded = tf.strings.unicode_encode(words, "UTF-8")
            encoded = tf.where(tokens["prefixed"], tf.strings.join([" ", encoded]), encoded)
            # Special tokens take no BPE: an empty string, mapped back to their id below.
            encoded = tf.where(is_word, encoded, "")
            unique, index = tf.unique(encoded, out_idx=tf.int64)
            length = tf.cast(tf.strings.length(unique), tf.int64)
            width = tf.maximum(tf.reduce_max(tf.concat([length, [1]], 0)), 1)
            raw = tf.io.decode_raw(unique, tf.uint8, fixed_length=tf.cast(width, tf.int32))
            raw = tf.reshape(raw, [-1, width])  # [U, width]
            mask = tf.range(width)[None, :] < length[:, None]
            symbols = tf.gather(self._byte_ids, tf.cast(tf.boolean_mask(raw, mask), tf.int64))
            pieces, counts = self._bpe(symbols, length)
            per_unique = tf.RaggedTensor.from_row_lengths(pieces, counts, validate=False)
            per_token = tf.gather(per_unique, index)
            # A special token: its id alone.
            special_row = tf.RaggedTensor.from_row_lengths(
                tokens["special"], tf.ones_like(tokens["special"]), validate=False)
            return _select_rows(is_word, per_token, special_row)

        # --- the functions ------------------------------------------------------------------

        def _ids(self, texts, prefix_space):
            tokens = self._tokens(texts, prefix_space)
            per_token = self._pieces(tokens)
            n = tf.shape(texts, out_type=tf.int64)[0]
            token_rows = tokens["row"]
            counts = tf.math.unsorted_segment_sum(per_token.row_lengths(), token_rows, n)
            return tf.RaggedTensor.from_row_lengths(per_token.flat_values, counts,
                                                    validate=False), tokens, per_token

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def __call__(self, texts):
            """texts tf.string [N] -> ids tf.RaggedTensor int64 [N, None]."""
            return self._ids(texts, self.add_prefix_space)[0]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def tokenize_words(self, words):
            """words tf.string [M] (each tokenized on its own) -> ids tf.RaggedTensor int64
            [M, None], each word with a prefix space: Transformers' `is_split_into_words`."""
            return self._ids(words, True)[0]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def tokenize_with_offsets(self, texts):
            """texts tf.string [N] -> (ids, starts, ends), tf.RaggedTensor int64 [N, None]:
            each piece's bytes [start, end) of its UTF-8 input (the host's character spans,
            in bytes; see the module docstring)."""
            ids, tokens, per_token = self._ids(texts, self.add_prefix_space)
            starts, ends = self._offsets(tokens, per_token)
            return (ids, tf.RaggedTensor.from_row_splits(starts, ids.row_splits, validate=False),
                    tf.RaggedTensor.from_row_splits(ends, ids.row_splits, validate=False))

        # --- step 6: offsets ----------------------------------------------------------------

        def _offsets(self, tokens, per_token):
            """Byte offsets [P] of every piece (see `tokenize_with_offsets`)."""
            start, end, prefixed = tokens["start"], tokens["end"], tokens["prefixed"]
            cps, is_space = tokens["cps"], tokens["is_space"]
            # The characters of each token in "slots": an added space (a virtual character at
            # start - 1, whitespace), then its characters; with each slot's bytes.
            virtual = tf.cast(prefixed, tf.int64)
            slots = tf.ragged.range(start - virtual, end)
            slot_char = slots.flat_values  # index in cps; start - 1 for the added space
            token_of_slot = slots.value_rowids()
            is_virtual = tf.equal(slot_char, tf.gather(start, token_of_slot) - 1) & tf.gather(
                prefixed, token_of_slot)
            real = tf.maximum(slot_char, 0)
            cp = tf.gather(cps, real)
            slot_bytes = tf.where(
                is_virtual, tf.constant(1, tf.int64),
                1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64)
                + tf.cast(cp >= 0x10000, tf.int64))
            slot_space = is_virtual | tf.gather(is_space, real)
            is_word = tokens["special"] < 0
            # Special tokens: their characters, bytes = characters (ASCII).
            slot_bytes = tf.where(tf.gather(is_word, token_of_slot), slot_bytes, 1)
            slot_space = slot_space & tf.gather(is_word, token_of_slot)
            slot_ends = tf.cumsum(slot_bytes)
            token_first_byte = tf.gather(tf.concat([[0], slot_ends], 0), slots.row_splits[:-1])
            # Each piece's bytes among its token's, then its first and last slot.
            piece_bytes = tf.gather(self._piece_bytes, per_token.flat_values)
            piece_token = per_token.value_rowids()
            piece_start = (tf.cumsum(piece_bytes, exclusive=True)
                           - tf.gather(tf.cumsum(piece_bytes, exclusive=True),
                                       tf.gather(per_token.row_splits, piece_token))
                           + tf.gather(token_first_byte, piece_token))
            piece_end = piece_start + piece_bytes
            first = tf.searchsorted(slot_ends, piece_start, side="right", out_type=tf.int64)
            last = tf.searchsorted(slot_ends, piece_end - 1, side="right", out_type=tf.int64)
            # Trim whitespace slots at both ends.
            solid = where1(~slot_space)
            first_solid = tf.gather(tf.concat([solid, [tf.size(slot_space, out_type=tf.int64)]],
                                              0), tf.searchsorted(solid, first, side="left",
                                                             out_type=tf.int64))
            last_solid = tf.gather(tf.concat([[-1], solid], 0),
                                   tf.searchsorted(solid, last, side="right", out_type=tf.int64))
            empty = first_solid > last
            start_char = tf.gather(slot_char, tf.minimum(first_solid, tf.maximum(last, 0)))
            end_char = tf.gather(slot_char, tf.maximum(last_solid, 0)) + 1
            untrimmed_end = tf.gather(slot_char, last) + 1
            start_char = tf.where(empty, untrimmed_end, start_char)
            end_char = tf.where(empty, untrimmed_end, end_char)
            token_start = tf.gather(start, piece_token)
            start_char = tf.maximum(start_char, token_start)
            end_char = tf.maximum(end_char, token_start)
            # Characters -> bytes of the input.
            char_rows = tokens["char_rows"]
            row = tf.gather(tokens["row"], piece_token)
            row_end = tf.gather(char_rows, row + 1)
            byte_starts = tokens["byte_starts"]
            char_bytes = (1 + tf.cast(cps >= 0x80, tf.int64) + tf.cast(cps >= 0x800, tf.int64)
                          + tf.cast(cps >= 0x10000, tf.int64))
            byte_ends = byte_starts + char_bytes

            def at(values, index):
                """values[index], 0 where index is out of range (never used there)."""
                padded = tf.concat([values, [0]], 0)
                return tf.gather(padded, tf.clip_by_value(index, 0, tf.size(values,
                                                                            out_type=tf.int64)))

            # The end of a text's last character (0 for a text without any).
            last_end = tf.where(row_end > tf.gather(char_rows, row), at(byte_ends, row_end - 1), 0)
            start_byte = tf.where(start_char < row_end, at(byte_starts, start_char), last_end)
            end_byte = tf.where(end_char > start_char, at(byte_ends, end_char - 1), start_byte)
            return start_byte, end_byte

    def _select_rows(condition, when_true, when_false):
        """Row i of `when_true` where condition[i], else of `when_false` (ragged [T, None])."""
        true_rows = where1(condition)
        false_rows = where1(~condition)
        stacked = tf.concat([tf.gather(when_true, true_rows), tf.gather(when_false, false_rows)],
                            0)
        order = tf.math.invert_permutation(tf.concat([true_rows, false_rows], 0))
        return tf.gather(stacked, order)

    return TokenizerModule


@functools.lru_cache(maxsize=1)
def _module_class():
    return _make_module_class()


def TokenizerModule(vocab, do_lower_case=False, **kwargs):  # noqa: N802 (a class factory)
    """Builds RoBERTa's in-graph tokenizer `tf.Module` (see the module docstring).

    Args:
      vocab: the host tokenizer's `vocab` (`bert_tf.roberta.tokenization.ByteLevelBPEVocab`:
        token -> id with its merges), e.g. `RobertaTokenizer(vocab_file).vocab`.
      do_lower_case: must be False (refused otherwise, as the host tokenizer).
      add_prefix_space: as the host tokenizer's (for `__call__` and `tokenize_with_offsets`;
        `tokenize_words` always adds one).
      core_ops: True (the only mode: core TensorFlow ops).
      name: the tf.Module name.
    Returns: the module.
    """
    return _module_class()(vocab, do_lower_case=do_lower_case, **kwargs)
