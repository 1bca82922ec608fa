"""Records the ORIGINAL ELECTRA build_pretraining_dataset.py on the small corpus of this folder.

    git clone <google-research/electra> /tmp/electra
    python3 tests/data/electra_data/make_expected.py --original_repo=/tmp/electra

First (re)writes the inputs next to this file: corpus/ (text files made messy on purpose: accents,
CJK, CRLF, a BOM, lines of no tokens, runs of blank lines, a 300-word line, an empty file, a
file of blank lines, a hidden file, no final newline) and vocab.txt (the entries of
../shared/data/uncased_vocab.txt that the corpus uses in any of the cases' tokenizations, so the
small vocab tokenizes the corpus exactly as the full one). Then, for each case below, runs the
original's `write_examples(job_id, args)` for every job, after `random.seed(seed + job_id)` (what
our --seed promises; the original's own forked jobs are reseeded from the OS by Python), and
writes expected.json.gz: per case, its flags and, per output file
index that received records, the records' bytes (hex).

The original is imported unmodified from --original_repo; its modules only use
`tensorflow.compat.v1` APIs that TF 2 still has.
"""

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FULL_VOCAB = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")
SAMPLE_TEXT = os.path.join(os.path.dirname(REPO), "shared", "data", "sample_text.txt")

# name, seed, flags (the original's argument names)
CASES = [
    ("default", 1, dict(max_seq_length=128, num_processes=1, blanks_separate_docs=True,
                        do_lower_case=True, strip_accents=True)),
    ("short", 7, dict(max_seq_length=24, num_processes=1, blanks_separate_docs=True,
                      do_lower_case=True, strip_accents=True)),
    ("two_jobs", 3, dict(max_seq_length=32, num_processes=2, blanks_separate_docs=True,
                         do_lower_case=True, strip_accents=True)),
    ("three_jobs_no_blanks", 4, dict(max_seq_length=40, num_processes=3, blanks_separate_docs=False,
                                     do_lower_case=True, strip_accents=True)),
    ("keep_accents", 5, dict(max_seq_length=48, num_processes=1, blanks_separate_docs=True,
                             do_lower_case=True, strip_accents=False)),
    ("cased", 6, dict(max_seq_length=64, num_processes=1, blanks_separate_docs=True,
                      do_lower_case=False, strip_accents=True)),
]


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make_corpus(corpus_dir):
    """Deterministic messy text files."""
    if os.path.isdir(corpus_dir):
        shutil.rmtree(corpus_dir)
    os.makedirs(corpus_dir)
    with open(SAMPLE_TEXT, encoding="utf-8") as f:
        sample = f.read()
    sentences = [s for s in sample.split("\n") if s.strip()]
    rng = random.Random(0)
    _write(os.path.join(corpus_dir, "a_sample.txt"), sample.encode("utf-8"))
    lines = []
    for i in range(400):
        if rng.random() < 0.12:
            lines.append("")
        else:
            s = rng.choice(sentences)
            words = s.split()
            start = rng.randrange(len(words))
            lines.append(" ".join(words[start:start + rng.randint(1, 30)]))
    _write(os.path.join(corpus_dir, "b_generated.txt"), ("\n".join(lines) + "\n").encode("utf-8"))
    messy = [
        "\ufeffA byte-order mark starts this file; Café, naïve, Ångström, résumé, Straße.",
        "Crème brûlée et pâté à la française.\r",
        "\x00\x01\x02",  # no tokens at all: kept as an empty sentence by the original
        "   \t  ",  # whitespace only: an empty line
        "中文字符和日本語の文字、한국어 텍스트。",
        "",
        "",
        "",
        "ＦＵＬＬＷＩＤＴＨ letters and ﬁ ligatures, ½ fractions, ① circled, and Ⅻ numerals.",
        " ".join(f"word{i % 17} and-some more text" for i in range(300)),
        "Tabs\tinside\tthe\tline and a lone carriage\rreturn inside it.",
        "UPPER CASE WORDS With Mixed Case And ACRONYMS like NASA, U.S.A. and e.g.",
        "Ελληνικά κείμενα και кириллица тоже, with emoji 😀 and symbols ©®™.",
        "Last line without a final newline",
    ]
    _write(os.path.join(corpus_dir, "c_messy.txt"), "\n".join(messy).encode("utf-8"))
    _write(os.path.join(corpus_dir, "d_empty.txt"), b"")
    _write(os.path.join(corpus_dir, "e_blanks.txt"), b"\n\n  \n\r\n\n")
    crlf = "\r\n".join(sentences[3:20]) + "\r\n\r\n" + "\r\n".join(sentences[20:])
    _write(os.path.join(corpus_dir, "f_crlf.txt"), crlf.encode("utf-8"))
    _write(os.path.join(corpus_dir, ".hidden_notes"),
           "A hidden file is a corpus file too.\nIt has two lines.\n".encode("utf-8"))


def make_vocab(original_tokenization, corpus_dir, vocab_path):
    """The entries of the full vocab used by the corpus, in the full vocab's order."""
    used = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    settings = [(True, True), (True, False), (False, True)]
    for do_lower_case, strip_accents in settings:
        tok = original_tokenization.FullTokenizer(FULL_VOCAB, do_lower_case=do_lower_case,
                                                  strip_accents=strip_accents)
        for name in sorted(os.listdir(corpus_dir)):
            with open(os.path.join(corpus_dir, name), "rb") as f:
                for raw in f:
                    used.update(tok.tokenize(raw.decode("utf-8").strip()))
    with open(FULL_VOCAB, encoding="utf-8") as f:
        full = [line.strip() for line in f]
    with open(vocab_path, "w", encoding="utf-8") as f:
        for token in full:
            if token in used:
                f.write(token + "\n")


def run_original(bpd, corpus_dir, vocab, flags, seed):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    out_dir = tempfile.mkdtemp(prefix="electra_orig_")
    try:
        args = types.SimpleNamespace(corpus_dir=corpus_dir, vocab_file=vocab, output_dir=out_dir,
                                     **flags)
        for job_id in range(flags["num_processes"]):
            random.seed(seed + job_id)
            bpd.write_examples(job_id, args)
        names = sorted(os.listdir(out_dir))
        files = {}
        for name in names:
            records = [r.numpy() for r in tf.data.TFRecordDataset(os.path.join(out_dir, name))]
            if records:
                index = int(name.split("-")[1])
                files[str(index)] = [r.hex() for r in records]
        return len(names), files
    finally:
        shutil.rmtree(out_dir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.original_repo)
    import build_pretraining_dataset as bpd  # pylint: disable=import-outside-toplevel
    from model import tokenization  # pylint: disable=import-outside-toplevel

    corpus_dir = os.path.join(HERE, "corpus")
    vocab = os.path.join(HERE, "vocab.txt")
    make_corpus(corpus_dir)
    make_vocab(tokenization, corpus_dir, vocab)
    expected = []
    for name, seed, flags in CASES:
        num_files, files = run_original(bpd, corpus_dir, vocab, flags, seed)
        expected.append({"name": name, "seed": seed, "flags": flags, "num_files": num_files,
                         "files": files})
        print(name, sum(len(v) for v in files.values()), "records in", len(files), "files")
    with gzip.open(os.path.join(HERE, "expected.json.gz"), "wt", encoding="utf-8") as f:
        json.dump(expected, f, sort_keys=True)


if __name__ == "__main__":
    main()
