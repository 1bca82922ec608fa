"""`BertTaskModel`: the encoder with one fine-tuning head (classifier, SQuAD span, tags)."""

import keras

from bert_tf import families
from bert_tf.heads import FINE_TUNING_HEADS, of_layer
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs


class BertTaskModel(keras.Model):
    """The encoder of the config's family (`self.bert`: a `BertModel`, `ElectraModel`...) plus
    `head` (`self.head`), a fine-tuning head layer of `bert_tf.layers.heads`.

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S] (other keys
    are ignored). Returns the encoder's outputs (`embedding_output`, `all_encoder_layers`,
    `sequence_output`, `pooled_output`) updated with the head's (e.g. `logits` [B, C]).
    All variables exist once the model is constructed; `checkpoint_variables` names them.
    """

    def __init__(self, config, head, **kwargs):
        if isinstance(config, dict):
            config = families.config_from_dict(config)
        if isinstance(head, dict):
            declared = {h.layer: h for h in FINE_TUNING_HEADS.values()}[head["class_name"]]
            head = declared.layer_class().from_config(head["config"])
        kwargs.setdefault("name", "bert_task")
        super().__init__(**kwargs)
        self.config = config
        self.bert = families.build_encoder(config, name="bert")
        self.head = head
        self.build()

    def build(self, input_shape=None):
        self.head.build()
        self.built = True

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        outputs = dict(self.bert(inputs, training=training))
        outputs.update(self.head(outputs, training=training))
        return outputs

    def checkpoint_variables(self):
        """{original name: variable}: the encoder's, then the head's under its scope."""
        return {**self.bert.checkpoint_variables(),
                **self.head.checkpoint_variables(of_layer(self.head).scope)}

    def required_checkpoint_scopes(self):
        """Name prefixes every variable of which a checkpoint of this model must hold (the
        encoder's; the head may be absent, as in a pretrained checkpoint)."""
        return self.bert.required_checkpoint_scopes()

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "head": {"class_name": type(self.head).__name__, "config": self.head.get_config()},
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_pretrained(cls, path, head=None):
        """The model with the weights of a local folder: a Google release or a Hugging Face
        Hub snapshot (see `BertModel.from_pretrained`). Without `head`, the checkpoint's
        fine-tuning head (classifier, SQuAD span or tagging, with its number of labels); with
        one, its weights come from the checkpoint when they are there."""
        # An import upward, at call time: the Hub bridge builds and loads models of this layer.
        from bert_tf.hf.convert import load_pretrained, pretrained_head

        return load_pretrained(path, lambda config, folder: cls(
            config, head if head is not None else pretrained_head(folder, config)))
