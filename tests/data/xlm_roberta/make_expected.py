"""Records what Transformers' XLMRobertaTokenizer gives on a committed SentencePiece model, and
the tokenizer files Transformers writes for it, for tests/test_xlm_roberta_tokenization.py
(which needs neither Transformers nor torch).

Run once, from the repository root, in a virtualenv with transformers, tokenizers, sentencepiece
and protobuf (bert_tf depends on none of them but sentencepiece):

    /work/hfvenv/bin/python tests/data/xlm_roberta/make_expected.py

The model (sentencepiece.bpe.model here, XLM-R's file name) is trained once with the
sentencepiece package, as XLM-R's was: a unigram model (XLM-R's is unigram despite the name),
spm_train's defaults otherwise (nmt_nfkc normalization, <unk> 0, <s> 1, </s> 2, no byte
fallback), on ../shared/data/sample_text.txt and TRAINING_LINES; it is kept when present (pass
--retrain to train it again, which changes every recorded id).

Writes expected.json:
  versions: the packages that recorded
  texts: [{"name", "text", "slow": ids or null, "fast": ids, "fast_tokens"}]: tokenizer(text,
    add_special_tokens=False)["input_ids"] of the sentencepiece ("slow") tokenizer where this
    Transformers has one, and of XLMRobertaTokenizer (the `tokenizers` one, "fast")
  pairs: [{"a", "b", "max_length", "fast": {"input_ids", "attention_mask"}}]: tokenizer(a, b,
    truncation=True, max_length=...) (special tokens added)
  saved_files: the files XLMRobertaTokenizer.save_pretrained writes
and tokenizer.json.gz: the tokenizer.json it writes (a fine-tuned XLM-R saved by Transformers 5
carries this and no sentencepiece.bpe.model).
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
MODEL = os.path.join(HERE, "sentencepiece.bpe.model")
EXPECTED = os.path.join(HERE, "expected.json")
# What save_pretrained writes (Transformers 5 writes no sentencepiece.bpe.model), gzipped.
TOKENIZER_JSON = os.path.join(HERE, "tokenizer.json.gz")
VOCAB_SIZE = 600
FUZZ_SEED = 4321
FUZZ_COUNT = 200

TRAINING_LINES = [
    "Café naïve résumé Straße Ångström façade coöperate élève Zürich São Paulo",
    "中文字符和日本語の文字、한국어 텍스트。東京は日本の首都です。北京是中国的首都。",
    "Ελληνικά κείμενα και кириллица тоже: Москва, Αθήνα, Київ.",
    "Numbers 1234 56,789 3.14159 2020-01-01 12:30 100% $5 €10 £20 ¥30",
    "It's, they're, we've, I'm, you'll, he'd, don't, can't, won't — “quoted” ‘single’",
    "العربية نص عربي مع أرقام ١٢٣ and עברית טקסט",
    "हिन्दी पाठ और বাংলা লেখা and ไทย ภาษาไทย",
] * 20

TEXT_CASES = [
    ("empty", ""),
    ("plain", "Hello world"),
    ("leading and trailing spaces", "   Hello world   "),
    ("whitespace runs", "a  b   c\t\td\n\ne"),
    ("whitespace only", " \t\n "),
    ("unicode spaces", "a\u00a0b\u2003c\u3000d\u200be"),
    ("case", "UPPER lower MiXeD Title McDonald's NASA U.S.A."),
    ("accents", "Café naïve résumé Ångström"),
    ("decomposed accents", "Cafe\u0301 nai\u0308ve"),
    ("nfkc", "ﬁ ① ｆｕｌｌ ｗｉｄｔｈ ™ ㍻ ½"),
    ("cjk", "中文字符和日本語の文字、한국어 텍스트。"),
    ("emoji", "emoji 😀 👍🏽 👨‍👩‍👧 🇫🇷 ❤️"),
    ("unknown characters", "ᚠᛇᚻ ⠁⠃⠉ 𓀀𓀁"),
    ("digits", "1 12 123 1234 3.14 1,000,000 2020-01-01"),
    ("punctuation", "Hello, world! (Really?) \"quoted\" [brackets] a/b a-b"),
    ("specials", "<s> Hello </s> <pad> <unk> world"),
    ("mask", "The capital of France is <mask>."),
    ("mask spaces", "a   <mask>   b<mask>c"),
    ("specials glued", "x<s>y</s>z<mask>"),
    ("special-like", "<S> <mask <s > </ s> <mas k>"),
    ("control characters", "a\x00b\x01c\x7fd"),
    ("rtl", "العربية نص عربي ١٢٣ עברית"),
    ("indic", "हिन्दी पाठ और বাংলা লেখা"),
    ("long word", "Donaudampfschifffahrtsgesellschaftskapitän"),
    ("underline", "▁ ▁▁ a▁b"),
]
PAIRS = [
    ("Hello world", "How are you?", None),
    ("Café naïve", "中文字符", None),
    ("The capital of France is <mask>.", "Paris", None),
    ("a b c d e f g h i j k l m", "n o p q r s t", 12),
    ("short", "a much longer second sequence of words here", 10),
]
FUZZ_ALPHABET = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                 "      \t\n.,;:!?'\"()-_/éèàüöäßçñÅ中文字日本語한국어😀👍🏽\u00a0\u3000\u200b"
                 "ﬁ①ｆ\u0301<>smak")


def train():
    import sentencepiece as spm

    with open(os.path.join(SHARED, "data", "sample_text.txt"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines + TRAINING_LINES), model_prefix=MODEL[:-len(".model")],
        vocab_size=VOCAB_SIZE, model_type="unigram", character_coverage=0.9995,
        num_threads=1, minloglevel=2)
    os.remove(MODEL[:-len(".model")] + ".vocab")


def fuzz_texts():
    rng = random.Random(FUZZ_SEED)
    specials = ["<s>", "</s>", "<pad>", "<unk>", "<mask>"]
    out = []
    for _ in range(FUZZ_COUNT):
        parts = []
        for _ in range(rng.randint(0, 12)):
            if rng.random() < 0.08:
                parts.append(rng.choice(specials))
            else:
                parts.append("".join(rng.choice(FUZZ_ALPHABET) for _ in range(rng.randint(0, 6))))
        out.append("".join(parts))
    return out


def v4_slow_ids(sp, text):
    """Transformers 4's sentencepiece XLMRobertaTokenizer (removed in 5) on `text`, from its
    source: split at the special tokens (the mask's left whitespace stripped), each chunk
    `sp_model.encode(chunk, out_type=str)`, ids `PieceToId + 1` (<unk>'s 3 for 0)."""
    import re

    fairseq = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": sp.GetPieceSize() + 1}
    ids, position = [], 0
    for match in re.finditer("<mask>|<pad>|<unk>|</s>|<s>", text):
        before = text[position:match.start()]
        if match.group() == "<mask>":
            before = before.rstrip()
        for piece in sp.encode(before, out_type=str):
            spm_id = sp.PieceToId(piece)
            ids.append(spm_id + 1 if spm_id else 3)
        ids.append(fairseq[match.group()])
        position = match.end()
    for piece in sp.encode(text[position:], out_type=str):
        spm_id = sp.PieceToId(piece)
        ids.append(spm_id + 1 if spm_id else 3)
    return ids


def record():
    import shutil
    import tempfile

    import sentencepiece
    import tokenizers
    import transformers

    sp = sentencepiece.SentencePieceProcessor(model_file=MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        # What a Hub folder with the model alone gives (xlm-roberta-base has it beside its
        # tokenizer.json; our export writes it with tokenizer_config.json).
        shutil.copy(MODEL, os.path.join(tmp, "sentencepiece.bpe.model"))
        with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "XLMRobertaTokenizer"}, f)
        fast = transformers.AutoTokenizer.from_pretrained(tmp)
        saved = os.path.join(tmp, "saved")
        fast.save_pretrained(saved)
        saved_files = sorted(os.listdir(saved))
        with open(os.path.join(saved, "tokenizer.json"), encoding="utf-8") as f:
            tokenizer_json = json.load(f)
        with gzip.open(TOKENIZER_JSON, "wt", encoding="utf-8") as f:
            json.dump(tokenizer_json, f, ensure_ascii=False)
    out = {"versions": {"transformers": transformers.__version__,
                        "tokenizers": tokenizers.__version__,
                        "sentencepiece": sentencepiece.__version__,
                        "class": type(fast).__name__},
           "saved_files": saved_files,
           "saved_normalizer": tokenizer_json.get("normalizer", {}).get("type"),
           "saved_pre_tokenizer": tokenizer_json.get("pre_tokenizer"),
           "texts": [], "pairs": []}
    cases = TEXT_CASES + [(f"fuzz {i}", t) for i, t in enumerate(fuzz_texts())]
    for name, text in cases:
        ids = fast(text, add_special_tokens=False)["input_ids"]
        out["texts"].append({
            "name": name, "text": text, "fast": ids, "v4_slow": v4_slow_ids(sp, text),
            "fast_tokens": fast.convert_ids_to_tokens(ids)})
    for a, b, max_length in PAIRS:
        kwargs = {} if max_length is None else dict(truncation=True, max_length=max_length)
        enc = fast(a, b, **kwargs)
        out["pairs"].append({"a": a, "b": b, "max_length": max_length,
                             "fast": {"input_ids": enc["input_ids"],
                                      "attention_mask": enc["attention_mask"]}})
    with open(EXPECTED, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    differ = [t["name"] for t in out["texts"] if t["fast"] != t["v4_slow"]]
    print(f"{len(out['texts'])} texts; fast and Transformers 4's slow differ on {len(differ)}: "
          f"{differ}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--retrain", action="store_true")
    parser.add_argument("--train_only", action="store_true")
    args = parser.parse_args()
    if args.retrain or not os.path.exists(MODEL):
        train()
    if not args.train_only:
        record()


if __name__ == "__main__":
    sys.exit(main())
