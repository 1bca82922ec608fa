"""The two conversions (Hub snapshot -> Google-release folder, checkpoint -> Hub folder) and
the `from_pretrained` loaders.

Both conversions write into a temporary folder beside `output_dir` and rename it into place
when everything succeeded: `output_dir` either does not appear or is complete. An existing
non-empty `output_dir` is refused (nothing the user made is deleted or overwritten).
TF1 checkpoints are written and read through `bert_tf.checkpoints`.
"""

import contextlib
import dataclasses
import os
import shutil
import tempfile
import uuid

import numpy as np
import tensorflow as tf

from bert_tf import checkpoints, families
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.hf import HubError, names, safetensors_io, snapshot, tokenizer_files
from bert_tf.hf.tokenizer_files import read_json, write_json
from bert_tf.training.task_file import TASK_FILE, read_task_file

# The checkpoint an import of a BERT snapshot writes (a family's table names its own).
CHECKPOINT_NAME = "bert_model.ckpt"
# Written by an import beside the checkpoint: the source and the tensors it generated.
IMPORT_INFO_FILE = "hf_import.json"
TASKS = names.EXPORT_TASKS


@dataclasses.dataclass
class Result:
    """What a conversion wrote: the folder and the report lines (also logged by the CLI)."""

    output_dir: str
    report: list


@contextlib.contextmanager
def _staged_output(output_dir):
    """Yields a temporary folder beside `output_dir`, renamed to it if the block succeeds."""
    output_dir = os.path.abspath(os.fspath(output_dir))
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
        raise HubError(f"--output_dir={output_dir} exists and is not an empty folder: give a new "
                       "one (nothing is overwritten)")
    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(output_dir)}.tmp-{uuid.uuid4().hex[:12]}")
    os.makedirs(tmp)
    try:
        yield tmp
        if os.path.isdir(output_dir):
            os.rmdir(output_dir)  # empty, checked above
        os.rename(tmp, output_dir)
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)


def _assign(model, tensors):
    for name, variable in checkpoints.original_variable_map(model).items():
        variable.assign(tensors[name])


def import_snapshot(hf_dir, output_dir):
    """Writes a Google-release folder from a Hub snapshot folder.

    `output_dir` gets `bert_model.ckpt.{index,data-00000-of-00001}` (the original names;
    heads under their original scopes), `bert_config.json`, `vocab.txt` (ALBERT:
    `model.ckpt-best.*`, `albert_config.json`, `spiece.model`; RoBERTa: `vocab.json` and
    `merges.txt`: the family's table names them),
    and, read by from_pretrained and export but by no original script: `tokenizer_config.json`
    (do_lower_case), `task.json` (a classifier's or tagger's labels, as run_classifier.py /
    run_tagging.py write it) and `hf_import.json` (the source, the tensors generated).

    Returns a `Result`. Raises HubError (snapshot), CheckpointError, VocabError.
    """
    snap = snapshot.read_snapshot(hf_dir)
    report = list(snap.report)
    table = snap.hub_names
    vocab_files, vocab_source, do_lower_case, notes, warnings = tokenizer_files.snapshot_tokenizer(
        hf_dir, table.TOKENIZER_FILES, table.SPECIAL_TOKENS, table.read_tokenizer_json)
    if do_lower_case is None:
        do_lower_case = True
        notes.append("do_lower_case=True (no tokenizer_config.json or tokenizer.json says; the "
                     "original scripts' default)")
    report.append(f"vocab: {vocab_source}")
    report += [f"tokenizer: {note}" for note in notes]
    report += [f"tokenizer warning: {w}" for w in warnings]
    config = table.CONFIG.from_dict(snap.bert_config, source=os.path.join(hf_dir, "config.json"))
    checkpoint_name = table.CHECKPOINT_NAME
    with _staged_output(output_dir) as tmp:
        for name, data in vocab_files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        # The vocabulary file first (RoBERTa's reader checks vocab.json with merges.txt).
        vocab = table.read_vocab(*(os.path.join(tmp, name) for name in vocab_files))
        _check_vocab_size(vocab, config, vocab_source, "config.json")
        report += _pad_token_problem(config, vocab, table, vocab_source)
        bert = families.build_encoder(config)
        _assign(bert, snap.tensors)
        encoder_names = set(checkpoints.original_variable_map(bert))
        heads = {n: v for n, v in snap.tensors.items() if n not in encoder_names}
        checkpoints.save_original_checkpoint(bert, os.path.join(tmp, checkpoint_name),
                                             extra_tensors=heads, update_state=False)
        if table.CONFIG_FILE != checkpoints.CONFIG_FILE:
            # The family's release names its config file otherwise (albert_config.json).
            os.remove(os.path.join(tmp, checkpoints.CONFIG_FILE))
            config.to_json_file(os.path.join(tmp, table.CONFIG_FILE))
        tokenizer_files.write_original_tokenizer_config(tmp, do_lower_case)
        _, arch_heads, _ = table.ARCHITECTURES[snap.architecture]
        for head, task in (("classifier", "classifier:custom"), ("tagging", "tagging")):
            if head in arch_heads:
                bias = next(original for _, original, _, letters in table.HEADS[head]
                            if letters == "C")
                num_labels = len(heads[bias])
                write_json(os.path.join(tmp, TASK_FILE),
                           {"task": task, "labels": snap.labels, "num_labels": num_labels})
        write_json(os.path.join(tmp, IMPORT_INFO_FILE), {
            "source": os.path.abspath(hf_dir), "architecture": snap.architecture,
            "generated": snap.generated})
    written = ", ".join(vocab_files)
    if not tokenizer_files.HAS_CASING[table.TOKENIZER_FILES]:
        use = " ".join(f"--{'vocab' if name == table.VOCAB_FILE else 'merges'}_file="
                       f"{os.path.join(output_dir, name)}" for name in vocab_files)
    else:
        use = f"--do_lower_case={str(do_lower_case).lower()}"
    report.append(f"wrote {output_dir}: {checkpoint_name}, {table.CONFIG_FILE}, {written} "
                  f"(use {use})")
    return Result(os.fspath(output_dir), report)


