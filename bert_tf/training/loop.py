"""The pretraining loop's former home, kept so that existing imports keep working.

The loop is now the task-agnostic `bert_tf.training.trainer.Trainer`; pretraining is its task
in `bert_tf.tasks.pretraining`, which defines everything imported here.
"""

from bert_tf.tasks.pretraining import (  # noqa: F401
    PretrainingError, PretrainingOptions, PretrainingTask, Pretrainer, run,
)
from bert_tf.training.trainer import CHECKPOINT_BASENAME, OPTIMIZERS  # noqa: F401
