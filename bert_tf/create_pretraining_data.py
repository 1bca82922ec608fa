"""Creates masked-LM / next-sentence pretraining TFRecords from raw text.

The command line of google-research/bert's create_pretraining_data.py, with the same output
for the same flags (record for record), faster and in less memory. `--num_workers=N` (N >= 2)
shards the work over N processes; its output differs from the original's by design (see
bert_tf/data/pretraining_data.py).

  python3 create_pretraining_data.py --input_file=sample_text.txt \
      --output_file=/tmp/tf_examples.tfrecord --vocab_file=vocab.txt
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import files  # noqa: E402
from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.bert import pretraining_data  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files, globs allowed).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files, written "
                    "round-robin).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10,
                     "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than the maximum length.")
flags.DEFINE_integer("num_workers", 1,
                     "1: the original's output exactly. N >= 2: N processes, each on its own "
                     "shard of the documents with its own seed, writing "
                     "<output_file>-0000i-of-0000N (different output, deterministic for a given "
                     "N and seed).")
flags.DEFINE_enum("tokenizer", "auto", ["auto", "fast", "python"],
                  "Tokenizer for the corpus, all giving the original's ids: 'python' "
                  "(bert_tf.bert.tokenization.FullTokenizer, memoized; no TensorFlow import), "
                  "'fast' (tensorflow-text) or 'auto' (= 'python', the faster on real text).")


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    options = shared_flags.options_from_flags(pretraining_data.PretrainingDataOptions, FLAGS)
    try:
        pretraining_data.create_pretraining_data(options)
    except (pretraining_data.DataError, files.OutputError) as e:
        logging.error("%s", e)
        print(f"create_pretraining_data.py: error: {e}", file=sys.stderr)
        return 1
    return 0


def run():
    """`python -m bert_tf.create_pretraining_data` and the root create_pretraining_data.py."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "output_file", "vocab_file"))


if __name__ == "__main__":
    run()
