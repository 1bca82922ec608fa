"""Writes the contextual embeddings of every token of a text file as JSON lines.

The original extract_features.py's flags, names, defaults, input and output format (see
bert_tf/feature_extraction.py), plus --dynamic_padding, --mixed_precision, --predict_precision,
--strategy and the TPU flags of the other scripts (--tpu_name, --tpu_zone, --gcp_project).

  python3 extract_features.py --input_file=in.txt --output_file=out.jsonl \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags, logging  # noqa: E402

from bert_tf import flags as bert_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("input_file", None,
                    "Text file, one example per line; 'text_a ||| text_b' for a pair.")
flags.DEFINE_string("output_file", None, "JSON lines output, one line per input line.")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma list of encoder layers to output (negative: from the last one).")
flags.DEFINE_string("bert_config_file", None,
                    "The config json file of the BERT model (its architecture).")
flags.DEFINE_integer("max_seq_length", 128,
                     "Maximum total input length in word pieces; longer inputs are truncated.")
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint to read the weights from (usually a released BERT model).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case the input (True for uncased models, False for cased ones). A "
                  "RoBERTa model (cased byte-level BPE) defaults to False and refuses True.")
bert_flags.define_tokenizer_file_flags()
flags.DEFINE_integer("batch_size", 32, "Batch size of the model pass.")
# use_tpu, master, num_tpu_cores (the original's), with tpu_name, tpu_zone, gcp_project.
bert_flags.define_tpu_flags()
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility; the embedding lookup gives the same values "
                  "either way, so it changes nothing.")

# Added flags.
flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16"],
                  "Compute dtype of the model pass (values are written as float32).")
bert_flags.define_predict_precision_flag()
flags.declare_key_flag("predict_precision")  # shown by --help
flags.DEFINE_bool("dynamic_padding", True,
                  "Sort the lines by length into batches and run each batch only up to its "
                  "longest line (rounded up to 16); false: every batch at max_seq_length, in "
                  "input order, as the original. The output is the same either way.")
flags.DEFINE_enum("strategy", "default",
                  ["default", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "tf.distribute strategy of the model pass.")


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from bert_tf.families import ConfigError
    from bert_tf.files import OutputError
    from bert_tf.feature_extraction import (ExtractFeaturesOptions, FeatureExtractionError,
                                            run_extract_features)
    from bert_tf.training.strategy import StrategyError

    try:
        strategy = bert_flags.strategy_from_flags(FLAGS)
        # Not given: the family's default (True for BERT, the original's; False for RoBERTa).
        options = bert_flags.options_from_flags(
            ExtractFeaturesOptions, FLAGS,
            do_lower_case=FLAGS.do_lower_case if FLAGS["do_lower_case"].present else None,
            tokenizer_files={name: FLAGS[name].value
                             for name in bert_flags.TOKENIZER_FILE_FLAGS})
        count = run_extract_features(options, strategy)
    except (FeatureExtractionError, ConfigError, StrategyError, OutputError) as e:
        print(f"extract_features.py: error: {e}", file=sys.stderr)
        return 1
    logging.info("Wrote %d lines to %s", count, FLAGS.output_file)
    return 0


def run():
    """`python -m bert_tf.extract_features` and the root extract_features.py."""
    bert_flags.run_command(main, __name__, __doc__,
                           required=("input_file", "output_file", "vocab_file",
                                     "bert_config_file", "init_checkpoint"))


if __name__ == "__main__":
    run()
