"""A Hub snapshot folder read into a bert_config and tensors under the original's names.

`read_snapshot(hf_dir)` checks `config.json` (a model of a family with Hub names, of the
original's architecture, an activation we compute), reads the weights (`model.safetensors`, shards listed by
`model.safetensors.index.json`, `pytorch_model.bin` or its shards), maps every tensor through
its family's table of Hub names (`bert_tf.families.hub_names`: BERT's `bert_tf.bert.hub_names`,
ALBERT's `bert_tf.albert.hub_names`, RoBERTa's `bert_tf.roberta.hub_names`; read through `bert_tf.hf.names.HubTable`; shape checked against config.json, Linear weights
transposed, float16/bfloat16 widened to float32 exactly) and says in one line why each tensor
it does not map is left out. A tensor it cannot place is an error, never dropped silently.
No TensorFlow here: NumPy only.
"""

import dataclasses
import os

import numpy as np

from bert_tf import families
from bert_tf.hf import HubError, names, safetensors_io, torch_zip
from bert_tf.hf.tokenizer_files import read_json

CONFIG_FILE = "config.json"
SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_BIN = "pytorch_model.bin"
TORCH_INDEX = "pytorch_model.bin.index.json"
_FLOAT_KINDS = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)}
# The pooler a class without one (BertForMaskedLM, ...QuestionAnswering, ...TokenClassification)
# gets on import, drawn as the original initializes it; the seed makes imports reproducible.
_POOLER_SEED = 20
# Shape letters and the config.json keys that give them (for messages).
_SIZE_KEYS = {"V": "vocab_size", "E": "embedding_size", "H": "hidden_size",
              "I": "intermediate_size", "P": "max_position_embeddings",
              "T": "type_vocab_size", "C": "labels"}


@dataclasses.dataclass
class Snapshot:
    """A snapshot under the original's names.

    Attributes:
      hf_dir: the folder.
      bert_config: the bert_config.json (albert_config.json, ...) dict.
      architecture: a key of `hub_names.ARCHITECTURES`.
      tensors: {original name: float32 np.ndarray in the original's layout}.
      generated: original names not in the snapshot, initialized here (the pooler of a class
        that has none).
      labels: the label names in id order (classifier, tagging), or None.
      report: lines saying what was read, mapped, left out and why.
      hub_names: the family's table of Hub names the snapshot was read with (a
        `names.HubTable`).
    """

    hf_dir: str
    bert_config: dict
    architecture: str
    tensors: dict
    generated: list
    labels: list | None
    report: list
    hub_names: object


def is_snapshot(folder):
    """Whether `folder` is a Hub snapshot (config.json, no bert_config.json,
    albert_config.json, ...)."""
    return (os.path.isfile(os.path.join(folder, CONFIG_FILE))
            and not any(os.path.isfile(os.path.join(folder, name))
                        for name in names.config_file_names()))


