"""`BertConfig`: the hyper-parameters of a BERT model, as in `bert_config.json`."""

import copy
import json
import os

from bert_tf import families, files

# The keys of a released bert_config.json, in the order the original writes them.
_REQUIRED_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)
_POSITIVE_INT_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_PROBABILITY_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob")
# "gelu" is the original's: the tanh approximation. "gelu_exact" is the erf form, which Hugging
# Face configs call "gelu" and ELECTRA computes; the original code refuses it ("Unsupported
# activation") rather than computing the other function.
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")
# The original's LayerNorm epsilon (tf.contrib.layers.layer_norm); a config may set another
# with the optional key `layer_norm_eps`, which the original code ignores.
DEFAULT_LAYER_NORM_EPS = 1e-12


class BertConfigError(families.ConfigError):
    """A bert_config.json (or dict) that does not describe a valid BERT model."""


class BertConfig:
    """Configuration of a BERT model; every key of the original `bert_config.json`.

    Keys the original does not know (e.g. those of the multilingual releases) are kept as
    attributes and written back by `to_dict`/`to_json_string`. Of those, `layer_norm_eps`
    (default 1e-12, the original's) sets the epsilon of every LayerNorm; `embedding_size` (E,
    default hidden_size; ELECTRA's) the width of the embeddings, projected to hidden_size by a
    dense `embeddings_project` when it differs; `model_type` (a name of
    `MODEL_TYPES`, default "bert") the family. Each is written back only when it was given.
    """

    # The families whose configs this class describes (a subclass names its own).
    MODEL_TYPES = ("bert", "electra")
    # The LayerNorm epsilon of a config without `layer_norm_eps` (a family may have another).
    default_layer_norm_eps = DEFAULT_LAYER_NORM_EPS

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
        source="BertConfig",
        **extra,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self._extra_keys = list(extra)
        for key, value in extra.items():
            setattr(self, key, value)
        self.layer_norm_eps = extra.get("layer_norm_eps", self.default_layer_norm_eps)
        # ELECTRA's hparams write null for "the hidden size".
        embedding_size = extra.get("embedding_size")
        self.embedding_size = hidden_size if embedding_size is None else embedding_size
        self.model_type = extra.get("model_type", families.DEFAULT)
        self._validate(source)

    def _validate(self, source):
        problems = []
        for key in _POSITIVE_INT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                problems.append(f"{key} must be a positive integer, got {value!r}")
        for key in _PROBABILITY_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                problems.append(f"{key} must be a number in [0, 1), got {value!r}")
        init = self.initializer_range
        if isinstance(init, bool) or not isinstance(init, (int, float)) or init <= 0:
            problems.append(f"initializer_range must be a positive number, got {init!r}")
        eps = self.layer_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
            problems.append(f"layer_norm_eps must be a number in (0, 1), got {eps!r}")
        emb = self.embedding_size
        if isinstance(emb, bool) or not isinstance(emb, int) or emb <= 0:
            problems.append(f"embedding_size must be a positive integer, got {emb!r}")
        if self.model_type not in self.MODEL_TYPES:
            problems.append(f"model_type must be one of {', '.join(self.MODEL_TYPES)}, got "
                            f"{self.model_type!r}")
        if self.hidden_act not in ACTIVATIONS:
            problems.append(f"hidden_act must be one of {', '.join(ACTIVATIONS)}, got {self.hidden_act!r}")
        if not problems and self.hidden_size % self.num_attention_heads:
            problems.append(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if problems:
            raise BertConfigError(f"{source}: " + "; ".join(problems))

    @property
    def attention_head_size(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def max_sequence_length(self):
        """The longest sequence the encoder takes: max_position_embeddings (a family whose
        positions do not start at 0, RoBERTa, takes fewer)."""
        return self.max_position_embeddings

    @property
    def mlm_hidden_act(self):
        """The activation of the masked-LM head's transform: hidden_act, as the original's
        run_pretraining.py (RoBERTa's lm_head always takes the exact GELU)."""
        return self.hidden_act

    @property
    def num_encoder_outputs(self):
        """How many tensors the encoder's `all_encoder_layers` holds (one per block run)."""
        return self.num_hidden_layers

    @classmethod
    def from_dict(cls, json_object, source="bert config"):
        """Builds a config from a dict holding every key of `bert_config.json`."""
        if not isinstance(json_object, dict):
            raise BertConfigError(f"{source}: expected a JSON object, got {type(json_object).__name__}")
        missing = [key for key in _REQUIRED_KEYS if key not in json_object]
        if missing:
            raise BertConfigError(f"{source}: missing key(s) {', '.join(missing)}")
        return cls(source=source, **json_object)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads a `bert_config.json`."""
        path = os.fspath(json_file)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise BertConfigError(f"cannot read bert config file {path}: {e.strerror or e}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise BertConfigError(f"{path}: not valid JSON ({e})") from None
        return cls.from_dict(data, source=path)

    def to_dict(self):
        out = {key: copy.deepcopy(getattr(self, key)) for key in _REQUIRED_KEYS}
        for key in self._extra_keys:
            out[key] = copy.deepcopy(getattr(self, key))
        return out

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        """Writes the config; the file appears whole or not at all."""
        files.write_atomic(json_file, self.to_json_string())

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"BertConfig({self.to_dict()!r})"
