"""Records what Transformers' RobertaTokenizer (slow, Python) and RobertaTokenizerFast (the
`tokenizers` package) give on a committed byte-level BPE vocabulary, for
tests/test_roberta_tokenization.py (which needs neither package).

Run once, in a virtualenv of its own (bert_tf does not depend on these):

    python -m venv /tmp/venv_hf && /tmp/venv_hf/bin/pip install "transformers<5" tokenizers
    /tmp/venv_hf/bin/python tests/data/roberta_tokenizer/make_expected.py

Transformers 4 is the last with both a slow and a fast RobertaTokenizer (5 keeps the fast one
only, under the slow one's name). The vocabulary (vocab.json, merges.txt here) is trained once
with `tokenizers`' byte-level BPE on ../shared/data/sample_text.txt and the lines of
TRAINING_LINES below (RoBERTa's layout: <s> 0, <pad> 1, </s> 2, <unk> 3, the byte symbols and
merges, <mask> last); it is kept when present (pass --retrain to train it again, which changes
every recorded id).

Writes tokenizer.json here (RobertaTokenizerFast's file of this vocabulary, the form of Hub
snapshots that carry no vocab.json and merges.txt) and expected.jsonl.gz, one JSON object per
line:
  {"kind": "versions", ...}                                the packages that recorded
  {"kind": "text", "name", "text", "add_prefix_space",
   "slow": {"tokens", "ids"}, "fast": {"tokens", "ids", "offsets"}}
      tokenizer(text, add_special_tokens=False) of each (offsets: the fast one's
      return_offsets_mapping, characters, trim_offsets=True as RoBERTa's default)
  {"kind": "pair", "name", "a", "b", "max_length" (or null),
   "slow": {"input_ids", "token_type_ids"}, "fast": {...}}
      tokenizer(a, b, truncation=True, max_length=...) (longest_first; no truncation for null)
  {"kind": "words", "name", "words", "slow": {"ids", "word_ids"(fast only)}, "fast": {...}}
      tokenizer(words, is_split_into_words=True, add_special_tokens=False); the fast one built
      with add_prefix_space=True (it refuses pre-split words otherwise)
  {"kind": "fuzz", ...}                                    as "text", for FUZZ_COUNT random
      texts drawn (seed FUZZ_SEED) from FUZZ_ALPHABET: where slow and fast differ.
"""

import argparse
import gzip
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
VOCAB = os.path.join(HERE, "vocab.json")
MERGES = os.path.join(HERE, "merges.txt")
EXPECTED = os.path.join(HERE, "expected.jsonl.gz")
TOKENIZER_JSON = os.path.join(HERE, "tokenizer.json")
VOCAB_SIZE = 1800  # 256 byte symbols + 4 special tokens + about 1,540 merges; <mask> after
FUZZ_SEED = 1234
FUZZ_COUNT = 400

# Added to sample_text.txt for training, so that the vocabulary has merges of multi-byte
# characters (accents, CJK, emoji) and of whitespace runs.
TRAINING_LINES = [
    "Café naïve résumé Straße Ångström façade coöperate élève Zürich São Paulo",
    "中文字符和日本語の文字、한국어 텍스트。東京は日本の首都です。北京是中国的首都。",
    "Ελληνικά κείμενα και кириллица тоже: Москва, Αθήνα, Київ.",
    "emoji 😀 😀 👍🏽 👍 👨‍👩‍👧 🇫🇷 🇯🇵 ❤️ 🎉 🙂",
    "Numbers 1234 56,789 3.14159 2020-01-01 12:30 100% $5 €10 £20 ¥30",
    "It's, they're, we've, I'm, you'll, he'd, don't, can't, won't — “quoted” ‘single’",
    "    indented code\n\tand tabs\n\n  two spaces  and   three",
    "العربية نص عربي مع أرقام ١٢٣ and עברית טקסט",
    "हिन्दी पाठ और বাংলা লেখা and ไทย ภาษาไทย",
] * 20

