"""The hparams of ELECTRA pretraining, as google-research/electra's `configure_pretraining.py`.

`PretrainingHparams` has one attribute per hparam of the original's `PretrainingConfig`, under the
same name, with the same default and the same derived values:

  * the data layout under `data_dir`: `pretrain_tfrecords`
    (`D/pretrain_tfrecords/pretrain_data.tfrecord*`), `vocab_file` (`D/vocab.txt`), `model_dir`
    (`D/models/<model_name>`), `results_txt` and `results_pkl` (in `<model_dir>/results/`);
  * `max_predictions_per_seq` = int((mask_prob + 0.005) * max_seq_length);
  * `debug`: batch sizes 8 (train) / 4 (eval), 20 train steps, 2 eval steps, 1 iteration per
    loop (and, in the model, a 3-layer H144 network: see `bert_tf.electra.config`);
  * `model_size == "small"` sets `embedding_size` to 128;
  * `electric_objective` sets `two_tower_generator`.

Hparams given by the user are applied twice, as the original does: before the derived values
(so they see them) and after (so they win over the `debug` and model-size defaults). An unknown
hparam is refused naming it -- `max_predictions_per_seq` included, since the original derives it
after the first application. Values are checked against the type of their default (the original
would fail later, deep inside TF); JSON `1e6` for an integer hparam is accepted as 1000000.

Usage:

    hp = PretrainingHparams.from_args(data_dir, model_name, '{"model_size": "base"}')
    hp.learning_rate, hp.max_predictions_per_seq, hp.model_dir, ...

`hparams` may be a dict, a JSON object string, or the path of a `.json` file holding one (the
original's `--hparams` rule: a value ending in ".json" is a file). Problems raise `HparamsError`
(a ValueError) with one line naming the hparam or file.
"""

import difflib
import json
import os

__all__ = ["HparamsError", "PretrainingHparams", "parse_hparams", "MODEL_SIZES"]

# hidden size and number of layers of each `model_size` (the original's `get_bert_config`).
MODEL_SIZES = {
    "small": (256, 12),
    "base": (768, 12),
    "large": (1024, 24),
}

# Every hparam the user may set, with the original's default, in the original's order. The data
# layout and `model_hparam_overrides` are added in `__init__`.
_DEFAULTS = (
    ("debug", False),
    ("do_train", True),
    ("do_eval", False),
    # objective: ELECTRA, Electric, or (both false) BERT's masked LM
    ("electra_objective", True),
    ("electric_objective", False),
    ("gen_weight", 1.0),
    ("disc_weight", 50.0),
    ("mask_prob", 0.15),
    # optimization
    ("learning_rate", 5e-4),
    ("lr_decay_power", 1.0),
    ("weight_decay_rate", 0.01),
    ("num_warmup_steps", 10000),
    # training
    ("iterations_per_loop", 200),
    ("save_checkpoints_steps", 1000),
    ("num_train_steps", 1000000),
    ("num_eval_steps", 100),
    ("keep_checkpoint_max", 5),
    # model
    ("model_size", "small"),
    ("embedding_size", None),
    ("vocab_size", 30522),
    ("do_lower_case", True),
    # generator
    ("uniform_generator", False),
    ("two_tower_generator", False),
    ("untied_generator_embeddings", False),
    ("untied_generator", True),
    ("generator_layers", 1.0),
    ("generator_hidden_size", 0.25),
    ("disallow_correct", False),
    ("temperature", 1.0),
    # batches
    ("max_seq_length", 128),
    ("train_batch_size", 128),
    ("eval_batch_size", 128),
    # TPU
    ("use_tpu", False),
    ("num_tpu_cores", 1),
    ("tpu_job_name", None),
    ("tpu_name", None),
    ("tpu_zone", None),
    ("gcp_project", None),
)
_LAYOUT_KEYS = ("pretrain_tfrecords", "vocab_file", "model_dir", "results_txt", "results_pkl")

# Hparams that may be None (besides a value of their type); string hparams (some default to None).
_TPU_NAMES = ("tpu_job_name", "tpu_name", "tpu_zone", "gcp_project")
_NONE_ALLOWED = ("embedding_size", "keep_checkpoint_max") + _TPU_NAMES
_STRINGS = _TPU_NAMES + _LAYOUT_KEYS
_POSITIVE_INTS = (
    "iterations_per_loop", "save_checkpoints_steps", "num_train_steps", "num_eval_steps",
    "vocab_size", "max_seq_length", "train_batch_size", "eval_batch_size", "num_tpu_cores",
    "embedding_size",
)


class HparamsError(ValueError):
    """An unknown hparam, a value of the wrong type, or an unreadable `--hparams`."""