def _hub_table(config, source):
    """The Hub name table (`names.HubTable`) of `config`'s family; a family without one, or a
    config the two codes compute differently, is refused."""
    table = names.hub_table(config.model_type)
    if table is None:
        bridged = ", ".join(repr(n) for n in names.bridged_families())
        raise HubError(f"{source}: model_type {config.model_type!r} has no Hugging Face Hub "
                       f"names here (only model_type {bridged} convert)")
    problem = table.config_problem(config)
    if problem:
        raise HubError(f"{source}: {problem}")
    return table


def _heads_in(shapes, table):
    """The head groups of the Hub name `table` whose every original name is in the
    checkpoint."""
    return [head for head, rows in table.HEADS.items()
            if all(original in shapes for _, original, _, _ in rows)]


def _choose_heads(task, present, prefix, table):
    fine_tuning = [h for h in present if h in FINE_TUNING_HEADS]
    if task is None:
        if len(set(fine_tuning)) > 1:
            raise HubError(f"checkpoint {prefix} holds several fine-tuning heads ({fine_tuning}): "
                           "pass --task")
        if fine_tuning:
            return (fine_tuning[0],)
        return tuple(h for h in table.PRETRAINING_HEADS if h in present)
    if task == "encoder":
        return ()
    if task == "pretraining":
        heads = tuple(h for h in table.PRETRAINING_HEADS if h in present)
        if not heads:
            raise HubError(f"checkpoint {prefix} has no pretraining head (cls/predictions, "
                           "cls/seq_relationship) for --task=pretraining")
        return heads
    if task not in present:
        rows = table.HEADS[task]
        raise HubError(f"checkpoint {prefix} has no {rows[0][1]} for --task={task}")
    return (task,)


def _hub_config(config, table, architecture, labels, num_labels, regression, pad_token_id):
    out = {
        "architectures": [architecture],
        "model_type": table.MODEL_TYPE,
        "hidden_act": names.ACTIVATION_TO_HUB[config.hidden_act],
        "layer_norm_eps": config.layer_norm_eps,
        **table.HUB_CONFIG,
        "pad_token_id": pad_token_id,
        "torch_dtype": "float32",
    }
    for key in table.CONFIG_KEYS:
        out[key] = getattr(config, key)
    if num_labels is not None:
        labels = labels or [f"LABEL_{i}" for i in range(num_labels)]
        out["id2label"] = {str(i): label for i, label in enumerate(labels)}
        out["label2id"] = {label: i for i, label in enumerate(labels)}
        if regression:
            out["problem_type"] = "regression"
    return out


