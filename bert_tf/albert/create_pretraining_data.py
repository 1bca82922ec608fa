"""Creates ALBERT's pretraining TFRecords (n-gram masked LM + sentence order) from raw text.

The command line of google-research/albert's create_pretraining_data.py (same flags, names and
defaults), with the same records for the same flags and numpy seed, faster:

  python -m bert_tf.albert.create_pretraining_data --input_file=sample_text.txt \
      --output_file=/tmp/tf_examples.tfrecord --vocab_file=30k-clean.vocab \
      --spm_model_file=30k-clean.model

The original draws the n-gram lengths from numpy's global random state and never seeds it, so
two of its runs differ. --numpy_seed seeds that state first (default: --random_seed): the
records equal an original run after `np.random.seed(numpy_seed)`.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import files  # noqa: E402
from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.albert import pretraining_data  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("input_file_mode", "r", "The data format of the input file.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", True,
                  "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_bool("do_permutation", False, "Whether to do the permutation training.")
flags.DEFINE_bool("favor_shorter_ngram", True,
                  "Whether to set higher probabilities for sampling shorter ngrams.")
flags.DEFINE_bool("random_next_sentence", False,
                  "Whether to use the sentence that's right before the current sentence as the "
                  "negative sample for next sentence prection, rather than using sentences from "
                  "other random documents.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("ngram", 3, "Maximum number of ngrams to mask.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 40,
                     "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than the maximum length.")
flags.DEFINE_integer("numpy_seed", None,
                     "Seed of numpy's global random state (the n-gram lengths), set before "
                     "anything else; default --random_seed. The original never seeds it: its "
                     "records equal ours when its numpy was seeded with this value.")


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    options = shared_flags.options_from_flags(pretraining_data.AlbertPretrainingDataOptions, FLAGS)
    try:
        pretraining_data.create_pretraining_data(options)
    except (pretraining_data.DataError, files.OutputError) as e:
        logging.error("%s", e)
        print(f"create_pretraining_data.py: error: {e}", file=sys.stderr)
        return 1
    return 0


def run():
    """`python -m bert_tf.albert.create_pretraining_data`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "output_file", "vocab_file"))


if __name__ == "__main__":
    run()
