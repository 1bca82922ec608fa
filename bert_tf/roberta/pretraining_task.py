"""RoBERTa pretraining as a task of the trainer: fairseq's `masked_lm` task with RoBERTa's recipe
(examples/roberta/config/pretraining/base.yaml of fairseq v0.12.2) on bert_tf's trainer.

  - records: `python -m bert_tf.roberta.create_pretraining_data`'s (`input_ids` only);
  - masks: drawn in the input pipeline for each record from (seed, epoch, index)
    (`bert_tf.roberta.masking.DynamicMasking`, fairseq's `MaskTokensDataset` rule): the
    pipeline gives each record its epoch (the pass over the input it is read in) and its index
    (`input_pipeline.record_index`: file number * 2**32 + number in the file), so every epoch
    masks anew, and a run resumed from a checkpoint (which saves the input iterator) draws the
    masks the uninterrupted run draws;
  - model and loss: `RobertaPretrainingModel` (masked LM only, no next sentence), the mean
    cross-entropy over the masked positions of the global batch;
  - optimizer: fairseq's Adam (`AdamWeightDecay(bias_correction=True)`): betas (0.9, 0.98),
    epsilon 1e-6, decoupled weight decay 0.01 on every parameter (fairseq excludes none);
    no gradient clipping (`--clip-norm 0`);
  - schedule: fairseq's `polynomial_decay`: linear warmup to the peak, then linear decay to 0
    at num_train_steps (`WarmupLinearDecay(decay_after_warmup=True)`);
  - eval: masked_lm_accuracy, masked_lm_loss, loss, global_step on the input files' records
    masked as in epoch 0.

`run` is what `python -m bert_tf.roberta.run_pretraining` calls.
"""

import dataclasses
import functools
import os

import numpy as np
import tensorflow as tf
from bert_tf import files
from bert_tf.bert.pretraining_task import PretrainingOptions, Pretrainer
from bert_tf.roberta import masking as masking_lib
from bert_tf.roberta import pretraining_data, tokenization
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.pretraining import RobertaPretrainingModel, mlm_loss
from bert_tf.training import input_pipeline
from bert_tf.training.optimizer import AdamWeightDecay
from bert_tf.training.schedule import WarmupLinearDecay
from bert_tf.training.task import Task
from bert_tf.training.trainer import TrainingError

# fairseq's recipe (base.yaml and the masked_lm task's defaults).
ADAM_BETAS = (0.9, 0.98)
ADAM_EPSILON = 1e-6
WEIGHT_DECAY = 0.01
CLIP_NORM = 0.0  # no clipping

_SUM_KEYS = ("mlm_correct", "mlm_weight", "mlm_loss", "total_loss")


