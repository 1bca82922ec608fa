"""Fine-tunes ALBERT on SQuAD 1.1: google-research/albert's run_squad_v1.py.

Its flags, names, defaults and meaning: --albert_config_file, --spm_model_file (SentencePiece
pieces aligned to the paragraph's characters), --train_file / --predict_file, the feature
files --train_feature_file, --predict_feature_file and --predict_feature_left_file (written,
or read back when they exist), --do_train, --do_predict. --do_predict scores every checkpoint
of --output_dir on the predict file (eval_results.txt: exact_match and f1), copies the best to
model.ckpt-best and writes its predictions.json and nbest_predictions.json. Without --do_train
(the original crashes there) it scores the checkpoints --output_dir has, or predicts with
--init_checkpoint's weights when it has none. Plus bert_tf's trainer flags (--strategy,
--mixed_precision, --use_xla, --dynamic_padding, --shuffle_buffer_size, --seed, ...), and
--predict_dynamic_padding (prediction batches cut: not the original's n-best, see --help).
Restarting with the same --output_dir resumes from its latest checkpoint.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.albert import command_flags  # noqa: E402

FLAGS = flags.FLAGS
SCRIPT = "run_squad_v1.py"

# The original's flags (those of both SQuAD commands: command_flags), and bert_tf's trainer
# flags (docs/scale.md).
command_flags.define_squad_flags(keep_checkpoint_max=(
    "Checkpoints kept in output_dir while training (0 keeps all, as the original's RunConfig; "
    "--do_predict scores them and prunes as the original)."))
shared_flags.define_predict_padding_flag()
flags.declare_key_flag("predict_dynamic_padding")  # in --help: not the original's
flags.DEFINE_bool("use_einsum", True,
                  "Whether to use tf.einsum or tf.reshape+tf.matmul for dense layers (the same "
                  "numbers either way; unused here).")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored (not supported "
                    "here: export model.ckpt-best with python -m bert_tf.export --task=squad).")


def main(argv):
    del argv
    problem = command_flags.unsupported_flag("squad")
    if problem:
        print(f"{SCRIPT}: error: {problem}", file=sys.stderr)
        return 1
    from bert_tf.albert.squad_data import SquadDataError
    from bert_tf.albert.squad_task import AlbertSquadOptions, run_v1
    from bert_tf.evaluation.squad_eval import SquadEvalError

    return command_flags.run_fine_tuning(
        SCRIPT, AlbertSquadOptions, run_v1, task_errors=(SquadDataError, SquadEvalError),
        fields=command_flags.SQUAD_FIELDS + ("predict_dynamic_padding",))


def run_main():
    """`python -m bert_tf.albert.run_squad_v1`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("spm_model_file", "albert_config_file", "output_dir"))


if __name__ == "__main__":
    run_main()
