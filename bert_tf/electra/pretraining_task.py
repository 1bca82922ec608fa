"""ELECTRA pretraining as a task of the trainer: google-research/electra's `run_pretraining.py`.

`ElectraPretrainingTask` gives the trainer the `ElectraPretrainingModel` (masking, generator,
sampling, discriminator in the graph), the builder's records (`input_ids`, `input_mask`,
`segment_ids`), the loss gen_weight * masked-LM + disc_weight * discriminator, and the original's
eval metrics; `ElectraPretrainer` adds ELECTRA's learning-rate schedule (a polynomial decay of
power `lr_decay_power`, multiplied by the warmup ramp). `run` is what
`python -m bert_tf.electra.run_pretraining` calls.

Eval metrics (the original's `metric_fn`, accumulated over the eval batches as tf.metrics does):
  masked_lm_accuracy, masked_lm_loss        weighted by masked_lm_weights
  sampled_masked_lm_accuracy                the generator's samples against the true tokens
  disc_loss                                 mean of the per-example discriminator loss
  disc_auc                                  tf.metrics.auc (ROC, 200 thresholds, trapezoidal)
                                            of probs * input_mask against labels * input_mask,
                                            padding included, as the original calls it (also
                                            the padding a dynamically padded batch drops)
  disc_accuracy, disc_precision, disc_recall  accuracies weighted by input_mask,
                                            predictions * input_mask, labels * input_mask
  loss                                      mean of the batches' total loss (the Estimator's)
  global_step
A ratio with a zero denominator is 0, as in tf.metrics.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf import families
from bert_tf.electra import masking
from bert_tf.electra.pretraining import ElectraObjective, ElectraPretrainingModel, electra_loss
from bert_tf.training.schedule import WarmupLinearDecay
from bert_tf.training.task import Task
from bert_tf.training.trainer import Trainer, TrainerOptions, TrainingError

# tf.metrics.auc's defaults: 200 thresholds, the inner ones i / 199, the ends pushed out by 1e-7.
AUC_THRESHOLDS = np.asarray(
    [0.0 - 1e-7] + [(i + 1) / 199.0 for i in range(198)] + [1.0 + 1e-7], np.float32)
_AUC_EPSILON = 1e-6
_AUC_KEYS = ("auc_tp", "auc_fn", "auc_tn", "auc_fp")
_SUM_KEYS = ("total_loss", "mlm_correct", "mlm_weight", "mlm_loss")
_ELECTRA_SUM_KEYS = ("sampled_correct", "disc_loss", "examples", "disc_correct", "disc_weight",
                     "precision_correct", "precision_weight", "recall_correct",
                     "recall_weight") + _AUC_KEYS


@dataclasses.dataclass(kw_only=True)
class ElectraOptions(TrainerOptions):
    """The run's settings: the trainer's, plus the record length, the eval length and
    ELECTRA's `lr_decay_power`."""

    input_files: list
    eval_input_files: list | None = None
    max_seq_length: int = 128
    max_eval_steps: int = 100
    lr_decay_power: float = 1.0

    def problems(self, config):
        problems = super().problems(config)
        for name in ("max_eval_steps", "max_seq_length"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_seq_length > config.max_position_embeddings:
            problems.append(
                f"max_seq_length={self.max_seq_length} is larger than max_position_embeddings="
                f"{config.max_position_embeddings} of the model config")
        return problems


def auc_counts(labels, probs, padding=0.0, thresholds=AUC_THRESHOLDS):
    """tf.metrics.auc's confusion counts of one batch: float32 [T] each of true positives,
    false negatives, true negatives and false positives (prediction positive when
    prob > threshold).

    Args:
      labels: int or bool [...]; probs: float32 [...] in [0, 1].
      padding: float32 scalar, positions not in `labels`/`probs` that count as label 0 with
        prob 0 (the padding a cut batch no longer holds: the original counts it).
    """
    labels = tf.reshape(tf.cast(labels, tf.bool), [-1, 1])
    positive = tf.reshape(tf.cast(probs, tf.float32), [-1, 1]) > tf.constant(thresholds)[None]
    count = lambda mask: tf.reduce_sum(tf.cast(mask, tf.float32), axis=0)  # noqa: E731
    padding_positive = tf.cast(0.0 > tf.constant(thresholds), tf.float32) * padding
    return {"auc_tp": count(labels & positive), "auc_fn": count(labels & ~positive),
            "auc_tn": count(~labels & ~positive) + (padding - padding_positive),
            "auc_fp": count(~labels & positive) + padding_positive}


def auc_from_counts(tp, fn, tn, fp):
    """tf.metrics.auc (ROC, trapezoidal) from summed counts [T], in float32 as TF computes it."""
    tp, fn, tn, fp = (np.asarray(x, np.float32) for x in (tp, fn, tn, fp))
    eps = np.float32(_AUC_EPSILON)
    recall = (tp + eps) / (tp + fn + eps)
    fp_rate = fp / (fp + tn + eps)
    return np.float32(np.sum((fp_rate[:-1] - fp_rate[1:]) * (recall[:-1] + recall[1:])
                             / np.float32(2.0), dtype=np.float32))


class ElectraPretrainingTask(Task):
    """ELECTRA (or, without electra_objective, the masked LM) on the builder's records.

    Args:
      objective: `bert_tf.electra.pretraining.ElectraObjective`.
      generator_config: the generator's `BertConfig` (None for uniform_generator).
      max_seq_length: the records' length.
      draws: optional `masking.RandomDraws` for the model (tests fix the draws).
    """

    name = "electra_pretraining"
    eval_per_example_keys = ()

    def __init__(self, objective, generator_config, max_seq_length, draws=None):
        self.objective = objective
        self.generator_config = generator_config
        self.max_seq_length = max_seq_length
        self.draws = draws
        if objective.electra_objective:
            self.step_keys = ("total_loss", "masked_lm_loss", "disc_loss")
            self.log_names = ("loss", "mlm", "disc")
        else:
            self.step_keys = ("total_loss", "masked_lm_loss")
            self.log_names = ("loss", "mlm")
        # The original clips the gradient of a table only gathered from as an IndexedSlices;
        # the discriminator's word embeddings are one when no generator reads them (a uniform
        # or untied generator). Used only when the gradient does come as IndexedSlices.
        self.row_norm_variables = ("electra/embeddings/word_embeddings",)

    def build_model(self, config):
        return ElectraPretrainingModel(config, self.generator_config, self.objective,
                                       draws=self.draws)

    def describe(self):
        return {"task": self.name, "electra_objective": self.objective.electra_objective}

    def feature_spec(self, is_training):
        return {name: tf.io.FixedLenFeature([self.max_seq_length], tf.int64)
                for name in ("input_ids", "input_mask", "segment_ids")}

    def local_normalizers(self, features):
        """[masked-LM weight sum, input_mask sum, number of sequences] of this batch (the
        masked-LM weights follow from input_mask alone)."""
        mask = tf.cast(features["input_mask"], tf.float32)
        return tf.stack([
            masking.masked_lm_weight_sum(features["input_mask"], self.objective.mask_prob,
                                         self.objective.max_predictions_per_seq),
            tf.reduce_sum(mask),
            tf.cast(tf.shape(mask)[0], tf.float32),
        ])

    def compute_loss(self, outputs, features, normalizers):
        return electra_loss(outputs, features["input_mask"], self.objective,
                            masked_lm_weight_sum=normalizers[0], input_mask_sum=normalizers[1])

    def eval_outputs(self, outputs, features, losses, normalizers):
        weights = outputs["masked_lm_weights"]
        ids = outputs["masked_lm_ids"]
        preds = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        correct = lambda a, b: tf.cast(tf.equal(a, b), tf.float32)  # noqa: E731
        sums = {
            "total_loss": losses["total_loss"],
            "mlm_correct": tf.reduce_sum(weights * correct(preds, ids)),
            "mlm_weight": tf.reduce_sum(weights),
            "mlm_loss": tf.reduce_sum(weights * losses["masked_lm_example_loss"]),
        }
        if not self.objective.electra_objective:
            return sums
        mask = tf.cast(features["input_mask"], tf.int32)
        labels = outputs["disc_labels"]
        disc_preds = tf.cast(outputs["disc_logits"] > 0, tf.int32)
        disc_correct = correct(disc_preds, labels)
        mask_f = tf.cast(mask, tf.float32)
        sums.update(
            sampled_correct=tf.reduce_sum(weights * correct(outputs["sampled_ids"], ids)),
            disc_loss=tf.reduce_sum(losses["disc_example_loss"]),
            examples=tf.cast(tf.shape(mask)[0], tf.float32),
            disc_correct=tf.reduce_sum(mask_f * disc_correct),
            disc_weight=tf.reduce_sum(mask_f),
            precision_correct=tf.reduce_sum(tf.cast(disc_preds * mask, tf.float32) * disc_correct),
            precision_weight=tf.reduce_sum(tf.cast(disc_preds * mask, tf.float32)),
            recall_correct=tf.reduce_sum(tf.cast(labels * mask, tf.float32) * disc_correct),
            recall_weight=tf.reduce_sum(tf.cast(labels * mask, tf.float32)),
            **auc_counts(labels * mask, losses["disc_probs"] * mask_f,
                         padding=self._cut_padding(mask)),
        )
        return sums

    def _cut_padding(self, mask):
        """float32: the padding positions a batch cut by dynamic padding lost ([B, S] of
        max_seq_length S)."""
        return tf.cast(tf.shape(mask)[0] * (self.max_seq_length - tf.shape(mask)[1]), tf.float32)

    def finalize_eval(self, batches, global_step):
        keys = _SUM_KEYS + (_ELECTRA_SUM_KEYS if self.objective.electra_objective else ())
        sums = {k: np.sum([np.asarray(b[k], np.float64) for b in batches], axis=0) for k in keys}

        def ratio(a, b):
            return np.float32(a / b) if b else np.float32(0.0)

        results = {
            "global_step": int(global_step),
            "loss": ratio(sums["total_loss"], len(batches)),
            "masked_lm_accuracy": ratio(sums["mlm_correct"], sums["mlm_weight"]),
            "masked_lm_loss": ratio(sums["mlm_loss"], sums["mlm_weight"]),
        }
        if self.objective.electra_objective:
            results["sampled_masked_lm_accuracy"] = ratio(sums["sampled_correct"],
                                                          sums["mlm_weight"])
            if self.objective.disc_weight > 0:
                results.update(
                    disc_loss=ratio(sums["disc_loss"], sums["examples"]),
                    disc_auc=auc_from_counts(*(sums[k] for k in _AUC_KEYS)),
                    disc_accuracy=ratio(sums["disc_correct"], sums["disc_weight"]),
                    disc_precision=ratio(sums["precision_correct"], sums["precision_weight"]),
                    disc_recall=ratio(sums["recall_correct"], sums["recall_weight"]),
                )
        return results

    def predict_outputs(self, outputs, features):
        raise TrainingError("ELECTRA pretraining has no predict mode (do_train or do_eval)")


class ElectraPretrainer(Trainer):
    """The trainer with the ELECTRA task and schedule.

    Args:
      config: the discriminator's `BertConfig`.
      task: `ElectraPretrainingTask`.
      options: `ElectraOptions`.
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
    """

    def make_schedule(self):
        opts = self.options
        return WarmupLinearDecay(opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps,
                                 power=opts.lr_decay_power, warmup_multiplies=True)

    def train(self, step_callback=None):
        """Trains to num_train_steps from the latest checkpoint of output_dir (if any)."""
        return super().train(self.options.input_files, step_callback=step_callback)

    def evaluate(self):
        """Evaluates on up to max_eval_steps whole batches of the eval files (by default the
        training files), read in order; writes output_dir/eval_results.txt."""
        files = self.options.eval_input_files or self.options.input_files
        return super().evaluate(files, max_batches=self.options.max_eval_steps)


def objective_from_hparams(hp, vocab):
    """The `ElectraObjective` of `PretrainingHparams` `hp`, with the special ids of `vocab`
    ({token: id}); raises TrainingError naming the vocab file when one is missing."""
    special = families.get("electra").tokenizer.special_tokens
    missing = [t for t in (special.mask, special.cls, special.sep) if t not in vocab]
    if missing:
        raise TrainingError(f"vocab file {hp.vocab_file}: no {', '.join(missing)} entry (masking "
                            f"needs {special.mask}, and leaves {special.cls} and {special.sep} "
                            "alone)")
    return ElectraObjective(
        max_predictions_per_seq=hp.max_predictions_per_seq, mask_id=vocab[special.mask],
        cls_id=vocab[special.cls], sep_id=vocab[special.sep], mask_prob=hp.mask_prob,
        electra_objective=hp.electra_objective, electric_objective=hp.electric_objective,
        two_tower_generator=hp.two_tower_generator, uniform_generator=hp.uniform_generator,
        untied_generator_embeddings=hp.untied_generator_embeddings,
        untied_generator=hp.untied_generator, disallow_correct=hp.disallow_correct,
        temperature=hp.temperature, gen_weight=hp.gen_weight, disc_weight=hp.disc_weight)


def _check_records(input_files, max_seq_length):
    """The first record must have the three features of max_seq_length ints."""
    first = next(iter(tf.data.TFRecordDataset(input_files[:1]).take(1)), None)
    if first is None:
        raise TrainingError(f"{input_files[0]}: no record")
    try:
        example = tf.train.Example.FromString(first.numpy())
    except Exception:  # noqa: BLE001 (protobuf's DecodeError is not importable portably)
        raise TrainingError(f"{input_files[0]}: not a tf.train.Example record") from None
    feature = example.features.feature
    for name in ("input_ids", "input_mask", "segment_ids"):
        if name not in feature:
            raise TrainingError(f"{input_files[0]}: the records have no {name} (expected "
                                "build_pretraining_dataset's input_ids, input_mask, segment_ids)")
        length = len(feature[name].int64_list.value)
        if length != max_seq_length:
            raise TrainingError(f"{input_files[0]}: {name} has {length} values, the hparam "
                                f"max_seq_length is {max_seq_length}")


def run(hp, strategy=None, step_callback=None, **settings):
    """What `python -m bert_tf.electra.run_pretraining` does with `PretrainingHparams` `hp`:
    trains to num_train_steps (resuming from the latest checkpoint of hp.model_dir, the
    original's included) or evaluates, as do_train / do_eval say (exactly one, as the original).

    Args:
      settings: further `TrainerOptions` fields (mixed_precision, use_xla, seed, ...).
    Returns:
      (last checkpoint prefix or None, eval results or None).
    """
    from bert_tf.electra.config import discriminator_config, generator_config
    from bert_tf.text import VocabError, load_vocab
    from bert_tf.training import input_pipeline

    if hp.do_train == hp.do_eval:
        raise TrainingError("exactly one of the hparams do_train and do_eval must be true, got "
                            f"do_train={hp.do_train}, do_eval={hp.do_eval}")
    config, gen_config = discriminator_config(hp), generator_config(hp)
    try:
        vocab = load_vocab(hp.vocab_file)
    except (VocabError, OSError) as e:
        raise TrainingError(f"vocab file {hp.vocab_file}: {e}") from None
    if len(vocab) > config.vocab_size:
        raise TrainingError(f"vocab file {hp.vocab_file} has {len(vocab)} entries, more than the "
                            f"hparam vocab_size={config.vocab_size}")
    objective = objective_from_hparams(hp, vocab)
    try:
        files = input_pipeline.expand_input_patterns(hp.pretrain_tfrecords)
    except input_pipeline.InputError as e:
        raise TrainingError(f"pretrain_tfrecords: {str(e).split(': ', 1)[-1]}") from None
    _check_records(files, hp.max_seq_length)
    options = ElectraOptions(
        output_dir=hp.model_dir, input_files=files, train_batch_size=hp.train_batch_size,
        eval_batch_size=hp.eval_batch_size, learning_rate=hp.learning_rate,
        num_train_steps=hp.num_train_steps, num_warmup_steps=hp.num_warmup_steps,
        save_checkpoints_steps=hp.save_checkpoints_steps,
        iterations_per_loop=hp.iterations_per_loop,
        keep_checkpoint_max=hp.keep_checkpoint_max or 0,
        weight_decay_rate=hp.weight_decay_rate, lr_decay_power=hp.lr_decay_power,
        max_seq_length=hp.max_seq_length, max_eval_steps=hp.num_eval_steps, **settings)
    task = ElectraPretrainingTask(objective, gen_config, hp.max_seq_length)
    tf.io.gfile.makedirs(hp.model_dir)
    trainer = ElectraPretrainer(config, task, options, strategy)
    # The discriminator's config, for fine-tuning and feature extraction (kept if present:
    # the trainer checks a resumed model against it).
    config_path = f"{hp.model_dir}/bert_config.json"
    if trainer.is_chief and not tf.io.gfile.exists(config_path):
        config.to_json_file(config_path)
    if hp.do_train:
        return trainer.train(step_callback=step_callback), None
    checkpoint = trainer.restore_weights()
    return checkpoint, trainer.evaluate()
