"""Records what the ORIGINAL google-research/bert tokenization.py does on adversarial.jsonl.

Run once with a copy of the original repository (it is imported with `tensorflow` resolved to
`tf.compat.v1`, its files untouched):

    python3 tests/data/tokenization/make_expected.py --original_repo=/tmp/orig_bert \
        --vocab_file=../shared/data/uncased_vocab.txt

Writes adversarial_expected.jsonl next to this file: for each case and for do_lower_case in
(True, False), the original BasicTokenizer words and FullTokenizer tokens (with the given vocab).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

from tools.original import load_original_module  # noqa: E402


def read_cases(path=os.path.join(HERE, "adversarial.jsonl")):
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            case["input"] = (bytes.fromhex(case["bytes_hex"]) if "bytes_hex" in case
                             else case["text"])
            cases.append(case)
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--vocab_file", required=True)
    args = parser.parse_args()
    orig = load_original_module(args.original_repo, "tokenization")
    out_path = os.path.join(HERE, "adversarial_expected.jsonl")
    with open(out_path + ".tmp", "w", encoding="utf-8") as f:
        for case in read_cases():
            record = {"name": case["name"]}
            for lower in (True, False):
                key = "uncased" if lower else "cased"
                basic = orig.BasicTokenizer(do_lower_case=lower)
                full = orig.FullTokenizer(args.vocab_file, do_lower_case=lower)
                record[key + "_words"] = basic.tokenize(case["input"])
                record[key + "_tokens"] = full.tokenize(case["input"])
            f.write(json.dumps(record, ensure_ascii=True) + "\n")
    os.replace(out_path + ".tmp", out_path)
    print("wrote", out_path)


if __name__ == "__main__":
    main()