def _check_vocab_size(vocab, config, vocab_source, config_source):
    """Every id of `vocab` ({token: id}) must have a row of the word embeddings."""
    top = max(vocab.values(), default=-1) + 1
    if max(top, len(vocab)) > config.vocab_size:
        raise HubError(f"{vocab_source}: {len(vocab)} tokens (ids up to {top - 1}), more than "
                       f"vocab_size {config.vocab_size} of {config_source}")


def _pad_token_problem(config, vocab, table, vocab_file):
    """A warning line when the config's pad_token_id (RoBERTa's padding id and first position
    - 1) is not the vocabulary's pad token, else none."""
    pad_id, pad = getattr(config, "pad_token_id", None), table.SPECIAL_TOKENS.pad
    if pad_id is None or vocab.get(pad, pad_id) == pad_id:
        return []
    return [f"warning: pad_token_id {pad_id} of the config is not the id of {pad} in "
            f"{vocab_file} ({vocab[pad]}): Transformers takes tokens of id {pad_id} for padding"]


def _beside(checkpoint, candidates, what):
    """The first of `candidates` (file names) in the folder of `checkpoint` (a prefix or a
    folder), for a flag that was not given."""
    checkpoint = os.fspath(checkpoint)
    directory = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    for name in candidates:
        path = os.path.join(directory or ".", name)
        if os.path.isfile(path):
            return path
    raise HubError(f"no {' or '.join(candidates)} beside checkpoint {checkpoint}: pass {what}")


