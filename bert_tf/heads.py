"""The fine-tuning heads, each declared once: its layer, its checkpoint scope, its Hub names.

A head's `kind` ("classifier", "squad", "tagging") is the name the scripts' tasks, `--task` of
export and of the Hub bridge, and `task.json` use; every one of them finds the head here. Its
layer is a class of `bert_tf.layers.heads` (imported when a head is built: this module is pure
Python, so that command lines can list the heads before TensorFlow is imported).

Scopes: the original run_classifier.py creates `output_weights` / `output_bias` at the top
level, run_squad.py under `cls/squad`; token classification is not in the original, so its
scope is one no original checkpoint has.
"""

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Head:
    """One fine-tuning head.

    Attributes:
      kind: its name (the key of FINE_TUNING_HEADS).
      layer: the name of its layer class in `bert_tf.layers.heads`.
      scope: the prefix of its `output_weights` / `output_bias` in a checkpoint.
      num_labels_axis: None, or the axis of `output_weights` that is the number of labels
        (a labelled head's layer takes `num_labels`).
      hub_rows: (Hub name, name under `scope`, transposed, Hub shape letters) of each weight,
        Transformers' names (C = the number of labels).
      hub_class_suffix: the Transformers class is the family's prefix + this
        (`Bert` + `ForSequenceClassification`).
      hub_has_pooler: whether that Transformers class has the encoder's pooler.
    """

    kind: str
    layer: str
    scope: str
    num_labels_axis: int | None
    hub_rows: tuple
    hub_class_suffix: str
    hub_has_pooler: bool

    def layer_class(self):
        return getattr(importlib.import_module("bert_tf.layers.heads"), self.layer)

    def build(self, config, num_labels=None, **kwargs):
        """A new layer of this head for an encoder of `config` (`num_labels` for a labelled
        head), named `kind` unless `name` is given."""
        args = dict(hidden_size=config.hidden_size, initializer_range=config.initializer_range)
        if self.num_labels_axis is not None:
            args["num_labels"] = num_labels
        kwargs.setdefault("name", self.kind)
        return self.layer_class()(**args, **kwargs)


CLASSIFIER = Head(
    kind="classifier", layer="ClassifierHead", scope="", num_labels_axis=0,
    hub_rows=(("classifier.weight", "output_weights", False, "CH"),
              ("classifier.bias", "output_bias", False, "C")),
    hub_class_suffix="ForSequenceClassification", hub_has_pooler=True)
SQUAD = Head(
    kind="squad", layer="SpanHead", scope="cls/squad/", num_labels_axis=None,
    hub_rows=(("qa_outputs.weight", "output_weights", False, "2H"),
              ("qa_outputs.bias", "output_bias", False, "2")),
    hub_class_suffix="ForQuestionAnswering", hub_has_pooler=False)
TAGGING = Head(
    kind="tagging", layer="TokenClassifierHead", scope="bert_tf/tagging/", num_labels_axis=0,
    hub_rows=(("classifier.weight", "output_weights", False, "CH"),
              ("classifier.bias", "output_bias", False, "C")),
    hub_class_suffix="ForTokenClassification", hub_has_pooler=False)

# kind -> Head, in the order `--task` flags list them.
FINE_TUNING_HEADS = {head.kind: head for head in (CLASSIFIER, SQUAD, TAGGING)}


def of_layer(layer):
    """The `Head` of a head layer (by its `kind`)."""
    return FINE_TUNING_HEADS[layer.kind]
