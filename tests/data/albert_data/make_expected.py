"""Records the ORIGINAL ALBERT create_pretraining_data.py on the small corpora of this folder.

    python3 tests/data/albert_data/make_expected.py --original_repo=/tmp/orig_albert

First (re)writes the inputs next to this file: corpus/ (text files made messy on purpose:
accents, combining marks alone on a line, CJK, CRLF and a lone CR, a BOM, digits with commas,
upper-case words the SentencePiece model does not know, control characters, lines of no tokens,
runs of blank lines, a 300-word line, an empty file, a file of blank lines, no final newline)
and vocab.txt (the entries of ../shared/data/uncased_vocab.txt the corpus uses in either casing,
so the small vocab tokenizes it as the full one, then a repeated entry and a two-field line for
the original's load_vocab rule). The SentencePiece model is ../albert_spm/albert.model.

Then, for each case below, imports the original's create_pretraining_data.py unmodified
(`tools.original.load_albert_module`), sets its flags, seeds numpy's global state with the
case's numpy_seed (the original never does: what our --numpy_seed promises) and runs its `main`.
Writes expected.json.gz: per case its flags, per output file its records (each re-serialized
deterministically, hex: the original's own map order varies per process) and the log lines of
its first examples ("*** Example ***", tokens and features).
"""

import argparse
import gzip
import json
import logging
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

FULL_VOCAB = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")
SAMPLE_TEXT = os.path.join(os.path.dirname(REPO), "shared", "data", "sample_text.txt")
SPM_MODEL = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
CORPUS = os.path.join(HERE, "corpus")
VOCAB = os.path.join(HERE, "vocab.txt")
EXPECTED = os.path.join(HERE, "expected.json.gz")

SAMPLE = ["a_sample.txt"]
MESSY = ["b_generated.txt", "c_messy.txt", "d_empty.txt", "e_blanks.txt", "f_crlf.txt"]

# name, corpus files, flags (the original's names; spm=True: --spm_model_file=albert.model).
# Every case also has numpy_seed, random_seed, and small max_seq_length / dupe_factor.
CASES = [
    ("spm_default", SAMPLE + MESSY, dict(spm=True, max_seq_length=64, dupe_factor=2,
                                        numpy_seed=1, random_seed=12345, outputs=1)),
    ("spm_no_wwm_cased_three_files", MESSY, dict(
        spm=True, do_whole_word_mask=False, do_lower_case=False, max_seq_length=48,
        short_seq_prob=0.5, dupe_factor=2, numpy_seed=2, random_seed=3, outputs=3)),
    ("spm_random_next_long_ngrams", SAMPLE + MESSY, dict(
        spm=True, random_next_sentence=True, favor_shorter_ngram=False, ngram=4,
        masked_lm_prob=0.3, max_predictions_per_seq=12, max_seq_length=40, dupe_factor=1,
        numpy_seed=3, random_seed=5, outputs=2)),
    ("spm_cased_permutation", SAMPLE, dict(
        spm=True, do_lower_case=False, do_permutation=True, max_seq_length=64, dupe_factor=3,
        short_seq_prob=0.3, numpy_seed=4, random_seed=7, outputs=1)),
    ("wordpiece_default", SAMPLE + MESSY, dict(
        max_seq_length=64, dupe_factor=2, numpy_seed=5, random_seed=11, outputs=2)),
    ("wordpiece_no_wwm_random_next", MESSY, dict(
        do_whole_word_mask=False, random_next_sentence=True, short_seq_prob=0.3,
        max_seq_length=32, max_predictions_per_seq=5, dupe_factor=3, numpy_seed=6,
        random_seed=13, outputs=1)),
    ("wordpiece_cased_no_masking", SAMPLE, dict(
        do_lower_case=False, masked_lm_prob=0.0, max_seq_length=64, dupe_factor=1,
        numpy_seed=7, random_seed=17, outputs=1)),
]


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make_corpus():
    """Deterministic messy text files."""
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    os.makedirs(CORPUS)
    with open(SAMPLE_TEXT, encoding="utf-8") as f:
        sample = f.read()
    sentences = [s for s in sample.split("\n") if s.strip()]
    rng = random.Random(0)
    _write(os.path.join(CORPUS, "a_sample.txt"), sample.encode("utf-8"))
    lines = []
    for _ in range(150):
        if rng.random() < 0.15:
            lines.append("")
        else:
            words = rng.choice(sentences).split()
            start = rng.randrange(len(words))
            lines.append(" ".join(words[start:start + rng.randint(1, 30)]))
    _write(os.path.join(CORPUS, "b_generated.txt"), ("\n".join(lines) + "\n").encode("utf-8"))
    messy = [
        "\ufeffA byte-order mark starts this file; Café, naïve, Ångström, résumé, Straße.",
        "It cost 1,000 dollars, then 10,000,000; 0, 1, 2,5, and 3, were the scores.",
        "Crème brûlée et pâté à la française.\r",
        "\u0301\u0308",  # only combining marks: empty after preprocess_text, a new document there
        "\x00\x01\x02",  # no tokens at all
        "   \t  ",  # whitespace only: an empty line
        "中文字符和日本語の文字、한국어 텍스트。",
        "",
        "",
        "ＦＵＬＬＷＩＤＴＨ letters and ﬁ ligatures, ½ fractions, ① circled, and Ⅻ numerals.",
        " ".join(f"word{i % 17} and-some more text" for i in range(300)),
        "Tabs\tinside\tthe\tline and a lone carriage\rreturn inside it.",
        "UPPER CASE WORDS With Mixed Case And ACRONYMS like NASA, XYZZY, U.S.A. and e.g.",
        "[MASK] and [CLS] written in text, <pad> and <unk> too; \"quotes\" – dashes £5 €10.",
        "",
        "Ελληνικά κείμενα και кириллица тоже, with emoji 😀 and symbols ©®™.",
        "Last line without a final newline",
    ]
    _write(os.path.join(CORPUS, "c_messy.txt"), "\n".join(messy).encode("utf-8"))
    _write(os.path.join(CORPUS, "d_empty.txt"), b"")
    _write(os.path.join(CORPUS, "e_blanks.txt"), b"\n\n  \n\r\n\n")
    crlf = "\r\n".join(sentences[3:12]) + "\r\n\r\n" + "\r\n".join(sentences[12:20])
    _write(os.path.join(CORPUS, "f_crlf.txt"), crlf.encode("utf-8"))


