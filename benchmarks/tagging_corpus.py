"""A synthetic NER corpus of CoNLL-2003's shape, in document order, for benchmarks/tagging_quality.py.

Why synthetic: the real CoNLL-2003 files may not be redistributed, and the benchmark must run
anywhere. What it keeps of the real data, because each matters to how a tagger trains:

- sentence lengths in word pieces drawn from ../shared/lengths.json's CoNLL-2003 histogram
  (train sentences from the train histogram, dev from the dev one), so a few sentences are
  longer than a 64-piece window;
- documents (-DOCSTART- between them) of 4 to 40 sentences on one of 12 topics, whose sentences
  keep mentioning the same few entities with the topic's words: neighbouring sentences are
  alike, so the input order matters as in a file of news stories;
- long-tailed entity types (PER, ORG, LOC, MISC as in CoNLL, then EVENT, PRODUCT, LAW, WORK,
  each rarer), multi-word entities (I- tags), names of several word pieces (made-up words that
  WordPiece splits), popular names recurring (Zipf), a fifth of each type's names seen only in
  dev, and city names that are also club names (LOC or ORG by context);
- context cues ("mr", "in", "shares of", "said") that predict the type only most of the time.

Words are lower case (an uncased vocab). `vocab_for(corpus_words, full_vocab)` keeps only the
pieces the corpus uses (WordPiece's greedy longest match splits every corpus word the same way
with the kept list as with the full one), so a small model's embedding table stays small.
"""

import json
import os

import numpy as np

# (type, share of mentions, number of names, name length in words (min, max), type cues
# before the name, cues after, words that end (a share of) the type's names).
TYPES = (
    ("PER", 0.30, 700, (1, 3), ["mr", "mrs", "president", "coach", "minister", "striker",
                                "told"], ["said", "told", "added", "scored"], []),
    ("ORG", 0.25, 450, (1, 4), ["shares of", "club", "firm", "rivals", "beat", "against"],
     ["said", "shares", "won", "announced"], ["group", "bank", "united", "city", "party",
                                               "corp"]),
    ("LOC", 0.24, 350, (1, 2), ["in", "at", "near", "from", "to"],
     ["police", "officials", "province"], ["city", "river", "island", "county"]),
    ("MISC", 0.13, 250, (1, 2), ["the", "a", "former", "leading"],
     ["fans", "troops", "champion", "officials"], []),
    ("EVENT", 0.045, 90, (2, 4), ["the", "at the", "won the"], ["final", "match"],
     ["cup", "open", "championship", "games", "summit"]),
    ("PRODUCT", 0.02, 60, (1, 3), ["the", "its", "new"], ["sales", "model"],
     ["phone", "car", "engine", "drug"]),
    ("LAW", 0.01, 30, (2, 4), ["the", "under the"], ["requires", "passed"], ["act", "treaty",
                                                                            "accord"]),
    ("WORK", 0.005, 20, (2, 4), ["the", "film", "book"], ["was", "won"], ["story", "song"]),
)
# Syllables of made-up names, a different mix per type so that a name's shape hints at its type.
ONSETS = "b br c ch d dr f g gr h j k kl l m n p pr r s st t tr v w z".split()
VOWELS = "a e i o u ai ou ei".split()
CODAS = ["", "", "n", "r", "s", "l", "m", "nd", "rt", "x", "ck"]
TYPE_ENDINGS = {"PER": ["son", "ez", "ov", "ini", "a", "o"], "LOC": ["ville", "burg", "stan",
                "ia", "ford", "ton"], "ORG": ["tech", "corp", "co", "ex"], "MISC": ["ian", "ese",
                "ish", "ic"]}
NUM_TOPICS = 12
# Shares of the entity types in documents of each topic (rows need not sum to 1).
TOPIC_TYPE_BIAS = [np.random.RandomState(100 + k).dirichlet(np.ones(len(TYPES)) * 2.0)
                   for k in range(NUM_TOPICS)]


def conll_length_histogram(split, lengths_file):
    """{piece count without [CLS]/[SEP]: count} of CoNLL-2003's `split` ("train" or "dev")."""
    with open(lengths_file) as f:
        sets = json.load(f)["sets"]
    histogram = sets[f"conll2003_{split}_sentences"]
    return {int(length) - 2: count for length, count in histogram.items()}


def _made_up_word(rng, kind):
    syllables = [rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
                 for _ in range(rng.randint(1, 4))]
    endings = TYPE_ENDINGS.get(kind)
    if endings and rng.rand() < 0.5:
        syllables.append(rng.choice(endings))
    return "".join(syllables)