def export_checkpoint(checkpoint, bert_config_file, vocab_file, output_dir, do_lower_case=None,
                      task=None, merges_file=None):
    """Writes a Hub folder (`model.safetensors`, `config.json`, tokenizer files) from a
    checkpoint in the original names.

    Args:
      checkpoint: a prefix or a folder (as every script takes).
      bert_config_file, vocab_file: the model's files (vocab_file: ALBERT's SentencePiece
        model, RoBERTa's vocab.json); None = the one beside the checkpoint (bert_config.json or
        albert_config.json; vocab.txt, or spiece.model / 30k-clean.model for ALBERT, vocab.json
        for RoBERTa).
      output_dir: the new folder.
      do_lower_case: None = the tokenizer_config.json beside the vocab or checkpoint (an
        import writes one), else a released model's folder name, else True.
      task: one of TASKS, or None = from the checkpoint's heads (a fine-tuning head, else the
        pretraining heads, else the bare encoder).
      merges_file: RoBERTa's merges.txt; None = the one beside vocab_file, else beside the
        checkpoint.
    Returns a `Result`. Raises HubError, CheckpointError, families.ConfigError, VocabError.
    """
    if task is not None and task not in TASKS:
        raise HubError(f"--task={task!r}: expected one of {', '.join(TASKS)}")
    if bert_config_file is None:
        bert_config_file = _beside(checkpoint, names.config_file_names(), "--bert_config_file")
    config = families.read_config(bert_config_file)
    table = _hub_table(config, bert_config_file)
    if vocab_file is None:
        vocab_file = _beside(checkpoint, table.VOCAB_FILES_BESIDE, "--vocab_file")
    tokenizer_paths = {tokenizer_files.FILES[table.TOKENIZER_FILES][0]: vocab_file}
    if table.TOKENIZER_FILES == "bpe":
        if merges_file is None:
            beside_vocab = os.path.join(os.path.dirname(os.fspath(vocab_file)), table.MERGES_FILE)
            merges_file = (beside_vocab if os.path.isfile(beside_vocab)
                           else _beside(checkpoint, (table.MERGES_FILE,), "--merges_file"))
        tokenizer_paths[tokenizer_files.MERGES_TXT] = merges_file
    elif merges_file is not None:
        raise HubError(f"--merges_file: {bert_config_file} is a {table.MODEL_TYPE} model, whose "
                       "tokenizer has no merges")
    if config.hidden_act not in names.ACTIVATION_TO_HUB:
        raise HubError(f"{bert_config_file}: hidden_act {config.hidden_act!r} has no "
                       "Transformers name")
    prefix = checkpoints.resolve_checkpoint_path(checkpoint)
    directory = os.path.dirname(prefix)
    vocab = table.read_vocab(*tokenizer_paths.values())
    _check_vocab_size(vocab, config, vocab_file, bert_config_file)
    report = []
    if not tokenizer_files.HAS_CASING[table.TOKENIZER_FILES]:
        do_lower_case = False  # byte-level BPE and XLM-R's SentencePiece have no casing option
    elif do_lower_case is None:
        do_lower_case, how = tokenizer_files.resolve_do_lower_case(directory, vocab_file)
        report.append(f"tokenizer: {how}")
    report += _pad_token_problem(config, vocab, table, vocab_file)

    bert = families.build_encoder(config)
    load_report = checkpoints.load_original_checkpoint(bert, prefix)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    heads = _choose_heads(task, _heads_in(shapes, table), prefix, table)
    # The Transformers class that has exactly the heads exported.
    architecture = {arch_heads: arch for arch, (_, arch_heads, _)
                    in table.ARCHITECTURES.items()}.get(heads)
    if architecture is None:
        raise HubError(f"checkpoint {prefix}: no Transformers {table.MODEL_TYPE} class has "
                       f"exactly the heads {list(heads)}: pass --task")
    _, _, has_pooler = table.ARCHITECTURES[architecture]
    info = read_json(os.path.join(directory, IMPORT_INFO_FILE)) if os.path.isfile(
        os.path.join(directory, IMPORT_INFO_FILE)) else {}
    generated = set(info.get("generated") or ())
    task_info = read_task_file(directory) or {}

    values = {name: np.asarray(v.numpy(), np.float32)
              for name, v in checkpoints.original_variable_map(bert).items()}
    head_rows = [row for head in heads for row in table.HEADS[head]]
    num_labels = None
    for hub_name, original, _, letters in head_rows:
        values[original] = np.asarray(reader.get_tensor(original), np.float32)
        if "C" in letters:
            num_labels = values[original].shape[0]
    sizes = names.sizes_of(config, num_labels)
    for hub_name, original, transposed, letters in head_rows:
        expected = names.hub_shape(letters[::-1] if transposed else letters, sizes)
        if values[original].shape != expected:
            raise HubError(f"checkpoint {prefix}: {original} has shape "
                           f"{list(values[original].shape)}, expected {list(expected)}")

    # A pooler the import generated was not in the snapshot: leave it out again (unless the
    # head holds it, RoBERTa's classifier: then it was trained with the head).
    pooler_names = {r[1] for r in table.POOLER}
    pooler_out = generated >= pooler_names and not pooler_names & {r[1] for r in head_rows}
    rows = table.rows_for(architecture, config, pooler=not pooler_out)
    tensors = {}
    for hub_name, original, transposed, _ in rows:
        value = values[original]
        tensors[hub_name] = np.ascontiguousarray(value.T) if transposed else value
    encoder_prefix = table.ARCHITECTURES[architecture][0]
    for hub_name, letters, fill, _, why in table.implied_rows(config):
        tensors[encoder_prefix + hub_name] = snapshot.implied_value(letters, fill, sizes)
        report.append(f"wrote {encoder_prefix + hub_name} as {'the identity' if fill == 'identity' else 'zeros'}: {why}")
    report.insert(0, f"architecture: {architecture} ({len(tensors)} tensors)")
    if pooler_out:
        report.append(f"left out {table.POOLER_KERNEL.rpartition('/')[0]}/{{kernel,bias}}: "
                      "generated by the import "
                      f"({IMPORT_INFO_FILE}), not in its snapshot")
    elif not has_pooler:
        pooler = table.ENCODER_PREFIX + table.POOLER[0][0].rpartition(".")[0]
        report.append(f"kept {pooler}.*: {architecture} has no pooler and "
                      "Transformers ignores it (with a warning); kept so that importing the "
                      "folder gives this checkpoint back")
    exported = {original for _, original, _, _ in rows}
    unused = sorted(set(shapes) - exported)
    optimizer = [n for n in unused if n.rpartition("/")[0] in values
                 or n.rpartition("/")[0] in shapes]
    other = [n for n in unused if n not in optimizer and n != checkpoints.GLOBAL_STEP
             and not (pooler_out and n in generated)]
    if checkpoints.GLOBAL_STEP in shapes:
        report.append(f"left out global_step ({load_report.global_step}): training state")
    if optimizer:
        report.append(f"left out {len(optimizer)} optimizer slots "
                      f"({', '.join(sorted({n.rpartition('/')[2] for n in optimizer}))}): "
                      "training state, not weights")
    for name in other:
        report.append(f"left out {name}: not a weight of {architecture}")

    labels = task_info.get("labels") if isinstance(task_info.get("labels"), list) else None
    if labels is not None and len(labels) != num_labels:
        report.append(f"warning: {os.path.join(directory, TASK_FILE)} has {len(labels)} labels, "
                      f"the head {num_labels} outputs: labels named LABEL_i")
        labels = None
    regression = num_labels == 1 and "classifier" in heads and task_info.get("labels", 0) is None
    hub_config = _hub_config(config, table, architecture, labels and [str(x) for x in labels],
                             num_labels, regression,
                             vocab.get(table.SPECIAL_TOKENS.pad, 0))
    report.append(f"config: hidden_act {config.hidden_act!r} -> {hub_config['hidden_act']!r} "
                  "(Transformers' name of the same function)")
    with _staged_output(output_dir) as tmp:
        safetensors_io.write_file(os.path.join(tmp, snapshot.SAFETENSORS), tensors,
                                  metadata={"format": "pt"})
        write_json(os.path.join(tmp, snapshot.CONFIG_FILE), hub_config)
        tokenizer_bytes = {}
        for name, path in tokenizer_paths.items():
            try:
                with open(path, "rb") as f:
                    tokenizer_bytes[name] = f.read()
            except OSError as e:
                raise HubError(f"{path}: cannot read ({e.strerror or e})") from None
        tokenizer_files.write_hub_files(
            table.TOKENIZER_FILES, tmp, tokenizer_bytes, do_lower_case,
            config.max_sequence_length, table.TOKENIZER_CLASS, table.SPECIAL_TOKENS)
    report.append(f"wrote {output_dir}: model.safetensors, config.json, "
                  f"{', '.join(tokenizer_paths)}, tokenizer_config.json, special_tokens_map.json")
    return Result(os.fspath(output_dir), report)


