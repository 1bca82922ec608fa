"""What a task (pretraining, classification, SQuAD, tagging) gives the task-agnostic trainer.

The trainer (`bert_tf.training.trainer.Trainer`) owns the strategy, the step, precision, the
optimizer, checkpoints, resume, logs and the eval/predict loops; a `Task` owns everything that
depends on what is being learned: the model (encoder + head), the records, the loss, the eval
metrics and the predict outputs.

Losses are computed as shares of the GLOBAL batch: the trainer all-reduces the task's
`local_normalizers` (e.g. the number of sequences, the masked-LM weight sum) before the loss,
so summing the task's loss over replicas and gradient-accumulation micro-batches gives exactly
the loss of the whole batch on one device.
"""

import tensorflow as tf


class Task:
    """Base class of the tasks. Subclasses set the class attributes and override the methods.

    Attributes:
      name: the task's name, saved in output_dir (`task.json`) with `describe()`.
      step_keys: the loss shares a training step reports (summed over replicas); the first is
        the loss that is minimised. Each is logged and written to TensorBoard.
      log_names: short names of `step_keys` for the progress line.
      eval_per_example_keys: keys of `eval_outputs` that are per-example tensors [B, ...]
        (gathered over replicas); the other keys are scalars summed over replicas.
      unused_variable_prefixes: checkpoint names (prefixes) of encoder variables the task's
        loss does not use, e.g. the pooler under a SQuAD head. As in the original, they get
        neither updates nor optimizer slots. Written under the original's scope `bert/`, they
        name the same variables under the encoder's own scope (RoBERTa's `roberta/`):
        `unused_prefixes`.
      row_norm_variables: variables whose gradient the original clips as IndexedSlices: its
        part of the global norm is the sum of its squared rows, one row per token occurrence
        (TF1's clip_by_global_norm of an IndexedSlices), not the norm of the summed gradient.
        BERT's original gathers only the word embeddings (token types go through a one-hot
        matmul), ALBERT's both; BERT's pretraining has none, since its tied masked-LM output
        adds a dense part and TF1 then sums the whole gradient into a dense tensor before
        clipping. None (the default, the fine-tuning tasks'): the tables the model's encoder
        declares gathered (`gathered_tables`).
      sequence_keys: the features whose axis 1 is the sequence ([B, max_seq_length, ...]),
        or whose records hold several sequences (the spec's input_ids [C, max_seq_length]:
        then the features are [B, C, max_seq_length] and their last axis is cut).
        With dynamic padding (`bert_tf.training.padding`) the input pipeline cuts them to the
        batch's longest `input_mask`, rounded up; the other features pass unchanged.
      position_keys: features holding positions into the sequence (masked_lm_positions): a
        cut batch keeps every position they name.
      cut_training_batches: whether training batches may be cut: only when the loss is the
        same on the cut batch (positions past input_mask add exact zeros to it).
      cut_predict_batches: whether eval and predict batches may be cut: only when what the
        caller reads of the outputs is the same on the cut batch (SQuAD's n-best ranks the
        logits of padded positions too, as the original's: not cut unless asked).
      sequence_outputs: {key: fill} of the eval/predict outputs with a sequence axis 1; the
        trainer pads them back to max_seq_length with `fill` (a cut batch computes no value
        past its length), so callers always see [B, max_seq_length, ...].
      eval_by_length: every `eval_outputs` key is per-example (in `eval_per_example_keys`) and
        `finalize_eval` reads nothing but them, so the trainer may evaluate the records in
        length order and hand `finalize_eval` the batches of the input order.
    """

    name = "task"
    step_keys = ("total_loss",)
    log_names = ("loss",)
    eval_per_example_keys = ()
    unused_variable_prefixes = ()
    row_norm_variables = None
    sequence_keys = ("input_ids", "input_mask", "segment_ids")
    position_keys = ()
    cut_training_batches = True
    cut_predict_batches = True
    sequence_outputs = {}
    eval_by_length = False
    # The records' sequence length (set by the tasks' constructors).
    max_seq_length = None

    def unused_prefixes(self, encoder_scope):
        """`unused_variable_prefixes` with `bert/` read as `<encoder_scope>/`."""
        return tuple(encoder_scope + p[len("bert"):] if p.startswith("bert/") else p
                     for p in self.unused_variable_prefixes)

    def build_model(self, config):
        """The keras.Model (encoder `model.bert` + head) of this task; variables created."""
        raise NotImplementedError

    def describe(self):
        """What makes a checkpoint of this task (name, labels...): a JSON-able dict."""
        return {"task": self.name}

    def feature_spec(self, is_training):
        """{feature name: tf.io.FixedLenFeature} of the task's TFRecords."""
        raise NotImplementedError

    def record_parser(self, is_training):
        """None (records parsed by `feature_spec`), or f(serialized, epoch, index) -> {name:
        tensor} of one record, given its epoch and index by the input pipeline
        (`input_pipeline.make_dataset`; RoBERTa's dynamic masking)."""
        return None

    def local_normalizers(self, features):
        """float32 [K] of this replica's additive batch statistics (the trainer all-reduces
        them); by default the number of sequences."""
        return tf.reshape(tf.cast(tf.shape(features["input_ids"])[0], tf.float32), [1])

    def compute_loss(self, outputs, features, normalizers):
        """dict with every `step_keys` entry: this replica's share of the global batch's loss.

        Args:
          outputs: the model's outputs dict.
          features: the replica's batch.
          normalizers: float32 [K], `local_normalizers` summed over the global batch.
        """
        raise NotImplementedError

    def eval_outputs(self, outputs, features, losses, normalizers):
        """dict of tensors for the eval metrics of one batch (see `eval_per_example_keys`)."""
        raise NotImplementedError

    def finalize_eval(self, batches, global_step):
        """The eval results dict (written sorted to eval_results.txt).

        Args:
          batches: list, one dict per eval batch of numpy values: the summed scalars and the
            per-example arrays of `eval_outputs`.
          global_step: the step of the evaluated weights.
        """
        raise NotImplementedError

    def predict_outputs(self, outputs, features):
        """dict of per-example tensors [B, ...] a prediction returns."""
        raise NotImplementedError

    def step_log(self, means):
        """The task's part of the progress line, from the mean of each step key."""
        return "  ".join(f"{name} {means[key]:.4f}" for key, name in
                         zip(self.step_keys, self.log_names))
