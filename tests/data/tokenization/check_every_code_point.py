"""Compares bert_tf's FullTokenizer with the ORIGINAL on every code point (a few minutes).

    python3 tests/data/tokenization/check_every_code_point.py --original_repo=/tmp/orig_bert \
        --vocab_file=../shared/data/uncased_vocab.txt

For each of the 1,114,112 code points c (lone surrogates included, as Python str allows them)
the text "x{c}y {c} A{c}<U+0301>{c}<U+03A3> {c}{c}" is tokenized by both, cased and uncased;
prints the number of texts whose tokens differ (and the first few).
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))


from bert_tf.bert import tokenization  # noqa: E402
from tools.original import load_original_module  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--vocab_file", required=True)
    args = parser.parse_args()
    orig = load_original_module(args.original_repo, "tokenization")
    texts = [f"x{c}y {c} A{c}\u0301{c}\u03a3 {c}{c}" for c in map(chr, range(0x110000))]
    failed = False
    for lower in (True, False):
        theirs = orig.FullTokenizer(args.vocab_file, do_lower_case=lower)
        ours = tokenization.FullTokenizer(args.vocab_file, do_lower_case=lower)
        start = time.time()
        bad = [t for t in texts if theirs.tokenize(t) != ours.tokenize(t)]
        print(f"do_lower_case={lower}: {len(bad)} of {len(texts)} texts differ "
              f"({time.time() - start:.0f} s) {[repr(t) for t in bad[:5]]}", flush=True)
        failed |= bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
