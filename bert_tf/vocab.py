"""Builds a WordPiece vocab.txt from your own corpus, for bert_tf's (and the original's) tokenizer.

    python -m bert_tf.vocab --input_file=corpus.txt[,more.txt,glob*.txt] \\
        --output_file=vocab.txt --vocab_size=30522 --do_lower_case=true

The learner is `bert_tf.bert.vocab` (its docstring says how the vocab is made); this module is
its flags. Importing it does not import TensorFlow.
"""

import sys

from bert_tf import files
from bert_tf.bert.vocab import VocabBuildError, build_vocab_file
from bert_tf.text import VocabError


def main(argv):
    from absl import flags, logging

    del argv
    f = flags.FLAGS
    if f.vocab_size is None or f.vocab_size <= 0:
        raise VocabBuildError("--vocab_size must be a positive integer")
    vocab = build_vocab_file(
        f.input_file, f.output_file, f.vocab_size, do_lower_case=f.do_lower_case,
        extra_reserved_tokens=f.extra_reserved_tokens or (),
        max_unique_chars=f.max_unique_chars, max_token_length=f.max_token_length,
        num_iterations=f.num_iterations, slack_ratio=f.slack_ratio, lower_thresh=f.lower_thresh)
    print(f"wrote {len(vocab)} entries to {f.output_file}")
    if len(vocab) < (1 - f.slack_ratio) * f.vocab_size:
        logging.warning(
            "only %d entries for --vocab_size=%d: every piece seen at least --lower_thresh=%d "
            "times is already in; a small corpus may need --lower_thresh=1 or 2",
            len(vocab), f.vocab_size, f.lower_thresh)


def _define_flags():
    from absl import flags

    flags.DEFINE_string("input_file", None,
                        "Corpus: comma-separated text files or globs, read line by line.")
    flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
    flags.DEFINE_integer("vocab_size", None,
                         "Largest vocab size wanted (reserved tokens included).")
    flags.DEFINE_bool("do_lower_case", True,
                      "Lower-case and strip accents (uncased model) or not (cased model); use "
                      "the same value when tokenizing.")
    flags.DEFINE_list("extra_reserved_tokens", [],
                      "More reserved tokens, after [PAD],[UNK],[CLS],[SEP],[MASK].")
    flags.DEFINE_integer("max_unique_chars", 1000,
                         "Alphabet size: words with rarer characters are not learned from.")
    flags.DEFINE_integer("max_token_length", 50, "Longest piece learned.")
    flags.DEFINE_integer("num_iterations", 4, "Learner iterations.")
    flags.DEFINE_integer("lower_thresh", 10,
                         "Lowest piece frequency the threshold search may go down to (tensorflow-"
                         "text's default 10; use 1-2 for a small corpus).")
    flags.DEFINE_float("slack_ratio", 0.05,
                       "Accept a vocab between (1 - slack_ratio) * vocab_size and vocab_size.")
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_size"])


def run():
    from absl import app

    _define_flags()

    def _main(argv):
        try:
            main(argv)
        except (VocabBuildError, VocabError, files.OutputError) as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)

    app.run(_main)


if __name__ == "__main__":
    run()