def parse_hparams(hparams):
    """The dict of hparams given as a dict, a JSON object string, or a path ending in ".json".

    None and "" mean no hparams (the original's `--hparams` default is "{}").
    """
    if hparams is None:
        return {}
    if isinstance(hparams, dict):
        return dict(hparams)
    text = os.fspath(hparams)
    if text.endswith(".json"):
        try:
            with open(text, encoding="utf-8") as f:
                content = f.read()
        except OSError as e:
            raise HparamsError(f"--hparams: cannot read {text}: {e.strerror or e}") from None
        source = text
    else:
        content, source = text or "{}", "--hparams"
    try:
        value = json.loads(content)
    except json.JSONDecodeError as e:
        raise HparamsError(f"{source}: not valid JSON ({e}); expected a JSON object of hparams "
                           "or the path of a .json file") from None
    if not isinstance(value, dict):
        raise HparamsError(f"{source}: expected a JSON object of hparams, got {type(value).__name__}")
    return value


def _type_name(default):
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[type(default)]


def _checked(key, value, default):
    """`value` converted to the type of `default`, or HparamsError naming `key`."""
    if value is None and key in _NONE_ALLOWED:
        return None
    if key == "model_hparam_overrides":
        if not isinstance(value, dict):
            raise HparamsError(f"hparam model_hparam_overrides must be a JSON object, got {value!r}")
        return dict(value)
    if key in _STRINGS:
        default = ""
    elif key == "embedding_size":
        default = 0
    expected = type(default)
    ok = True
    if expected is bool:
        if isinstance(value, bool):
            pass
        elif isinstance(value, int) and value in (0, 1):
            value = bool(value)
        else:
            ok = False
    elif expected is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and key in _POSITIVE_INTS and value <= 0:
            raise HparamsError(f"hparam {key} must be a positive integer, got {value!r}")
    elif expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        raise HparamsError(f"hparam {key} must be {_type_name(default)}, got {value!r}")
    return value


class PretrainingHparams:
    """Every pretraining hparam of the original, as attributes with the original's names.

    Args:
      model_name: the model's name; its directory is `<data_dir>/models/<model_name>`.
      data_dir: the data directory (`pretrain_tfrecords/`, `vocab.txt`, `models/`).
      **kwargs: hparams overriding the defaults (see the module docstring).
    """

    def __init__(self, model_name, data_dir, **kwargs):
        self.model_name = model_name
        for key, default in _DEFAULTS:
            setattr(self, key, default)
        self.model_hparam_overrides = {}
        data_dir = os.fspath(data_dir)
        self.pretrain_tfrecords = os.path.join(data_dir, "pretrain_tfrecords/pretrain_data.tfrecord*")
        self.vocab_file = os.path.join(data_dir, "vocab.txt")
        self.model_dir = os.path.join(data_dir, "models", model_name)
        results_dir = os.path.join(self.model_dir, "results")
        self.results_txt = os.path.join(results_dir, "unsup_results.txt")
        self.results_pkl = os.path.join(results_dir, "unsup_results.pkl")

        self.update(kwargs)
        self.max_predictions_per_seq = int((self.mask_prob + 0.005) * self.max_seq_length)
        if self.debug:
            self.train_batch_size = 8
            self.num_train_steps = 20
            self.eval_batch_size = 4
            self.iterations_per_loop = 1
            self.num_eval_steps = 2
        if self.model_size == "small":
            self.embedding_size = 128
        if self.electric_objective:
            self.two_tower_generator = True
        self.update(kwargs)
        self._validate()

    @classmethod
    def from_args(cls, data_dir, model_name, hparams=None):
        """From the original's command line: `--data-dir`, `--model-name`, `--hparams`.

        `hparams`: a dict, a JSON object string, or the path of a `.json` file; None for none.
        """
        return cls(model_name, data_dir, **parse_hparams(hparams))

    def update(self, kwargs):
        """Sets the given hparams; an unknown name raises HparamsError naming it."""
        for key, value in kwargs.items():
            if key not in self.__dict__:
                close = difflib.get_close_matches(str(key), list(self.__dict__), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise HparamsError(f"Unknown hparam {key}{hint}")
            if key != "model_name":
                value = _checked(key, value, self.__dict__[key])
            self.__dict__[key] = value

    def _validate(self):
        if self.model_size not in MODEL_SIZES:
            raise HparamsError(
                f"hparam model_size must be one of {', '.join(MODEL_SIZES)}, got {self.model_size!r}")
        if not 0 < self.mask_prob < 1:
            raise HparamsError(f"hparam mask_prob must be in (0, 1), got {self.mask_prob!r}")
        if self.max_predictions_per_seq < 1:
            raise HparamsError(
                f"hparams mask_prob={self.mask_prob} and max_seq_length={self.max_seq_length} give "
                f"max_predictions_per_seq={self.max_predictions_per_seq}; it must be at least 1")
        if self.temperature <= 0:
            raise HparamsError(f"hparam temperature must be positive, got {self.temperature!r}")

    def to_dict(self):
        """Every hparam and derived value, by name."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def log_lines(self):
        """The `name value` lines the original prints under "Config:" (sorted by name)."""
        return [f"{key} {value}" for key, value in sorted(self.to_dict().items())]

    def __repr__(self):
        return f"PretrainingHparams({self.to_dict()!r})"
