"""ELECTRA's pretraining model and loss (google-research/electra's `run_pretraining.py`
`PretrainingModel`): masking, the generator, Gumbel-max sampling, the discriminator.

One call of `ElectraPretrainingModel` on a batch of the builder's records (`input_ids`,
`input_mask`, `segment_ids`):
  1. masks it in the graph (`bert_tf.electra.masking.mask`);
  2. runs the generator (a small `ElectraModel` under `generator/`, sharing the discriminator's whole
     `electra/embeddings` layer unless `untied_generator_embeddings`) and its masked-LM head
     `generator_predictions/` (tied to the word embeddings) on the masked positions;
  3. samples a token at each masked position from softmax(logits / temperature) (Gumbel-max;
     with `disallow_correct` the original token loses 1000 in the logits) and writes the samples
     into the unmasked sequence; a position is "replaced" when it was written AND differs from
     the original token;
  4. runs the discriminator (`ElectraModel` under `electra/`) and its head
     `discriminator_predictions/` (dense H->H + hidden_act, dense_1 H->1) on every position.
`electra_objective=False` is the original's masked LM only: the generator is the full-size
network under `electra/` and there is no discriminator. `uniform_generator` replaces the
generator by uniform logits. `electra_loss` gives gen_weight * masked-LM loss + disc_weight *
the discriminator's sigmoid cross-entropy over every `input_mask` position.
"""

import dataclasses

import keras
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.electra import masking
from bert_tf.electra.model import ElectraModel
from bert_tf.layers.activations import get_activation
from bert_tf.layers.checkpoint_names import dense_variables, layer_norm_variables
from bert_tf.layers.heads import MaskedLMHead
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs

# The original adds these to the loss normalisers.
_LOSS_DENOMINATOR_EPSILON = 1e-6


class ElectraError(ValueError):
    """Settings the ELECTRA model cannot be built with; the message names the hparam."""


@dataclasses.dataclass(frozen=True)
class ElectraObjective:
    """The hparams of configure_pretraining.py that shape the model and its loss (same names).

    `mask_id`, `cls_id`, `sep_id` are the vocabulary's ids of [MASK], [CLS], [SEP].
    """

    max_predictions_per_seq: int
    mask_id: int
    cls_id: int
    sep_id: int
    mask_prob: float = 0.15
    electra_objective: bool = True
    electric_objective: bool = False
    two_tower_generator: bool = False
    uniform_generator: bool = False
    untied_generator_embeddings: bool = False
    untied_generator: bool = True
    disallow_correct: bool = False
    temperature: float = 1.0
    gen_weight: float = 1.0
    disc_weight: float = 50.0

    def problems(self):
        problems = []
        if self.electric_objective or self.two_tower_generator:
            problems.append(
                "electric_objective / two_tower_generator (the Electric objective) are not "
                "supported by bert_tf: set both to false (ELECTRA or the masked LM)")
        if self.uniform_generator and not self.electra_objective:
            problems.append("uniform_generator with electra_objective false leaves nothing to "
                            "train (no generator, no discriminator)")
        if not 0 < self.mask_prob < 1:
            problems.append(f"mask_prob must be in (0, 1), got {self.mask_prob}")
        if self.max_predictions_per_seq <= 0:
            problems.append("max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length) "
                            f"must be positive, got {self.max_predictions_per_seq}")
        if not self.temperature > 0:
            problems.append(f"temperature must be positive, got {self.temperature}")
        return problems

    @property
    def special_ids(self):
        return (self.sep_id, self.cls_id, self.mask_id)