# (name, text) cases: what GPT-2's regex, the byte alphabet and the special tokens meet.
TEXT_CASES = [
    ("empty", ""),
    ("plain", "Hello world"),
    ("leading space", " Hello world"),
    ("case", "UPPER lower MiXeD Title McDonald's NASA U.S.A. e.g."),
    ("punctuation", "Hello, world! (Really?) \"quoted\" [brackets] {braces} a/b a-b a_b @me #tag"),
    ("digits", "1 12 123 1234 12345 3.14 1,000,000 2020-01-01 0x1F 1e-5 100% $5"),
    ("contractions", "it's don't we're I've I'm you'll he'd 'tis 's 't 're 've 'm 'll 'd"),
    ("contraction case", "IT'S DON'T WE'RE I'VE 'S 'T 'Re"),
    ("contractions glued", "they'red it'sa x''s !'s 's's 'll'd 'mm 'l '"),
    ("apostrophe after space", "a 's b 't c 're"),
    ("multiple spaces", "a  b   c    d"),
    ("trailing spaces", "end   "),
    ("leading spaces", "   start"),
    ("tabs and newlines", "a\tb\nc\r\nd\n\ne\t\tf"),
    ("newline before word", "line\nnext\n next\n\n  next"),
    ("space tab mix", "a \tb\t c \n d"),
    ("NUL", "a\x00b \x00 c\x00"),
    ("controls", "\x01\x02 \x1b[0m \x7f \x1c\x1d\x1e\x1f x"),
    ("unicode spaces", "x\u00a0y\u3000z\u2028w\u2029v\u1680u\u2002t\u202fs\u205fr\u0085q"),
    ("unicode spaces before words", "\u00a0word \u3000word\u00a0 \u00a0"),
    ("whitespace only", " \t\n\u3000 "),
    ("single space", " "),
    ("single newline", "\n"),
    ("spaces only", "     "),
    ("file separators", "a\x1cb \x1d c\x1e\x1f"),
    ("emoji", "emoji 😀 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ ok"),
    ("emoji glued", "a😀b 😀😀😀 👍🏽👍🏿"),
    ("CJK", "中文字符和日本語の文字、한국어 텍스트。"),
    ("CJK extension", "𠀀𠀁 𪜀 𫝀 𰀀"),
    ("combining marks", "e\u0301 a\u0308\u0301 \u0301 n\u0303o"),
    ("accents", "Café naïve résumé Straße Ångström"),
    ("greek cyrillic", "Ελληνικά кириллица ΣΊΣΥΦΟΣ"),
    ("arabic hebrew", "العربية ١٢٣ עברית"),
    ("devanagari thai", "हिन्दी ภาษาไทย"),
    ("numbers of other scripts", "٣ ３ ½ ² Ⅻ ① 𝟙"),
    ("letters of other scripts", "ǅ ʰ ª º ㄱ ｱ"),
    ("special tokens in text", "<s> a </s> b <pad> c <unk> d <mask> e"),
    ("special tokens glued", "a<s>b</s>c<mask>d<pad><unk>"),
    ("mask with spaces", "The capital is   <mask>."),
    ("mask after tab and newline", "a\t<mask> b\n<mask> c\u3000<mask> d\x1c<mask>"),
    ("mask at start", "<mask> starts"),
    ("mask only", "<mask>"),
    ("masks", "<mask><mask> <mask>  <mask>"),
    ("special token spaces", "a <s> b  </s>  c"),
    ("special token lookalikes", "<s <S> < s> <mask <MASK> </s >"),
    ("long word", "supercalifragilisticexpialidocious " + "a" * 300),
    ("long number", "1" * 100),
    ("long punctuation", "!?" * 50 + " ..."),
    ("replacement char", "a\ufffdb \ufffd"),
    ("private use and unassigned", "\ue000 \U000f0000 \u0378 \U0001fffe"),
    ("new letters", "\U000105c0\U000105c1 \U0002ebf0 \U00031350"),
    ("zero width", "a\u200bb \u200c \u200d \ufeffc"),
    ("surrogate-free astral", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝"),
    ("mixed", "Hello 世界! It's 2024 — 😀 \t<mask>\u00a0ok"),
]

PAIR_CASES = [
    ("pair", "Hello world", "How are you?", None),
    ("pair with special", "a <mask> b", "<s> c", None),
    ("pair truncated longest", "one two three four five six seven eight", "nine ten", 10),
    ("pair truncated both", "one two three four five six", "seven eight nine ten eleven", 9),
    ("pair truncated tie", "a b c d e", "f g h i j", 8),
    ("pair truncated odd", "a b c d e f", "g h i j k", 9),
    ("single truncated", "one two three four five six seven", None, 5),
    ("pair exact", "a b", "c d", 8),
]

WORD_CASES = [
    ("words", ["Hello", "world", "!"]),
    ("words with spaces", ["New York", "is", "big"]),
    ("words with leading whitespace", ["\tx", " y", "\nz", "w"]),
    ("words unicode", ["Café", "中文", "😀", "٣"]),
    ("words special", ["<mask>", "a<s>", "b"]),
    ("words empty", ["a", "", "b"]),
]

FUZZ_ALPHABET = [
    "a", "b", "Z", "é", "ß", "中", "ｱ", "Σ", "σ", "1", "٣", "½", " ", " ", "  ", "\t", "\n",
    "\r", "\x00", "\x1c", "\x85", "\u00a0", "\u2028", "\u3000", "'", "'s", "'t", "'re", "'ll",
    "!", ".", ",", "-", "😀", "👍🏽", "\u200d", "\u0301", "<s>", "</s>", "<mask>", " <mask>",
    "<pad>", "<unk>", "<", ">", "\ufffd", "\U000105c0", "\U0002ebf0",
]


def train_vocab():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    with open(os.path.join(SHARED, "data", "sample_text.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines() + TRAINING_LINES
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(lines, trainer)
    model = json.loads(tokenizer.to_str())["model"]
    vocab = dict(sorted(model["vocab"].items(), key=lambda item: item[1]))
    vocab["<mask>"] = len(vocab)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    with open(VOCAB, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(vocab, ensure_ascii=False) + "\n")
    with open(MERGES, "w", encoding="utf-8", newline="\n") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    print(f"trained {len(vocab)} entries, {len(merges)} merges", file=sys.stderr)


def fuzz_texts():
    rng = random.Random(FUZZ_SEED)
    return ["".join(rng.choice(FUZZ_ALPHABET) for _ in range(rng.randint(0, 12)))
            for _ in range(FUZZ_COUNT)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retrain", action="store_true", help="train vocab.json again")
    args = parser.parse_args()
    if args.retrain or not (os.path.exists(VOCAB) and os.path.exists(MERGES)):
        train_vocab()

    import tokenizers
    import transformers
    from transformers import RobertaTokenizer, RobertaTokenizerFast

    slow = {p: RobertaTokenizer(VOCAB, MERGES, add_prefix_space=p) for p in (False, True)}
    fast = {p: RobertaTokenizerFast(VOCAB, MERGES, add_prefix_space=p) for p in (False, True)}
    with open(TOKENIZER_JSON, "w", encoding="utf-8", newline="\n") as f:
        f.write(fast[False].backend_tokenizer.to_str() + "\n")

    def text_record(kind, name, text, prefix):
        s = slow[prefix](text, add_special_tokens=False)
        f = fast[prefix](text, add_special_tokens=False, return_offsets_mapping=True)
        return {
            "kind": kind, "name": name, "text": text, "add_prefix_space": prefix,
            "slow": {"tokens": slow[prefix].convert_ids_to_tokens(s["input_ids"]),
                     "ids": s["input_ids"]},
            "fast": {"tokens": fast[prefix].convert_ids_to_tokens(f["input_ids"]),
                     "ids": f["input_ids"], "offsets": [list(o) for o in f["offset_mapping"]]},
        }

    records = [{"kind": "versions", "transformers": transformers.__version__,
                "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]}]
    for name, text in TEXT_CASES:
        for prefix in (False, True):
            records.append(text_record("text", name, text, prefix))
    for name, a, b, max_length in PAIR_CASES:
        record = {"kind": "pair", "name": name, "a": a, "b": b, "max_length": max_length}
        for which, tok in (("slow", slow[False]), ("fast", fast[False])):
            kwargs = {"truncation": True, "max_length": max_length} if max_length else {}
            out = tok(a, b, return_token_type_ids=True, **kwargs)
            record[which] = {"input_ids": out["input_ids"],
                             "token_type_ids": out["token_type_ids"]}
        records.append(record)
    for name, words in WORD_CASES:
        record = {"kind": "words", "name": name, "words": words}
        s = slow[False](words, is_split_into_words=True, add_special_tokens=False)
        f = fast[True](words, is_split_into_words=True, add_special_tokens=False)
        record["slow"] = {"ids": s["input_ids"]}
        record["fast"] = {"ids": f["input_ids"], "word_ids": f.word_ids()}
        records.append(record)
    differ = 0
    for i, text in enumerate(fuzz_texts()):
        for prefix in (False, True):
            record = text_record("fuzz", f"fuzz {i}", text, prefix)
            differ += record["slow"]["ids"] != record["fast"]["ids"]
            records.append(record)
    print(f"fuzz: slow and fast differ on {differ} of {2 * FUZZ_COUNT}", file=sys.stderr)
    with gzip.open(EXPECTED, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(records)} records to {EXPECTED}", file=sys.stderr)


if __name__ == "__main__":
    main()
