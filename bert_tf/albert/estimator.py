"""What google-research/albert's TPUEstimator leaves in an output_dir around each checkpoint,
shared by ALBERT's pretraining and fine-tuning trainers: a `.meta` file beside every
model.ckpt-N (its eval loops copy and rename it with the checkpoint), the copies to
model.ckpt-best.* on a better score, and `create_optimizer`'s two optimizers.
"""

import os

import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, files
from bert_tf.training.lamb import AlbertLamb
from bert_tf.training.optimizer import AdamWeightDecay

BEST_NAME = "model.ckpt-best"
# A checkpoint's files in the order the original's loops copy and remove them.
CHECKPOINT_FILES = ("meta", "data-00000-of-00001", "index")
# `--optimizer`: `lamb`, ALBERT's LAMB (no bias correction, slots adam_m / adam_v); `adamw`,
# BERT's AdamWeightDecay.
OPTIMIZERS = {"adamw": AdamWeightDecay, "lamb": AlbertLamb}


def variables_meta_graph(variables):
    """The serialized MetaGraphDef of a TF1 graph holding `variables` ({name: (shape, dtype)},
    `global_step` as the graph's global step) and a Saver of them: what `.meta` files hold
    for a checkpoint of those variables (without the model's computation)."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        created = []
        for name, (shape, dtype) in variables.items():
            if name == checkpoints.GLOBAL_STEP:
                created.append(v1.train.get_or_create_global_step())
            else:
                created.append(v1.get_variable(
                    name, shape, tf.as_dtype(dtype), initializer=v1.zeros_initializer(),
                    trainable=tf.as_dtype(dtype).is_floating and "/adam_" not in name,
                    use_resource=False))
        saver = v1.train.Saver(created)
        meta = v1.train.export_meta_graph(graph=graph, saver_def=saver.as_saver_def(),
                                          clear_devices=True)
    return meta.SerializeToString()


class MetaGraphCheckpoints:
    """A `Trainer` mixin: every checkpoint it saves has its model.ckpt-N.meta beside it,
    written first (chief), and removed again if the checkpoint itself fails."""

    _meta = None

    def checkpoint_tensors(self):
        """{name: (shape, dtype name)} of every tensor a checkpoint of this run holds."""
        table = checkpoints.original_variable_map(self.model)
        out = {name: (list(v.shape), "float32") for name, v in table.items()}
        for slot, variables in self.optimizer.slot_variables().items():
            out.update({f"{name}/{slot}": (list(v.shape), "float32")
                        for name, v in variables.items()})
        for name, value in (self.loss_scale.get_state() if self.loss_scale else {}).items():
            out[name] = (list(value.shape), value.dtype.name)
        out[checkpoints.GLOBAL_STEP] = ([], "int64")
        return out

    def save(self, stream=None):
        """`Trainer.save`, with model.ckpt-N.meta written first (chief)."""
        prefix = os.path.join(self.options.output_dir,
                              f"model.ckpt-{int(self.global_step.numpy())}")
        if self.is_chief:
            if self._meta is None:
                self._meta = variables_meta_graph(self.checkpoint_tensors())
            tf.io.gfile.makedirs(self.options.output_dir)
            files.write_atomic(prefix + ".meta", self._meta)
        try:
            return super().save(stream)
        except BaseException:
            if self.is_chief and not tf.io.gfile.exists(prefix + ".index"):
                files.remove(prefix + ".meta")
            raise


def copy_to_best(prefix):
    """Copies checkpoint `prefix`'s files to model.ckpt-best.* beside it, in the original's
    order (.meta, data, index; each under a temporary name, then renamed; a file the
    checkpoint lacks is skipped). Returns [(source, target)] of the files copied."""
    best = os.path.join(os.path.dirname(prefix), BEST_NAME)
    copied = []
    for ext in CHECKPOINT_FILES:
        source, target = f"{prefix}.{ext}", f"{best}.{ext}"
        if not tf.io.gfile.exists(source):
            if tf.io.gfile.exists(target):  # not the copied checkpoint's
                files.remove(target)
            continue
        logging.info("saving %s to %s", source, target)
        with files.atomic_path(target) as temp:
            tf.io.gfile.copy(source, temp, overwrite=True)
        copied.append((source, target))
    return copied