class DiscriminatorHead(keras.layers.Layer):
    """Replaced-token logits: `dense` [H, H] + hidden_act (truncated normal), `dense_1` [H, 1]
    (Glorot uniform, the original's tf.layers.dense default). [B, S, H] -> float32 [B, S]."""

    def __init__(self, hidden_size, hidden_act="gelu_exact", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), name="dense")
        # H -> 1 is tiny: kept in float32 so the logits are.
        self.dense_1 = keras.layers.Dense(1, kernel_initializer="glorot_uniform",
                                          dtype="float32", name="dense_1")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.dense_1.build((None, None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        hidden = tf.cast(self.dense(sequence_output), tf.float32)
        return tf.squeeze(self.dense_1(hidden), -1)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, hidden_act=self.hidden_act,
                      initializer_range=self.initializer_range)
        return config


class ElectraPretrainingModel(keras.Model):
    """ELECTRA's generator + discriminator (or, without electra_objective, its masked LM).

    Args:
      config: the discriminator's `BertConfig` (model_type "electra"); `self.config`, the one
        written beside checkpoints as bert_config.json.
      generator_config: the generator's `BertConfig` (ignored without electra_objective, with
        uniform_generator and without untied_generator); with tied embeddings its
        embedding_size must be the discriminator's.
      objective: `ElectraObjective`.
      draws: optional `masking.RandomDraws` (tests pass fixed draws).

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S]. Returns a
    dict: `masked_input_ids` [B, S], `masked_lm_positions`, `masked_lm_ids` int32 [B, N],
    `masked_lm_weights` float32 [B, N], `mlm_logits` float32 [B, N, V]; with electra_objective
    also `sampled_ids` int32 [B, N], `fake_input_ids` int32 [B, S], `disc_labels` int32 [B, S]
    (1 = replaced) and `disc_logits` float32 [B, S].

    Attributes (None where the objective has none): `discriminator`, `generator` (ElectraModel),
    `generator_head` (MaskedLMHead), `discriminator_head` (DiscriminatorHead).
    """

    def __init__(self, config, generator_config, objective, draws=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if isinstance(generator_config, dict):
            generator_config = BertConfig.from_dict(generator_config)
        problems = objective.problems()
        if config.model_type != "electra":
            problems.append(f'the discriminator config must have model_type "electra", got '
                            f"{config.model_type!r}")
        if problems:
            raise ElectraError("; ".join(problems))
        kwargs.setdefault("name", "electra_pretraining")
        super().__init__(**kwargs)
        self.config = config
        self.generator_config = generator_config
        self.objective = objective
        self.draws = draws if draws is not None else masking.RandomDraws(name="draws")
        self.discriminator = self.discriminator_head = None
        self.generator = self.generator_head = None
        if objective.electra_objective:
            self.discriminator = ElectraModel(config, name="electra")
            self.discriminator_head = DiscriminatorHead(
                config.hidden_size, config.hidden_act, config.initializer_range,
                name="discriminator_predictions")
            if not objective.untied_generator:
                # The original builds the full-size network as the generator and reuses its
                # variables for the discriminator: one network.
                self.generator = self.discriminator
            elif not objective.uniform_generator:
                if generator_config is None:
                    raise ElectraError("the ELECTRA objective needs a generator config")
                if generator_config.model_type != "electra":
                    raise ElectraError('the generator config must have model_type "electra"')
                shared = None
                if not objective.untied_generator_embeddings:
                    shared = self.discriminator.embeddings
                    if generator_config.embedding_size != config.embedding_size:
                        raise ElectraError(
                            f"tied generator embeddings: the generator's embedding_size "
                            f"({generator_config.embedding_size}) must be the discriminator's "
                            f"({config.embedding_size})")
                self.generator = ElectraModel(generator_config, embeddings=shared, name="generator")
        else:
            self.generator = ElectraModel(config, name="electra")
        if self.generator is not None:
            gen = self.generator.config
            self.generator_head = MaskedLMHead(
                gen.vocab_size, gen.hidden_size, gen.hidden_act, gen.initializer_range,
                layer_norm_eps=gen.layer_norm_eps, embedding_size=gen.embedding_size,
                name="generator_predictions")
        self.build()

    def build(self, input_shape=None):
        if self.generator_head is not None:
            self.generator_head.build()
        if self.discriminator_head is not None:
            self.discriminator_head.build()
        self.built = True

    def _generator_logits(self, masked, features, training):
        """float32 [B, N, V]."""
        positions = masked["masked_lm_positions"]
        if self.generator is None:  # uniform_generator
            return tf.zeros(tf.concat([tf.shape(positions), [self.config.vocab_size]], 0))
        outputs = self.generator({
            "input_ids": masked["input_ids"], "input_mask": features["input_mask"],
            "segment_ids": features["segment_ids"]}, training=training)
        logits = self.generator_head.logits(outputs["sequence_output"], positions,
                                            self.generator.embedding_table)
        return tf.reshape(logits, tf.concat([tf.shape(positions), [-1]], 0))

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        objective = self.objective
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        features = {"input_mask": tf.cast(inputs["input_mask"], tf.int32),
                    "segment_ids": tf.cast(inputs["segment_ids"], tf.int32)}
        masked = masking.mask(
            input_ids, features["input_mask"], self.draws, mask_id=objective.mask_id,
            special_ids=objective.special_ids, mask_prob=objective.mask_prob,
            max_predictions_per_seq=objective.max_predictions_per_seq)
        logits = self._generator_logits(masked, features, training)
        outputs = {
            "masked_input_ids": masked["input_ids"],
            "masked_lm_positions": masked["masked_lm_positions"],
            "masked_lm_ids": masked["masked_lm_ids"],
            "masked_lm_weights": masked["masked_lm_weights"],
            "mlm_logits": logits,
        }
        if not objective.electra_objective:
            return outputs
        disallow = None
        if objective.disallow_correct:
            disallow = tf.one_hot(masked["masked_lm_ids"], self.config.vocab_size,
                                  dtype=tf.float32)
        sampled = tf.stop_gradient(masking.sample_from_softmax(
            logits / objective.temperature, self.draws, disallow=disallow))
        # The original first writes the true tokens back (unmask) and then the samples; writing
        # the true tokens back gives exactly `input_ids` (same positions, same skip of
        # position 0, the floor-mean of equal ids), so the samples go into `input_ids`.
        fake_ids, written = masking.scatter_update(input_ids, sampled,
                                                   masked["masked_lm_positions"])
        labels = written * (1 - tf.cast(tf.equal(fake_ids, input_ids), tf.int32))
        disc_outputs = self.discriminator(dict(features, input_ids=fake_ids), training=training)
        outputs.update(
            sampled_ids=sampled,
            fake_input_ids=fake_ids,
            disc_labels=labels,
            disc_logits=self.discriminator_head(disc_outputs["sequence_output"]),
        )
        return outputs

    def checkpoint_variables(self):
        """google-research/electra's names, in the order its graph creates the variables: the
        generator first (with tied embeddings it creates `electra/embeddings`), its head, then
        the discriminator and its head."""
        table = {}
        generator, discriminator = self.generator, self.discriminator
        if generator is not None:
            if discriminator is None or generator is discriminator:
                # The masked LM alone (electra_objective false), or one network for both
                # (untied_generator false): the full-size network under electra/.
                table.update(generator.checkpoint_variables())
            else:
                shared = generator.embeddings is discriminator.embeddings
                if shared:
                    table.update(discriminator.embeddings.checkpoint_variables(
                        f"{discriminator.scope}/embeddings"))
                table.update(generator.checkpoint_variables("generator", embeddings=not shared))
            head = self.generator_head
            table.update(dense_variables("generator_predictions/dense", head.dense))
            table.update(layer_norm_variables("generator_predictions/LayerNorm", head.layer_norm))
            table["generator_predictions/output_bias"] = head.output_bias
        if discriminator is not None:
            if generator is not discriminator:
                shared = generator is not None and generator.embeddings is discriminator.embeddings
                table.update(discriminator.checkpoint_variables(embeddings=not shared))
            head = self.discriminator_head
            table.update(dense_variables("discriminator_predictions/dense", head.dense))
            table.update(dense_variables("discriminator_predictions/dense_1", head.dense_1))
        return table

    def required_checkpoint_scopes(self):
        """Name prefixes every variable of which a checkpoint of this model must hold."""
        return ("electra/", "generator/")

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "generator_config": (self.generator_config.to_dict()
                                 if self.generator_config is not None else None),
            "objective": dataclasses.asdict(self.objective),
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config, objective=ElectraObjective(**config["objective"]))
        return cls(**config)


def electra_loss(outputs, input_mask, objective, masked_lm_weight_sum=None, input_mask_sum=None):
    """The original's total loss: gen_weight * masked-LM loss (+ disc_weight * discriminator
    loss with electra_objective).

    Args:
      outputs: the dict of `ElectraPretrainingModel`.
      input_mask: int [B, S] of the batch.
      objective: `ElectraObjective`.
      masked_lm_weight_sum, input_mask_sum: optional float32 scalars, the sums of the
        masked-LM weights and of input_mask over the whole GLOBAL batch; given, the losses are
        this part's share of the global batch's loss (they add up over replicas and
        micro-batches). By default this batch's own sums.
    Returns:
      dict of float32: `total_loss`, `masked_lm_loss` (scalars), `masked_lm_example_loss`
      [B, N]; with electra_objective `disc_loss` (scalar), `disc_example_loss` [B] (the
      example's mean over its input_mask positions) and `disc_probs` [B, S].
    """
    weights = outputs["masked_lm_weights"]
    log_probs = tf.nn.log_softmax(outputs["mlm_logits"])
    mlm_example_loss = -tf.gather(log_probs, outputs["masked_lm_ids"], batch_dims=2)
    if masked_lm_weight_sum is None:
        masked_lm_weight_sum = tf.reduce_sum(weights)
    mlm_loss = tf.reduce_sum(weights * mlm_example_loss) / (
        masked_lm_weight_sum + _LOSS_DENOMINATOR_EPSILON)
    losses = {
        "masked_lm_loss": mlm_loss,
        "masked_lm_example_loss": mlm_example_loss,
        "total_loss": objective.gen_weight * mlm_loss,
    }
    if not objective.electra_objective:
        return losses
    mask = tf.cast(input_mask, tf.float32)
    logits = outputs["disc_logits"]
    per_token = tf.nn.sigmoid_cross_entropy_with_logits(
        logits=logits, labels=tf.cast(outputs["disc_labels"], tf.float32)) * mask
    if input_mask_sum is None:
        input_mask_sum = tf.reduce_sum(mask)
    disc_loss = tf.reduce_sum(per_token) / (_LOSS_DENOMINATOR_EPSILON + input_mask_sum)
    losses.update(
        disc_loss=disc_loss,
        disc_example_loss=tf.reduce_sum(per_token, -1) / (
            _LOSS_DENOMINATOR_EPSILON + tf.reduce_sum(mask, -1)),
        disc_probs=tf.nn.sigmoid(logits),
        total_loss=losses["total_loss"] + objective.disc_weight * disc_loss,
    )
    return losses
