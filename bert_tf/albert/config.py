"""`AlbertConfig`: the hyper-parameters of an ALBERT model, as in Google's `albert_config.json`."""

from bert_tf.bert.config import BertConfig, BertConfigError

# The original AlbertConfig's keys and defaults (those of albert_xxlarge); its `from_dict` starts
# from these and overwrites the keys the file gives, so a file may leave any of them out but
# vocab_size.
DEFAULTS = {
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "attention_probs_dropout_prob": 0,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
# Keys of the released albert_config.json files that no code of the original reads (except
# `--init_from_group0`, which reads net_structure_type); kept and written back.
UNUSED_KEYS = ("net_structure_type", "gap_size", "num_memory_blocks", "down_scale_factor",
               "layers_to_keep")


class AlbertConfigError(BertConfigError):
    """An albert_config.json (or dict) that does not describe a valid ALBERT model."""


class AlbertConfig(BertConfig):
    """Configuration of an ALBERT model: every key of the original `AlbertConfig`.

    On top of BERT's keys: `embedding_size` E (the embeddings' width, mapped to hidden_size H by
    `embedding_hidden_mapping_in` when they differ), `num_hidden_groups` G (layer l uses the
    blocks of group `int(l / L * G)`) and `inner_group_num` (blocks per group, run in sequence
    in each layer). `model_type` is "albert"; `to_dict` writes it, though Google's files have
    none (bert_tf's registry knows them by `families.SIGNATURE_KEYS`) and the original ignores
    it. Other keys (e.g. `UNUSED_KEYS`)
    are kept and written back.
    """

    def __init__(self, vocab_size, source="AlbertConfig", **kwargs):
        given = {**DEFAULTS, **kwargs}
        given.setdefault("model_type", "albert")
        self.num_hidden_groups = given.pop("num_hidden_groups")
        self.inner_group_num = given.pop("inner_group_num")
        try:
            super().__init__(vocab_size, source=source, **given)
        except AlbertConfigError:
            raise
        except BertConfigError as e:
            raise AlbertConfigError(str(e)) from None
        self._validate_albert(source)

    def _validate_albert(self, source):
        problems = []
        for key in ("num_hidden_groups", "inner_group_num"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                problems.append(f"{key} must be a positive integer, got {value!r}")
        if self.model_type != "albert":
            problems.append(f"model_type must be 'albert', got {self.model_type!r}")
        if problems:
            raise AlbertConfigError(f"{source}: " + "; ".join(problems))

    def group_of_layer(self, layer_index):
        """The group whose blocks layer `layer_index` (0..L-1) runs: the original's float
        expression `int(l / L * G)`."""
        return int(layer_index / self.num_hidden_layers * self.num_hidden_groups)

    @property
    def groups(self):
        """The groups some layer uses, ascending (the original creates only these)."""
        return sorted({self.group_of_layer(i) for i in range(self.num_hidden_layers)})

    @classmethod
    def from_dict(cls, json_object, source="albert config"):
        """Builds a config from a dict of `albert_config.json`; missing keys take the
        original's defaults, vocab_size is required."""
        if not isinstance(json_object, dict):
            raise AlbertConfigError(
                f"{source}: expected a JSON object, got {type(json_object).__name__}")
        if "vocab_size" not in json_object:
            raise AlbertConfigError(f"{source}: missing key vocab_size")
        return cls(source=source, **json_object)

    def to_dict(self):
        out = super().to_dict()
        out["embedding_size"] = self.embedding_size
        out["num_hidden_groups"] = self.num_hidden_groups
        out["inner_group_num"] = self.inner_group_num
        out["model_type"] = self.model_type
        return out

    def __repr__(self):
        return f"AlbertConfig({self.to_dict()!r})"
