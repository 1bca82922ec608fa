"""What the fine-tuning tasks' runs share: their common flags and the original's step count."""

import dataclasses

from bert_tf.data.records import file_signature, num_train_steps_and_warmup
from bert_tf.training.trainer import TrainerOptions, TrainingError


def max_seq_length_problem(max_seq_length, config, flag="--max_seq_length"):
    """The original's message for a `max_seq_length` past the longest sequence the model
    takes (`config.max_sequence_length`: max_position_embeddings for BERT; RoBERTa's is
    max_position_embeddings - pad_token_id - 1, its positions starting after pad_token_id)."""
    usable = config.max_sequence_length
    why = ("max_position_embeddings of the bert config" if usable == config.max_position_embeddings
           else f"max_position_embeddings {config.max_position_embeddings} - pad_token_id "
                f"{config.pad_token_id} - 1 of the {config.model_type} config")
    return (f"Cannot use sequence length {max_seq_length} because the BERT model was only "
            f"trained up to sequence length {usable} ({flag} > {why})")


def tokenizer_files_meta(options):
    """The records' sidecar entry of the tokenizer file flags given (none: no entry, as
    before they existed)."""
    given = {name: path for name, path in options.tokenizer_files.items() if path}
    if not given:
        return {}
    return {"tokenizer_files": {name: file_signature(path)
                                for name, path in sorted(given.items())}}


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions(TrainerOptions):
    """The flags run_classifier.py, run_squad.py and run_tagging.py share (the original's
    names and defaults) and the trainer's. num_train_steps and num_warmup_steps are derived
    from the training set by `with_training_steps`."""

    vocab_file: str
    do_lower_case: bool = True
    # The tokenizer file flags beside --vocab_file (`bert_tf.flags.TOKENIZER_FILE_FLAGS`,
    # e.g. --merges_file), passed to the family's tokenizer (`families.make_tokenizer`).
    tokenizer_files: dict = dataclasses.field(default_factory=dict)
    max_seq_length: int = 128
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    learning_rate: float = 5e-5
    num_train_steps: int = 1
    num_warmup_steps: int = 0

    def problems(self, config):
        problems = super().problems(config)
        for name in ("max_seq_length", "predict_batch_size"):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        if self.max_seq_length > config.max_sequence_length:
            problems.append(max_seq_length_problem(self.max_seq_length, config))
        if self.num_train_epochs <= 0:
            problems.append(f"--num_train_epochs must be positive, got {self.num_train_epochs}")
        if not 0 <= self.warmup_proportion <= 1:
            problems.append(f"--warmup_proportion must be in [0, 1], got "
                            f"{self.warmup_proportion}")
        return problems

    def with_training_steps(self, num_examples, source, what="training examples",
                            error=TrainingError):
        """These options with the original's num_train_steps = int(num_examples /
        train_batch_size * num_train_epochs) and num_warmup_steps = int(steps *
        warmup_proportion). Raises `error` (naming `source`) when that is 0."""
        steps, warmup = num_train_steps_and_warmup(
            num_examples, self.train_batch_size, self.num_train_epochs, self.warmup_proportion)
        if steps <= 0:
            raise error(
                f"{source}: {num_examples} {what} with --train_batch_size="
                f"{self.train_batch_size} and --num_train_epochs={self.num_train_epochs} make 0 "
                "training steps")
        return dataclasses.replace(self, num_train_steps=steps, num_warmup_steps=warmup)