def make_vocab(tokenization):
    """The entries of the full vocab the corpus uses, in its order, then the extra lines."""
    used = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    for lower in (True, False):
        tok = tokenization.FullTokenizer(FULL_VOCAB, do_lower_case=lower)
        for name in sorted(os.listdir(CORPUS)):
            with open(os.path.join(CORPUS, name), "rb") as f:
                for raw in f:
                    used.update(tok.tokenize(raw.decode("utf-8").strip()))
    with open(FULL_VOCAB, encoding="utf-8") as f:
        full = [line.strip() for line in f]
    lines = [t for t in full if t in used] + ["[UNK]", "zzzextra 17"]
    with open(VOCAB, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def case_argv(files, flags, outputs):
    """The command-line flags of a case (our command takes the same)."""
    args = [f"--input_file={','.join(os.path.join(CORPUS, f) for f in files)}",
            f"--vocab_file={VOCAB}", f"--output_file={','.join(outputs)}"]
    for key, value in flags.items():
        if key in ("spm", "outputs"):
            continue
        if isinstance(value, bool):
            args.append(f"--{key}" if value else f"--no{key}")
        else:
            args.append(f"--{key}={value}")
    if flags.get("spm"):
        args.append(f"--spm_model_file={SPM_MODEL}")
    return args


def read_records(path):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from tensorflow.core.example import example_pb2  # pylint: disable=import-outside-toplevel

    return [example_pb2.Example.FromString(r.numpy()).SerializeToString(deterministic=True).hex()
            for r in tf.data.TFRecordDataset(path)]


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


LOGGED = ("*** Example ***", "tokens: ", "input_ids: ", "input_mask: ", "segment_ids: ",
          "token_boundary: ", "masked_lm_positions: ", "masked_lm_ids: ", "masked_lm_weights: ",
          "next_sentence_labels: ")


def example_log(lines):
    """The lines of the examples' log ("*** Example ***", tokens, features)."""
    return [line for line in lines if line.startswith(LOGGED)]


def run_original(module, files, flags):
    import numpy as np  # pylint: disable=import-outside-toplevel

    out_dir = tempfile.mkdtemp(prefix="albert_orig_")
    try:
        outputs = [os.path.join(out_dir, f"out{i}.tfrecord") for i in range(flags["outputs"])]
        argv = ["create_pretraining_data.py"] + [
            a for a in case_argv(files, flags, outputs) if not a.startswith("--numpy_seed")]
        module.FLAGS.unparse_flags()
        module.FLAGS(argv)
        np.random.seed(flags["numpy_seed"])
        handler = _Lines()
        logger = logging.getLogger("tensorflow")
        logger.addHandler(handler)
        try:
            module.main(None)
        finally:
            logger.removeHandler(handler)
        return [read_records(p) for p in outputs], example_log(handler.lines)
    finally:
        shutil.rmtree(out_dir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    from tools.original import load_albert_module  # pylint: disable=import-outside-toplevel

    module = load_albert_module(args.original_repo, "create_pretraining_data")
    make_corpus()
    make_vocab(module.tokenization)
    expected = []
    for name, files, flags in CASES:
        records, log = run_original(module, files, flags)
        expected.append({"name": name, "files": files, "flags": flags, "records": records,
                         "log": log})
        print(name, [len(r) for r in records], "records")
    with gzip.open(EXPECTED, "wt", encoding="utf-8") as f:
        json.dump(expected, f, sort_keys=True, ensure_ascii=False)


if __name__ == "__main__":
    main()