class Generator:
    """Draws documents. `filler_words`: ordinary words (lower case) for the non-entity text."""

    def __init__(self, filler_words, seed=0):
        rng = np.random.RandomState(seed)
        self.filler = list(filler_words)
        # Each topic prefers its own 150 filler words.
        self.topic_words = [rng.choice(len(self.filler), 150, replace=False)
                            for _ in range(NUM_TOPICS)]
        self.names = {}
        self.dev_only = {}
        for kind, _, count, (low, high), _, _, suffixes in TYPES:
            names = []
            for _ in range(count):
                words = [_made_up_word(rng, kind) for _ in range(rng.randint(low, high + 1))]
                if suffixes and rng.rand() < 0.6:
                    words[-1:] = [words[-1], rng.choice(suffixes)] if len(words) < high else \
                        [rng.choice(suffixes)]
                names.append(tuple(words))
            self.names[kind] = names
            # A fifth of the names (not the most popular) appear in dev only.
            held_out = rng.choice(np.arange(count // 10, count), count // 5, replace=False)
            self.dev_only[kind] = set(held_out.tolist())
        # Clubs named after cities: a third of the popular LOC names are also ORG names.
        locations = self.names["LOC"][:60]
        self.names["ORG"][: len(locations) // 3] = locations[::3]
        self.type_share = np.array([t[1] for t in TYPES])

    def _name(self, rng, kind, split):
        names = self.names[kind]
        while True:
            # Zipf popularity: name i is drawn in proportion to 1 / (i + 1).
            i = min(int(rng.zipf(1.3)) - 1, len(names) - 1)
            if split == "dev" or i not in self.dev_only[kind]:
                return i

    def document(self, rng, histogram, split):
        """A list of sentences, each a list of (word, tag)."""
        topic = rng.randint(NUM_TOPICS)
        bias = self.type_share * TOPIC_TYPE_BIAS[topic]
        bias /= bias.sum()
        # The document's cast: a few entities it keeps coming back to.
        cast = []
        for _ in range(rng.randint(3, 11)):
            t = rng.choice(len(TYPES), p=bias)
            cast.append((t, self._name(rng, TYPES[t][0], split)))
        lengths, counts = zip(*sorted(histogram.items()))
        p = np.array(counts, float) / sum(counts)
        words = self.topic_words[topic]
        return [self._sentence(rng, lengths[rng.choice(len(lengths), p=p)], cast, bias, words,
                               split) for _ in range(rng.randint(4, 41))]

    def _sentence(self, rng, target_pieces, cast, bias, topic_words, split):
        out, pieces = [], 0
        while pieces < target_pieces:
            if rng.rand() < 0.22:
                if rng.rand() < 0.75:
                    t, n = cast[rng.randint(len(cast))]
                else:
                    t = rng.choice(len(TYPES), p=bias)
                    n = self._name(rng, TYPES[t][0], split)
                kind, _, _, _, before, after, _ = TYPES[t]
                # The type's cue most of the time; sometimes another type's (cues mislead).
                cue_type = TYPES[rng.randint(len(TYPES))] if rng.rand() < 0.15 else TYPES[t]
                if rng.rand() < 0.55:
                    for w in rng.choice(cue_type[4]).split():
                        out.append((w, "O"))
                for i, w in enumerate(self.names[kind][n]):
                    out.append((w, ("B-" if i == 0 else "I-") + kind))
                if rng.rand() < 0.3:
                    out.append((rng.choice(cue_type[5]), "O"))
            else:
                pool = topic_words if rng.rand() < 0.7 else np.arange(len(self.filler))
                out.append((self.filler[int(rng.choice(pool))], "O"))
            pieces = sum(self.piece_count(w) for w, _ in out)
        return out

    piece_count = staticmethod(lambda word: 1)  # replaced by `attach_tokenizer`

    def attach_tokenizer(self, tokenizer):
        """Counts sentence lengths in `tokenizer`'s word pieces (cached per word)."""
        cache = {}

        def count(word):
            if word not in cache:
                cache[word] = max(1, len(tokenizer.tokenize(word)))
            return cache[word]

        self.piece_count = count


def filler_words(vocab_lines):
    """Ordinary English words of the uncased vocab: whole, alphabetic, 3+ letters, among the
    vocab's common part (ids 2000-7000)."""
    return [w for w in vocab_lines[2000:7000] if w.isalpha() and w.isascii() and len(w) >= 3]


def vocab_for(words, tokenizer):
    """The vocab lines the corpus needs: the special tokens, then every piece the full vocab's
    tokenizer splits `words` into, in the full vocab's order."""
    used = set()
    for w in words:
        used.update(tokenizer.tokenize(w))
    full = list(tokenizer.vocab)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return specials + [t for t in full if t in used and t not in specials]


def write_conll(path, documents):
    """CoNLL-2003 layout: "-DOCSTART- -X- -X- O", a blank line, then each sentence's
    "word POS chunk tag" lines and a blank line."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        for document in documents:
            f.write("-DOCSTART- -X- -X- O\n\n")
            for sentence in document:
                for word, tag in sentence:
                    f.write(f"{word} X X {tag}\n")
                f.write("\n")
    os.replace(tmp, path)


def make_corpus(data_dir, full_vocab_file, lengths_file, train_sentences=2000,
                dev_sentences=1000, seed=0):
    """Writes data_dir/train.txt, dev.txt, test.txt (= dev) and vocab.txt. Returns the number
    of sentences and entity mentions per split."""
    from bert_tf.bert.tokenization import FullTokenizer

    with open(full_vocab_file) as f:
        vocab_lines = [line.rstrip("\n") for line in f]
    tokenizer = FullTokenizer(full_vocab_file, do_lower_case=True)
    generator = Generator(filler_words(vocab_lines), seed=seed)
    generator.attach_tokenizer(tokenizer)
    rng = np.random.RandomState(seed + 1)
    stats, words = {}, set()
    os.makedirs(data_dir, exist_ok=True)
    for split, wanted in (("train", train_sentences), ("dev", dev_sentences)):
        histogram = conll_length_histogram(split, lengths_file)
        documents, count = [], 0
        while count < wanted:
            document = generator.document(rng, histogram, split)[: wanted - count]
            documents.append(document)
            count += len(document)
        write_conll(os.path.join(data_dir, f"{split}.txt"), documents)
        words.update(w for d in documents for s in d for w, _ in s)
        stats[split] = {"documents": len(documents), "sentences": count,
                        "entities": sum(t.startswith("B-") for d in documents for s in d
                                        for _, t in s)}
    with open(os.path.join(data_dir, "dev.txt")) as f:
        dev = f.read()
    with open(os.path.join(data_dir, "test.txt"), "w") as f:
        f.write(dev)
    with open(os.path.join(data_dir, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab_for(sorted(words), tokenizer)) + "\n")
    return stats
