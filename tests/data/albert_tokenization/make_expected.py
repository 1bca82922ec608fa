"""Records what the ORIGINAL google-research/albert tokenization.py does on adversarial text.

Run once with a copy of the original repository (imported unmodified by
`tools.original.load_albert_module`):

    python3 tests/data/albert_tokenization/make_expected.py --original_repo=/tmp/orig_albert \
        --vocab_file=../shared/data/uncased_vocab.txt

The texts: BERT's adversarial corpus (../tokenization/adversarial.jsonl; its invalid UTF-8
cases are decoded with undecodable bytes dropped for the SentencePiece rows, since the original's
`preprocess_text` takes str) and ALBERT's own cases below (digit-comma pieces, control symbols
written in text, Unicode spaces, ...). Writes expected.jsonl.gz next to this file, one JSON
object per (case, do_lower_case):
  preprocessed   preprocess_text(text, lower=do_lower_case)
  spm_pieces     FullTokenizer(spm_model_file=../albert_spm/albert.model).tokenize(preprocessed)
  spm_ids        its convert_tokens_to_ids
  spm_raw_pieces tokenize(text) without preprocess_text (the original's FullTokenizer does none)
  wp_tokens      FullTokenizer(vocab_file, do_lower_case).tokenize(text) (WordPiece path)
  wp_ids         its convert_tokens_to_ids
and a last object {"load_vocab": ...}: the original load_vocab of LOAD_VOCAB_TEXT (repeats,
several fields, blank lines, no final newline).
"""

import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from tools.original import load_albert_module  # noqa: E402

SPM_MODEL = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
BERT_CASES = os.path.join(REPO, "tests", "data", "tokenization", "adversarial.jsonl")
EXPECTED = os.path.join(HERE, "expected.jsonl.gz")

ALBERT_CASES = [
    ("digits with commas", "1,000 and 10,000,000 people; 0, 1, 2,5, 3,x a1, 12,3,"),
    ("digit comma at start and end", "0,1 ,0, 9,"),
    ("digit comma with other scripts", "٣, ３, ½, ²,"),
    ("special tokens written in text", "[CLS] a [SEP] b [MASK] c <pad> <unk> [UNK]"),
    ("accents and combining marks", "Café naïve Ångström résumé Straße e\u0301 a\u0308\u0301 \u0301"),
    ("only combining marks", "\u0301\u0308"),
    ("compatibility characters", "ＦＵＬＬ ﬁ ligature ½ ① Ⅻ ㎏ ™ ℌ"),
    ("CJK and kana and hangul", "中文字符和日本語の文字、한국어 텍스트。"),
    ("control characters", "a\x00b \x01c \x7fd \x85e \u200bf \ufeffg \ufffdh"),
    ("tabs and newlines", "a\tb\nc\rd\r\ne\x0bf\x0cg"),
    ("unicode spaces", "x\u00a0y\u2002z\u3000w\u2028v\u2029u\u1680t\u202fs\u205fr"),
    ("emoji", "emoji 😀 👍🏽 👨‍👩‍👧 🇫🇷 ok"),
    ("uppercase and mixed case", "UPPER CASE With Mixed XYZ NASA U.S.A. e.g. McDonald's"),
    ("punctuation and symbols", "\"quoted\" (paren) - en–dash — em £5 €10 $3 #tag @me a/b"),
    ("empty", ""),
    ("whitespace only", " \t\n\u3000 "),
    ("very long word", "a" * 250 + " " + "xyz" * 120 + " supercalifragilisticexpialidocious"),
    ("apostrophes and contractions", "don't it's 'quoted' ’curly’ o'clock"),
    ("greek and cyrillic", "Ελληνικά κείμενα και кириллица тоже"),
    ("numbers and decimals", "3.14 1e-5 100% 2020-01-01 12:30 1,234.56"),
]

# A vocab file with what the original's load_vocab treats specially.
LOAD_VOCAB_TEXT = "[PAD]\n[UNK]\nhello 12\nworld\nhello\n\n\n  two fields\there\n##s\n[UNK]\nlast"


def read_texts():
    texts = []
    with open(BERT_CASES, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            if "bytes_hex" in case:
                texts.append((case["name"], bytes.fromhex(case["bytes_hex"])))
            else:
                texts.append((case["name"], case["text"]))
    texts.extend(ALBERT_CASES)
    return texts


def as_text(value):
    """str of a case (bytes decoded with undecodable bytes dropped, as convert_to_unicode)."""
    return value.decode("utf-8", "ignore") if isinstance(value, bytes) else value


def encode_case(value):
    if isinstance(value, bytes):
        return {"bytes_hex": value.hex()}
    return {"text": value}


def decode_case(row):
    return bytes.fromhex(row["bytes_hex"]) if "bytes_hex" in row else row["text"]


def record(orig, vocab_file):
    rows = []
    for lower in (True, False):
        spm_tok = orig.FullTokenizer(vocab_file, lower, SPM_MODEL)
        wp_tok = orig.FullTokenizer(vocab_file, lower)
        for name, value in read_texts():
            text = as_text(value)
            pre = orig.preprocess_text(text, lower=lower)
            pieces = spm_tok.tokenize(pre)
            wp = wp_tok.tokenize(value)
            row = {"name": name, "do_lower_case": lower, "preprocessed": pre,
                   "spm_pieces": pieces, "spm_ids": spm_tok.convert_tokens_to_ids(pieces),
                   "spm_raw_pieces": spm_tok.tokenize(text),
                   "wp_tokens": wp, "wp_ids": wp_tok.convert_tokens_to_ids(wp)}
            row.update(encode_case(value))
            rows.append(row)
    return rows


def record_load_vocab(orig, tmp_path):
    with open(tmp_path, "w", encoding="utf-8") as f:
        f.write(LOAD_VOCAB_TEXT)
    return list(orig.load_vocab(tmp_path).items())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--vocab_file", required=True)
    args = parser.parse_args()
    orig = load_albert_module(args.original_repo, "tokenization")
    rows = record(orig, args.vocab_file)
    import tempfile  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory() as tmp:
        vocab_items = record_load_vocab(orig, os.path.join(tmp, "vocab.txt"))
    with gzip.open(EXPECTED, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        f.write(json.dumps({"load_vocab": vocab_items}, ensure_ascii=False) + "\n")
    print(len(rows), "rows written to", EXPECTED)


if __name__ == "__main__":
    main()