def _config(hf_dir, report):
    path = os.path.join(hf_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise HubError(f"{hf_dir}: no {CONFIG_FILE}: not a Hugging Face snapshot folder")
    hub = read_json(path)
    model_type = hub.get("model_type")
    rows = names.hub_table(families.DEFAULT if model_type is None else model_type)
    if rows is None:
        bridged = names.bridged_families()
        raise HubError(f"{path}: model_type {model_type!r} has no Hugging Face Hub names here "
                       f"(only model_type {', '.join(repr(n) for n in bridged)} convert, even "
                       "where tensor names look alike)")
    position = hub.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise HubError(f"{path}: position_embedding_type {position!r} has no equivalent in the "
                       "original (absolute position embeddings only)")
    for key in ("is_decoder", "add_cross_attention"):
        if hub.get(key):
            raise HubError(f"{path}: {key}=true: a decoder has no equivalent in the original")
    act = hub.get("hidden_act", rows.DEFAULT_HIDDEN_ACT)
    if not isinstance(act, str) or act not in names.ACTIVATION_FROM_HUB:
        raise HubError(f"{path}: hidden_act {act!r} has no equivalent here (expected one of "
                       f"{', '.join(names.ACTIVATION_FROM_HUB)})")
    config = {}
    for key, default in rows.CONFIG_KEYS.items():
        if key in hub:
            config[key] = hub[key]
        else:
            config[key] = default
            report.append(f"config: {key} not in {path}, Transformers' default {default}")
    config["hidden_act"] = names.ACTIVATION_FROM_HUB[act]
    report.append(f"config: hidden_act {act!r} (Transformers{'' if 'hidden_act' in hub else ' default'}) "
                  f"-> {config['hidden_act']!r}")
    eps = hub.get("layer_norm_eps", rows.DEFAULT_EPS)
    if "layer_norm_eps" not in hub:
        report.append(f"config: layer_norm_eps not in {path}, Transformers' default {eps}")
    # Written where our config's default differs (RoBERTa's is 1e-5, Transformers' 1e-12).
    if eps != rows.CONFIG.default_layer_norm_eps:
        config["layer_norm_eps"] = eps
    try:
        config_object = rows.CONFIG.from_dict(config, source=path)
    except families.ConfigError as e:
        raise HubError(str(e)) from None
    problem = rows.config_problem(config_object)
    if problem:
        raise HubError(f"{path}: {problem}")
    return hub, config, config_object, path, rows


def _weight_files(hf_dir):
    """[(file, kind)] of the snapshot's weights and the {tensor: file} of an index, if any."""
    for index_name, single, kind in ((SAFETENSORS_INDEX, SAFETENSORS, "safetensors"),
                                     (None, SAFETENSORS, "safetensors"),
                                     (TORCH_INDEX, TORCH_BIN, "bin"),
                                     (None, TORCH_BIN, "bin")):
        if index_name is None:
            path = os.path.join(hf_dir, single)
            if os.path.isfile(path):
                return [(path, kind)], None
            continue
        index_path = os.path.join(hf_dir, index_name)
        if not os.path.isfile(index_path):
            continue
        weight_map = read_json(index_path).get("weight_map")
        if (not isinstance(weight_map, dict) or not weight_map
                or not all(isinstance(v, str) for v in weight_map.values())):
            raise HubError(f"{index_path}: weight_map is not a {{tensor: file}} object")
        files = []
        for shard in dict.fromkeys(weight_map.values()):
            if os.path.basename(shard) != shard:
                raise HubError(f"{index_path}: shard {shard!r} is not a file name in the folder")
            path = os.path.join(hf_dir, shard)
            if not os.path.isfile(path):
                raise HubError(f"{index_path}: lists shard {shard}, which is not in {hf_dir}")
            files.append((path, kind))
        return files, {name: os.path.join(hf_dir, f) for name, f in weight_map.items()}
    raise HubError(f"{hf_dir}: no weights ({SAFETENSORS}, {SAFETENSORS_INDEX}, {TORCH_BIN} or "
                   f"{TORCH_INDEX})")


def read_weights(hf_dir):
    """{Hub name: (np.ndarray, file)} of every tensor of the snapshot's weight files."""
    files, weight_map = _weight_files(hf_dir)
    out = {}
    for path, kind in files:
        if kind == "safetensors":
            tensors = safetensors_io.SafetensorsFile(path).read_all()
        else:
            tensors = torch_zip.read_state_dict(path)
        for name, value in tensors.items():
            if name in out:
                raise HubError(f"{path}: tensor {name} is also in {out[name][1]}")
            out[name] = (value, path)
    for name, path in (weight_map or {}).items():
        if name not in out:
            raise HubError(f"{path}: tensor {name}, listed by the index, is not in the file")
    return out


def _architecture(hub, hub_path, hub_names, table):
    archs = hub.get("architectures")
    if archs:
        if not isinstance(archs, list) or archs[0] not in table.ARCHITECTURES:
            raise HubError(f"{hub_path}: architectures {archs!r}: expected one of "
                           f"{', '.join(table.ARCHITECTURES)} (the heads the original has)")
        return archs[0], "config.json"
    heads = [head for head, rows in table.HEADS.items() if rows[0][0] in hub_names]
    if "classifier" in heads:
        raise HubError(f"{hub_path}: no architectures key, and classifier.* may be a sequence or "
                       "a token classifier: add \"architectures\" to config.json")
    for arch, (_, arch_heads, _) in table.ARCHITECTURES.items():
        if set(arch_heads) == set(heads):
            return arch, "the tensor names (config.json has no architectures)"
    raise HubError(f"{hub_path}: no architectures key, and heads {heads} are no "
                   f"{table.MODEL_TYPE.upper()} class")


def _check_shape(value, letters, sizes, path, name):
    expected = names.hub_shape(letters, sizes)
    if tuple(value.shape) != expected:
        given = ", ".join(f"{key}={sizes[letter]}" for letter, key in _SIZE_KEYS.items()
                          if letter in letters)
        raise HubError(f"{path}: tensor {name} has shape {list(value.shape)}, {CONFIG_FILE} "
                       f"says {list(expected)} ({given})")


def implied_value(letters, fill, sizes):
    """The float32 value of an implied row (`names.HubTable.implied_rows`)."""
    shape = names.hub_shape(letters, sizes)
    if fill == "identity":
        return np.eye(*shape, dtype=np.float32)
    return np.zeros(shape, np.float32)


def _check_implied(row, value, path, name, sizes):
    _, letters, fill, checked, why = row
    _check_shape(value, letters, sizes, path, name)
    value = _float32(value, path, name)
    if checked and not np.array_equal(value, implied_value(letters, fill, sizes)):
        what = "identity" if fill == "identity" else "zero vector"
        raise HubError(f"{path}: tensor {name} is not the {what}; {why}: the original cannot "
                       "hold this snapshot's model")


def _float32(value, path, name):
    if value.dtype not in _FLOAT_KINDS:
        raise HubError(f"{path}: tensor {name} has dtype {value.dtype}, expected a float weight")
    return value.astype(np.float32, copy=False)


def _truncated_normal(rng, shape, stddev):
    values = rng.standard_normal(shape)
    while True:
        outside = np.abs(values) > 2
        if not outside.any():
            return (values * stddev).astype(np.float32)
        values[outside] = rng.standard_normal(int(outside.sum()))


def _labels(hub, hub_path, num_labels):
    id2label = hub.get("id2label")
    if not id2label:
        return None
    if not isinstance(id2label, dict):
        raise HubError(f"{hub_path}: id2label is not an object")
    try:
        by_id = {int(k): str(v) for k, v in id2label.items()}
    except ValueError:
        raise HubError(f"{hub_path}: id2label keys must be integers, got {list(id2label)}") from None
    if sorted(by_id) != list(range(num_labels)):
        raise HubError(f"{hub_path}: id2label has ids {sorted(by_id)}, the classifier weights "
                       f"have {num_labels} outputs")
    return [by_id[i] for i in range(num_labels)]


def read_snapshot(hf_dir):
    """Reads a snapshot folder; see the module docstring. Raises HubError."""
    hf_dir = os.fspath(hf_dir)
    report = []
    hub, config, config_object, hub_path, table = _config(hf_dir, report)
    weights = read_weights(hf_dir)
    by_name = {}
    for name, (value, path) in weights.items():
        key = names.normalize_name(name)
        if key in by_name:
            raise HubError(f"{path}: tensors {by_name[key][2]} and {name} are the same weight")
        by_name[key] = (value, path, name)
    arch, arch_source = _architecture(hub, hub_path, set(by_name), table)
    prefix, heads, _ = table.ARCHITECTURES[arch]
    report.insert(0, f"architecture: {arch} (from {arch_source})")

    label_rows = [r for h in heads for r in table.HEADS[h] if "C" in r[3]]
    num_labels = None
    if label_rows:
        found = by_name.get(label_rows[0][0])
        num_labels = found[0].shape[0] if found is not None and found[0].ndim == 2 else None
    sizes = names.sizes_of(config_object, num_labels)

    # Encoder names are looked up without their prefix: a bare BertModel saved with `bert.`
    # (or a task model without it) holds the same tensors.
    encoder = {hub_name: (original, transposed, letters) for hub_name, original, transposed, letters
               in table.encoder_rows(config_object)}
    implied = {row[0]: row for row in table.implied_rows(config_object)}
    head_rows = {hub_name: (original, transposed, letters) for head in heads
                 for hub_name, original, transposed, letters in table.HEADS[head]}
    tensors, source_of, used_prefixes = {}, {}, set()
    left_out = []
    for key, (value, path, name) in by_name.items():
        bare = key.removeprefix(table.ENCODER_PREFIX)
        is_encoder = bare in encoder or bare in implied or bare.startswith("embeddings.")
        if is_encoder:
            used_prefixes.add(key[: len(key) - len(bare)])
        decoder = key in (table.TIED_DECODER, table.DECODER_BIAS) and "mlm" in heads
        if bare in table.LEFT_OUT and (is_encoder or decoder):
            left_out.append((bare, path, name))
            continue
        if bare in implied:
            used_prefixes.add(key[: len(key) - len(bare)])
            _check_implied(implied[bare], value, path, name, sizes)
            report.append(f"left out {name}: {implied[bare][4]}")
            continue
        rows = encoder if is_encoder else head_rows if bare == key else {}
        if bare not in rows:
            raise HubError(f"{path}: tensor {name} is not a weight of {arch} (nor a buffer we "
                           "know): refusing to drop it")
        original, transposed, letters = rows[bare]
        if original in tensors and len(used_prefixes) == 1:
            # RoBERTa's classifier.dense is the pooler: a snapshot with both is not one model.
            raise HubError(f"{path}: tensors {source_of[original]} and {name} are both "
                           f"{original}: refusing to keep one of them")
        _check_shape(value, letters, sizes, path, name)
        value = _float32(value, path, name)
        tensors[original] = np.ascontiguousarray(value.T) if transposed else value
        source_of[original] = name
    if len(used_prefixes) > 1:
        raise HubError(f"{hf_dir}: encoder tensors both with and without the "
                       f"'{table.ENCODER_PREFIX}' prefix")

    for bare, path, name in left_out:
        if bare == table.TIED_DECODER:
            kept = tensors.get(table.WORD_EMBEDDINGS)
            same = kept is not None and np.array_equal(_float32(weights[name][0], path, name), kept)
            if not same:
                raise HubError(f"{path}: tensor {name} differs from the word embeddings: an "
                               "untied output layer, which the original's masked-LM head "
                               "(tied to the embeddings) cannot hold")
        if bare == table.DECODER_BIAS:
            kept = tensors.get(table.MLM_OUTPUT_BIAS)
            if kept is None or not np.array_equal(_float32(weights[name][0], path, name), kept):
                raise HubError(f"{path}: tensor {name} differs from {table.mlm_bias_hub_name()}, "
                               "which the original's masked-LM head has once")
        report.append(f"left out {name}: {table.LEFT_OUT[bare]}")

    generated = []
    expected_rows = table.rows_for(arch, config_object, pooler=True)
    # The encoder's pooler may be absent (generated below); a head's rows are not.
    pooler_rows = {prefix + hub for hub, _, _, _ in table.POOLER}
    missing = [hub_name for hub_name, original, _, _ in expected_rows
               if original not in tensors and hub_name not in pooler_rows]
    if missing:
        raise HubError(f"{hf_dir}: {arch} tensors missing from the snapshot: "
                       f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")
    pooler = [row for row in table.POOLER if row[1] not in tensors]
    if len(pooler) == 1:
        raise HubError(f"{hf_dir}: the snapshot has half of the pooler (no {prefix}{pooler[0][0]})")
    if pooler:
        rng = np.random.default_rng(_POOLER_SEED)
        h = config["hidden_size"]
        tensors[table.POOLER_KERNEL] = _truncated_normal(
            rng, (h, h), config["initializer_range"])
        tensors[table.POOLER_BIAS] = np.zeros(h, np.float32)
        generated = [table.POOLER_KERNEL, table.POOLER_BIAS]
        why = (f"{arch} has no pooler" if not table.ARCHITECTURES[arch][2]
               else "the snapshot has none (saved without its pooling layer)")
        report.append(f"generated {table.POOLER_KERNEL.rpartition('/')[0]}/{{kernel,bias}}: "
                      f"{why}; initialized as the "
                      "original does (truncated normal, zero bias) so that every script loads "
                      "the folder; export leaves it out again")
    labels = None
    if num_labels is not None:
        labels = _labels(hub, hub_path, num_labels)
        if num_labels == 1 and hub.get("problem_type") == "regression":
            labels = None
    files = sorted({path for _, path in weights.values()})
    report.insert(1, f"weights: {len(tensors) - len(generated)} tensors mapped from "
                     f"{', '.join(os.path.basename(f) for f in files)}")
    return Snapshot(hf_dir, config, arch, tensors, generated, labels, report, table)