@dataclasses.dataclass(kw_only=True)
class RobertaPretrainingOptions(PretrainingOptions):
    """BERT's pretraining options with fairseq's RoBERTa defaults, the vocabulary the masks
    draw from, and fairseq's masking and Adam settings.

    `max_predictions_per_seq` None: `masking.max_predictions(max_seq_length, mask_prob)`, the
    smallest size that holds every count the rule draws (77 for 512)."""

    vocab_file: str
    merges_file: str | None = None
    max_seq_length: int = 512
    max_predictions_per_seq: int | None = None
    train_batch_size: int = 2048
    learning_rate: float = 5e-4
    num_train_steps: int = 125000
    num_warmup_steps: int = 10000
    weight_decay_rate: float = WEIGHT_DECAY
    clip_norm: float = CLIP_NORM
    adam_beta1: float = ADAM_BETAS[0]
    adam_beta2: float = ADAM_BETAS[1]
    adam_epsilon: float = ADAM_EPSILON
    mask_prob: float = masking_lib.MASK_PROB
    leave_unmasked_prob: float = masking_lib.LEAVE_UNMASKED_PROB
    random_token_prob: float = masking_lib.RANDOM_TOKEN_PROB

    def __post_init__(self):
        if self.max_predictions_per_seq is None:
            self.max_predictions_per_seq = masking_lib.max_predictions(
                self.max_seq_length, self.mask_prob)

    def problems(self, config):
        problems = super().problems(config)
        if not isinstance(config, RobertaConfig):
            problems.append(f"the config is of model_type {config.model_type!r}, not "
                            "'roberta': RoBERTa pretraining needs a roberta config")
        elif self.max_seq_length > config.max_sequence_length:
            problems.append(
                f"--max_seq_length={self.max_seq_length} is longer than the "
                f"{config.max_sequence_length} tokens the roberta config takes "
                f"(max_position_embeddings {config.max_position_embeddings} - pad_token_id "
                f"{config.pad_token_id} - 1)")
        if self.optimizer != "adamw":
            problems.append(f"--optimizer={self.optimizer}: RoBERTa's recipe is Adam with "
                            "decoupled weight decay and bias correction (adamw)")
        if self.group_by_length:
            problems.append("--group_by_length: the records' masks are drawn per record from "
                            "its epoch and index; batches are not grouped by length")
        if self.seed is None:
            problems.append("--seed is required: the masks are drawn from (seed, epoch, index)")
        if self.num_warmup_steps >= self.num_train_steps:
            problems.append(f"--num_warmup_steps={self.num_warmup_steps} must be below "
                            f"--num_train_steps={self.num_train_steps} (the linear decay "
                            "follows the warmup)")
        for name in ("adam_beta1", "adam_beta2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                problems.append(f"--adam_betas: {getattr(self, name)} is not in [0, 1)")
        if not self.adam_epsilon > 0:
            problems.append(f"--adam_eps must be positive, got {self.adam_epsilon}")
        if self.weight_decay_rate < 0:
            problems.append(f"--weight_decay must be >= 0, got {self.weight_decay_rate}")
        if self.clip_norm < 0:
            problems.append(f"--clip_norm must be >= 0 (0: no clipping), got {self.clip_norm}")
        return problems


def read_vocab(options):
    """The vocabulary ({token: id}) of `options.vocab_file`, checked with its merges.txt
    (`options.merges_file`, else the one beside it) as a byte-level BPE vocabulary that has
    RoBERTa's special tokens. Raises TrainingError naming the flag and file."""
    merges_file = options.merges_file or tokenization.default_merges_file(options.vocab_file)
    try:
        return tokenization.ByteLevelBPEVocab.from_files(options.vocab_file, merges_file)
    except tokenization.VocabError as e:
        flag = "--merges_file" if str(e).startswith("merges file") else "--vocab_file"
        raise TrainingError(f"{flag}: {e}") from None
    except OSError as e:
        raise TrainingError(f"--vocab_file / --merges_file: cannot read "
                            f"{e.filename or options.vocab_file}: {e.strerror or e}") from None


def make_masking(options, vocab, config):
    """The `DynamicMasking` of `options` over `vocab` (random tokens: every id but the special
    tokens'). Raises TrainingError for bad masking flags or a vocabulary the config cannot
    embed."""
    top = max(vocab.values()) + 1
    if top > config.vocab_size:
        raise TrainingError(f"--vocab_file={options.vocab_file}: ids up to {top - 1}, more than "
                            f"vocab_size {config.vocab_size} of the roberta config")
    pad = vocab[tokenization.SPECIAL_TOKENS.pad]
    if pad != config.pad_token_id:
        raise TrainingError(f"--vocab_file={options.vocab_file}: {tokenization.SPECIAL_TOKENS.pad}"
                            f" is id {pad}, the roberta config's pad_token_id is "
                            f"{config.pad_token_id}")
    try:
        return masking_lib.DynamicMasking.for_vocab(
            vocab, options.max_seq_length, options.seed,
            max_predictions_per_seq=options.max_predictions_per_seq,
            mask_prob=options.mask_prob, leave_unmasked_prob=options.leave_unmasked_prob,
            random_token_prob=options.random_token_prob)
    except masking_lib.MaskingError as e:
        raise TrainingError(str(e)) from None


class RobertaPretrainingTask(Task):
    """Masked LM on RoBERTa's records, masked in the input pipeline.

    Args:
      masking: the `masking.DynamicMasking` of the run (its max_seq_length and
        max_predictions_per_seq are the records' and the labels' sizes).
    """

    name = "roberta_pretraining"
    step_keys = ("total_loss",)
    log_names = ("mlm",)
    # fairseq (PyTorch's nn.Embedding) clips the summed, dense gradients.
    row_norm_variables = ()
    # fairseq's masked LM has no pooler; ours (for the heads that read `<s>`) keeps its
    # initial values, untrained and without optimizer slots, as BERT's under a SQuAD head.
    unused_variable_prefixes = ("roberta/pooler/",)
    # The masked-LM head gathers the sequence at these positions.
    position_keys = ("masked_lm_positions",)

    def __init__(self, masking):
        self.masking = masking
        self.max_seq_length = masking.max_seq_length
        self.max_predictions_per_seq = masking.max_predictions_per_seq

    def build_model(self, config):
        return RobertaPretrainingModel(config)

    def feature_spec(self, is_training):
        return pretraining_data.feature_spec(self.max_seq_length)

    def record_parser(self, is_training):
        """One record's masked features, drawn from (seed, epoch, index)."""
        spec = self.feature_spec(is_training)

        def parse(epoch, index, serialized):
            input_ids = tf.io.parse_single_example(serialized, spec)["input_ids"]
            return self.masking(input_ids, epoch, index)

        return parse

    def local_normalizers(self, features):
        """[masked-LM weight sum] of this replica's batch."""
        return tf.reshape(tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
                          [1])

    def compute_loss(self, outputs, features, normalizers):
        return mlm_loss(outputs, features, masked_lm_weight_sum=normalizers[0])

    def eval_outputs(self, outputs, features, losses, normalizers):
        weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
        ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
        predictions = tf.argmax(outputs["mlm_log_probs"], axis=-1, output_type=tf.int32)
        return {
            "mlm_correct": tf.reduce_sum(weights * tf.cast(tf.equal(predictions, ids),
                                                           tf.float32)),
            "mlm_weight": tf.reduce_sum(weights),
            "mlm_loss": tf.reduce_sum(weights * losses["masked_lm_example_loss"]),
            "total_loss": losses["total_loss"],
        }

    def finalize_eval(self, batches, global_step):
        sums = {k: float(np.sum([np.float64(b[k]) for b in batches])) for k in _SUM_KEYS}

        def ratio(a, b):
            return np.float32(a / b) if b else np.float32("nan")

        return {
            "masked_lm_accuracy": ratio(sums["mlm_correct"], sums["mlm_weight"]),
            "masked_lm_loss": ratio(sums["mlm_loss"], sums["mlm_weight"]),
            "loss": ratio(sums["total_loss"], len(batches)),
            "global_step": int(global_step),
        }

    def predict_outputs(self, outputs, features):
        raise TrainingError("RoBERTa pretraining has no predict mode (--do_train or --do_eval)")


class RobertaPretrainer(Pretrainer):
    """The trainer with RoBERTa's task, fairseq's Adam and schedule.

    Args:
      config: the `RobertaConfig`.
      options: `RobertaPretrainingOptions`.
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
      vocab: optional {token: id} of options.vocab_file (read when not given).
    """

    def __init__(self, config, options, strategy=None, vocab=None):
        self._vocab = vocab
        # fairseq's Adam under the trainer's --optimizer name of AdamW (decoupled decay).
        self.optimizers = {"adamw": functools.partial(
            AdamWeightDecay, beta_1=options.adam_beta1, beta_2=options.adam_beta2,
            epsilon=options.adam_epsilon, bias_correction=True, exclude_from_weight_decay=())}
        super().__init__(config, options, strategy)

    def make_task(self, config, options):
        options.validate(config)
        vocab = self._vocab if self._vocab is not None else read_vocab(options)
        return RobertaPretrainingTask(make_masking(options, vocab, config))

    def make_schedule(self):
        opts = self.options
        return WarmupLinearDecay(opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps,
                                 decay_after_warmup=True)


def check_records(input_files, max_seq_length, vocab_size):
    """The first record of each file must be a RoBERTa record: a tf.train.Example whose only
    feature is int64 `input_ids` of max_seq_length ids below vocab_size. Raises InputError
    naming the file and what it holds instead."""
    for path in input_files:
        features = input_pipeline.first_example_features(path)
        if set(features) != {"input_ids"}:
            raise input_pipeline.InputError(
                f"{path}: not a RoBERTa record of bert_tf.roberta.create_pretraining_data "
                f"(expected the one feature input_ids, found {', '.join(sorted(features))})")
        feature = features["input_ids"]
        if feature.WhichOneof("kind") != "int64_list":
            raise input_pipeline.InputError(f"{path}: feature input_ids is not an int64_list")
        ids = feature.int64_list.value
        if len(ids) != max_seq_length:
            raise input_pipeline.InputError(
                f"{path}: input_ids has length {len(ids)}, but --max_seq_length is "
                f"{max_seq_length}; it must match create_pretraining_data's")
        if ids and (min(ids) < 0 or max(ids) >= vocab_size):
            raise input_pipeline.InputError(
                f"{path}: input_ids holds id {max(ids) if max(ids) >= vocab_size else min(ids)}, "
                f"outside the vocab_size {vocab_size} of the roberta config")


def write_model_files(config, options, output_dir):
    """bert_config.json, vocab.json and merges.txt in output_dir (chief; each written whole if
    absent), so `python -m bert_tf.hf export --checkpoint=<output_dir>` and the fine-tuning
    scripts find them beside the checkpoints. A vocab.json or merges.txt already there that
    differs from the flags' is refused (TrainingError)."""
    merges_file = options.merges_file or tokenization.default_merges_file(options.vocab_file)
    sources = {tokenization.VOCAB_FILE: ("--vocab_file", options.vocab_file),
               tokenization.MERGES_FILE: ("--merges_file", merges_file)}
    for name, (flag, source) in sources.items():
        target = os.path.join(output_dir, name)
        with tf.io.gfile.GFile(source, "rb") as f:
            data = f.read()
        if tf.io.gfile.exists(target):
            if os.path.realpath(target) == os.path.realpath(source):
                continue
            with tf.io.gfile.GFile(target, "rb") as f:
                if f.read() != data:
                    raise TrainingError(f"--output_dir={output_dir} holds another {name} than "
                                        f"{flag}={source}: use a new --output_dir")
            continue
        files.write_atomic(target, data)
    config_path = os.path.join(output_dir, "bert_config.json")
    if not tf.io.gfile.exists(config_path):
        config.to_json_file(config_path)


def run(config, options, strategy=None, do_train=False, do_eval=False, step_callback=None):
    """What `python -m bert_tf.roberta.run_pretraining` does: train and/or eval. Returns (last
    checkpoint prefix or None, eval results or None)."""
    if not do_train and not do_eval:
        raise TrainingError("at least one of --do_train or --do_eval must be set")
    options.validate(config)
    vocab = read_vocab(options)
    check_records(options.input_files, options.max_seq_length, config.vocab_size)
    tf.io.gfile.makedirs(options.output_dir)
    trainer = RobertaPretrainer(config, options, strategy, vocab=vocab)
    if trainer.is_chief:
        write_model_files(config, options, options.output_dir)
    last_checkpoint, results = None, None
    if do_train:
        last_checkpoint = trainer.train(step_callback=step_callback)
    else:
        last_checkpoint = trainer.restore_weights()
    if do_eval:
        results = trainer.evaluate()
    return last_checkpoint, results
