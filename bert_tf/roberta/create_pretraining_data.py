"""Creates RoBERTa's pretraining TFRecords (FULL-SENTENCES blocks of token ids) from raw text.

  python -m bert_tf.roberta.create_pretraining_data --input_file=corpus.txt \\
      --output_file=/tmp/roberta_examples.tfrecord --vocab_file=roberta/vocab.json \\
      [--merges_file=roberta/merges.txt] [--max_seq_length=512] [--break_mode=complete]

Input as BERT's create_pretraining_data: one sentence per line, a blank line between documents,
several files or globs separated by commas. Sentences are packed across document boundaries
into blocks of at most --max_seq_length - 1 tokens as fairseq's `--sample-break-mode complete`
(each sentence ends with </s>, a blank line is a </s> of its own: the document separator), and
each record is `<s> block` padded with <pad>: one int64 feature `input_ids`. Masks are drawn
at training time. The rule, and how it was checked against fairseq, are in
bert_tf/roberta/pretraining_data.py and docs/roberta.md.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import files  # noqa: E402
from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.roberta import pretraining_data  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files, globs allowed): one "
                    "sentence per line, a blank line between documents.")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files, written "
                    "round-robin).")
flags.DEFINE_string("vocab_file", None, "RoBERTa's vocab.json (token -> id).")
flags.DEFINE_string("merges_file", None,
                    "RoBERTa's merges.txt (default: merges.txt beside --vocab_file).")
flags.DEFINE_integer("max_seq_length", 512,
                     "Tokens per record, <s> included (fairseq's --tokens-per-sample; RoBERTa "
                     "used 512). Blocks hold up to max_seq_length - 1 tokens.")
flags.DEFINE_enum("break_mode", "complete", list(pretraining_data.BREAK_MODES),
                  "fairseq's --sample-break-mode: 'complete' (RoBERTa's FULL-SENTENCES, blocks "
                  "cross documents) or 'complete_doc' (DOC-SENTENCES: blocks stay in one "
                  "document).")


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    options = shared_flags.options_from_flags(pretraining_data.PretrainingDataOptions, FLAGS)
    try:
        summary = pretraining_data.create_pretraining_data(options)
    except (pretraining_data.DataError, files.OutputError) as e:
        logging.error("%s", e)
        print(f"create_pretraining_data: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {summary.num_blocks} blocks from {summary.num_lines} lines "
          f"({summary.num_skipped} too-long sentences skipped) to "
          f"{', '.join(summary.output_files)}")
    return 0


def run():
    """`python -m bert_tf.roberta.create_pretraining_data`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "output_file", "vocab_file"))


if __name__ == "__main__":
    run()