# --- from_pretrained ------------------------------------------------------------------------


@contextlib.contextmanager
def original_folder(path):
    """Yields a Google-release folder for `path`: itself, or a Hub snapshot imported into a
    temporary folder (removed afterwards)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise HubError(f"{path}: not a folder (expected a Google-release folder with "
                       "bert_config.json, or a Hub snapshot with config.json)")
    if not snapshot.is_snapshot(path):
        if _google_config_file(path) is None:
            raise HubError(f"{path}: no {' or '.join(names.config_file_names())} (Google "
                           "release) and no config.json (Hub snapshot)")
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="bert_tf_hf_") as tmp:
        folder = os.path.join(tmp, "model")
        import_snapshot(path, folder)
        yield folder


def _google_config_file(folder):
    """The config file of a Google-release folder (bert_config.json, albert_config.json, ...),
    or None."""
    for name in names.config_file_names():
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def pretrained_head(folder, config):
    """A new layer of the one fine-tuning head (classifier, SQuAD span or tagging, with its
    number of labels) whose weights the checkpoint of Google-release `folder` holds."""
    prefix = checkpoints.resolve_checkpoint_path(folder)
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    table = _hub_table(config, folder)
    found = [h for h in _heads_in(shapes, table) if h in FINE_TUNING_HEADS]
    if len(found) != 1:
        raise HubError(f"{prefix}: {'no' if not found else 'more than one'} fine-tuning head "
                       f"({found}): pass head= to BertTaskModel.from_pretrained")
    kind = found[0]
    axis = FINE_TUNING_HEADS[kind].num_labels_axis
    num_labels = None if axis is None else shapes[table.HEADS[kind][0][1]][axis]
    return FINE_TUNING_HEADS[kind].build(config, num_labels)


def load_pretrained(path, build):
    """The model `build(config, folder)` makes, with the weights of a Google-release folder or
    a Hub snapshot folder (imported into a temporary Google-release `folder` first)."""
    with original_folder(path) as folder:
        config = families.read_config(_google_config_file(folder))
        other_family = HubError(f"{path}: holds a model of model_type {config.model_type!r}: "
                                f"load it with {families.of(config).encoder.__name__}"
                                ".from_pretrained")
        try:
            model = build(config, folder)
        except ValueError as e:
            # The encoder class of another family refuses the config (BertModel on ALBERT's).
            if "model_type" not in str(e):
                raise
            raise other_family from None
        if getattr(model, "model_type", config.model_type) != config.model_type:
            raise other_family
        checkpoints.load_original_checkpoint(model, folder)
    return model
