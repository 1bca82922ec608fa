"""Test-only builders of Hugging Face Hub snapshots, without torch or transformers.

- `hub_state_dict`: random weights under the names Transformers' BERT classes give their
  state dicts (written out here by hand, independently of bert_tf.bert.hub_names).
- `write_torch_zip`: a `pytorch_model.bin` in PyTorch's zip layout (`<root>/data.pkl`
  pickled with protocol 2, storages as persistent ids, `<root>/data/<key>` raw bytes).
- `write_snapshot`: config.json, weights (safetensors, sharded safetensors, .bin) and
  tokenizer files.
- `reference_outputs`: an independent NumPy (float64) forward of Transformers' BertModel and
  its heads.
- ALBERT: `albert_hub_config`, `albert_state_dict` (the names of Transformers' ALBERT classes,
  by hand), `albert_reference_outputs` (its forward: groups by Transformers' `int(i / (L / G))`),
  snapshots with `spiece.model` (`write_snapshot(..., spiece_model=ALBERT_SPM)`).
"""

import json
import math
import os
import struct
import zipfile

import shutil

import numpy as np
from safetensors.numpy import save_file

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "in", "park", "it", "rained",
         "##s", "##ed", "##ing", "un", "##able", "hello", "world", "bert", "model", "and",
         "to", "of", ",", ".", "!", "?", "é", "##é", "über", "naïve"]
VOCAB = SPECIALS + WORDS  # 37 tokens

HEADS = {
    "BertModel": (),
    "BertForPreTraining": ("mlm", "nsp"),
    "BertForMaskedLM": ("mlm",),
    "BertForSequenceClassification": ("classifier",),
    "BertForQuestionAnswering": ("qa",),
    "BertForTokenClassification": ("classifier",),
}
NO_POOLER = ("BertForMaskedLM", "BertForQuestionAnswering", "BertForTokenClassification")


def hub_config(architecture, **overrides):
    config = dict(
        architectures=[architecture], model_type="bert", vocab_size=len(VOCAB), hidden_size=16,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=24, hidden_act="gelu",
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=20,
        type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12,
        position_embedding_type="absolute", pad_token_id=0,
    )
    config.update(overrides)
    return config


def _drawers(rng, out, old_layer_norm_names=False):
    """mat(*shape), linear(name, n_out, n_in), norm(name, width): random weights into `out`."""
    g, b = ("gamma", "beta") if old_layer_norm_names else ("weight", "bias")

    def mat(*shape):
        return rng.normal(0, 0.3, shape).astype(np.float32)

    def linear(name, n_out, n_in):
        out[f"{name}.weight"] = mat(n_out, n_in)
        out[f"{name}.bias"] = mat(n_out)

    def norm(name, width):
        out[f"{name}.{g}"] = (1 + rng.normal(0, 0.1, width)).astype(np.float32)
        out[f"{name}.{b}"] = mat(width)

    return mat, linear, norm


def _draw_bert_encoder(config, prefix, buffers, out, mat, linear, norm):
    """BERT's embeddings and layers under Transformers' names (RoBERTa's are the same)."""
    h, i_size = config["hidden_size"], config["intermediate_size"]
    v, p, t = config["vocab_size"], config["max_position_embeddings"], config["type_vocab_size"]
    e = prefix + "embeddings."
    out[e + "word_embeddings.weight"] = mat(v, h)
    out[e + "position_embeddings.weight"] = mat(p, h)
    out[e + "token_type_embeddings.weight"] = mat(t, h)
    norm(e + "LayerNorm")
    if buffers:
        out[e + "position_ids"] = np.arange(p, dtype=np.int64)[None]
    for layer in range(config["num_hidden_layers"]):
        base = f"{prefix}encoder.layer.{layer}."
        for part in ("query", "key", "value"):
            linear(base + f"attention.self.{part}", h, h)
        linear(base + "attention.output.dense", h, h)
        norm(base + "attention.output.LayerNorm")
        linear(base + "intermediate.dense", i_size, h)
        linear(base + "output.dense", h, i_size)
        norm(base + "output.LayerNorm")


def hub_state_dict(config, seed=0, num_labels=3, prefix=None, old_layer_norm_names=False,
                   buffers=False, tied_decoder=False, pooler=None):
    """{name: float32 array} as Transformers' `state_dict()` of config["architectures"][0]
    (`pooler` False: a BertModel made with add_pooling_layer=False)."""
    arch = config["architectures"][0]
    rng = np.random.default_rng(seed)
    h, v = config["hidden_size"], config["vocab_size"]
    if prefix is None:
        prefix = "" if arch == "BertModel" else "bert."
    out = {}
    mat, linear, draw_norm = _drawers(rng, out, old_layer_norm_names)

    def norm(name):
        draw_norm(name, h)

    e = prefix + "embeddings."
    _draw_bert_encoder(config, prefix, buffers, out, mat, linear, norm)
    if arch not in NO_POOLER if pooler is None else pooler:
        linear(prefix + "pooler.dense", h, h)
    heads = HEADS[arch]
    if "mlm" in heads:
        linear("cls.predictions.transform.dense", h, h)
        norm("cls.predictions.transform.LayerNorm")
        out["cls.predictions.bias"] = mat(v)
        if tied_decoder:
            out["cls.predictions.decoder.weight"] = out[e + "word_embeddings.weight"].copy()
            out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"].copy()
    if "nsp" in heads:
        linear("cls.seq_relationship", 2, h)
    if "classifier" in heads:
        linear("classifier", num_labels, h)
    if "qa" in heads:
        linear("qa_outputs", 2, h)
    return out


# --- pytorch_model.bin ----------------------------------------------------------------------

_STORAGE = {np.dtype(np.float32): "FloatStorage", np.dtype(np.float16): "HalfStorage",
            np.dtype(np.float64): "DoubleStorage", np.dtype(np.int64): "LongStorage"}


def _unicode(s):
    data = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(data)) + data


def _int(n):
    return b"J" + struct.pack("<i", n)


def _tuple(items):
    return b"(" + b"".join(items) + b"t"


def _global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


class StorageView:
    """A tensor that is a view of a shared storage, as torch.save writes tied or sliced
    tensors: `storage` (1-D array) saved once under `key`, the view at `offset` with `shape`
    and `stride` (in elements)."""

    def __init__(self, key, storage, offset, shape, stride):
        self.key, self.storage = key, np.asarray(storage)
        self.offset, self.shape, self.stride = offset, tuple(shape), tuple(stride)


def _views(tensors):
    """{name: StorageView}: a plain array becomes a contiguous view of a storage of its own."""
    out = {}
    for index, (name, value) in enumerate(tensors.items()):
        if not isinstance(value, StorageView):
            value = np.asarray(value)
            stride = [int(s // value.itemsize) for s in np.ascontiguousarray(value).strides]
            value = StorageView(f"t{index}", value.reshape(-1), 0, value.shape, stride)
        out[name] = value
    return out


def torch_pickle(tensors, extra_global=None, storage_names=None):
    """The data.pkl bytes (protocol 2) of an OrderedDict of tensors, storages as persistent
    ids ("storage", torch.XStorage, key, "cpu", numel). `extra_global` (module, name, arg)
    adds an entry whose value is that global called with a string argument: what a malicious
    file does. `storage_names` {key: "BFloat16Storage", ...} overrides the storage class."""
    body = [b"\x80\x02", _global("collections", "OrderedDict"), b")R("]
    for name, view in _views(tensors).items():
        kind = (storage_names or {}).get(view.key) or _STORAGE[view.storage.dtype]
        pid = _tuple([_unicode("storage"), _global("torch", kind), _unicode(view.key),
                      _unicode("cpu"), _int(view.storage.size)]) + b"Q"
        body.append(_unicode(name))
        body.append(_global("torch._utils", "_rebuild_tensor_v2") + _tuple([
            pid, _int(view.offset), _tuple([_int(d) for d in view.shape]),
            _tuple([_int(s) for s in view.stride]), b"\x89",
            _global("collections", "OrderedDict") + b")R"]) + b"R")
    if extra_global is not None:
        module, name, arg = extra_global
        body.append(_unicode("payload"))
        body.append(_global(module, name) + _tuple([_unicode(arg)]) + b"R")
    body.append(b"u.")
    return b"".join(body)


def write_torch_zip(path, tensors, root="pytorch_model", extra_global=None, byteorder="little",
                    storage_bytes=None, storage_names=None):
    """A pytorch_model.bin in PyTorch's zip layout (stored, uncompressed entries). Values are
    arrays or StorageViews; `byteorder` None leaves the byteorder entry out; `storage_bytes`
    {key: bytes} overrides a storage's raw bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{root}/data.pkl", torch_pickle(tensors, extra_global, storage_names))
        if byteorder:
            z.writestr(f"{root}/byteorder", byteorder)
        order = ">" if byteorder == "big" else "<"
        written = set()
        for view in _views(tensors).values():
            if view.key in written:
                continue
            written.add(view.key)
            raw = (storage_bytes or {}).get(view.key)
            if raw is None:
                raw = view.storage.astype(view.storage.dtype.newbyteorder(order)).tobytes()
            z.writestr(f"{root}/data/{view.key}", raw)
        z.writestr(f"{root}/version", "3\n")
        z.writestr(f"{root}/.data/serialization_id", "0123456789")


# --- snapshot folders -----------------------------------------------------------------------


def tokenizer_json(tokens, lowercase=True, **model):
    return {
        "version": "1.0",
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {tok: i for i, tok in enumerate(tokens)}, **model},
    }


def write_snapshot(folder, config, tensors, weights="safetensors", tokens=VOCAB,
                   tokenizer=("vocab",), tokenizer_config=None, spiece_model=None):
    """Writes a snapshot folder. weights: "safetensors", "sharded" (two shards + index),
    "bin", "bin_sharded"; tokenizer: which of "vocab" (vocab.txt), "json" (tokenizer.json);
    spiece_model: a SentencePiece model copied as spiece.model (ALBERT's tokenizer; then
    vocab.txt is not written)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    names = list(tensors)
    if weights == "safetensors":
        save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    elif weights in ("sharded", "bin_sharded"):
        half = len(names) // 2
        ext = "safetensors" if weights == "sharded" else "bin"
        stem = "model" if weights == "sharded" else "pytorch_model"
        shards = {f"{stem}-0000{k + 1}-of-00002.{ext}": part
                  for k, part in enumerate((names[:half], names[half:]))}
        weight_map = {}
        for shard, part in shards.items():
            if ext == "safetensors":
                save_file({n: tensors[n] for n in part}, os.path.join(folder, shard),
                          metadata={"format": "pt"})
            else:
                write_torch_zip(os.path.join(folder, shard), {n: tensors[n] for n in part},
                                root=shard[:-4])
            weight_map.update({n: shard for n in part})
        with open(os.path.join(folder, f"{stem}.{ext}.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    elif weights == "bin":
        write_torch_zip(os.path.join(folder, "pytorch_model.bin"), tensors)
    else:
        raise ValueError(weights)
    if spiece_model is not None:
        shutil.copy(spiece_model, os.path.join(folder, "spiece.model"))
        tokenizer_config = tokenizer_config or ALBERT_TOKENIZER_CONFIG
    elif "vocab" in tokenizer:
        with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
    if "json" in tokenizer:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(tokens), f, ensure_ascii=False)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config or {"do_lower_case": True, "tokenizer_class": "BertTokenizer"},
                  f)
    return folder


# --- the NumPy reference of Transformers' BERT ------------------------------------------------

_ERF = np.frompyfunc(math.erf, 1, 1)
ACTIVATIONS = {
    "gelu": lambda x: 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(np.float64)),
    "gelu_new": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi)
                                                    * (x + 0.044715 * x ** 3))),
    "relu": lambda x: np.maximum(x, 0.0),
}


def _arithmetic(config, w, attention_mask):
    """Transformers' pieces over float64 weights `w` (names without the encoder prefix):
    `lin(x, name)`, `ln(x, name)`, `embed(input_ids, token_type_ids)` (the embeddings after
    their LayerNorm) and `attend(x, prefix)` (the heads' context [B, S, H] of
    prefix{query,key,value})."""
    eps = config.get("layer_norm_eps", 1e-12)
    heads_n = config["num_attention_heads"]
    bias = (1.0 - attention_mask[:, None, None, :]) * np.finfo(np.float64).min

    def lin(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def ln(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def embed(input_ids, token_type_ids):
        s = input_ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][input_ids]
             + w["embeddings.position_embeddings.weight"][np.arange(s)][None]
             + w["embeddings.token_type_embeddings.weight"][token_type_ids])
        return ln(x, "embeddings.LayerNorm")

    def attend(x, prefix):
        b, s = x.shape[:2]

        def split(y):
            return y.reshape(b, s, heads_n, -1).transpose(0, 2, 1, 3)

        q, k, v = (split(lin(x, prefix + p)) for p in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1]) + bias
        scores = scores - scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        return (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)

    return lin, ln, embed, attend


def _bert_layers(config, x, lin, ln, attend, act):
    """BERT's (and RoBERTa's) post-LN layers on the embeddings x [B, S, H]."""
    for layer in range(config["num_hidden_layers"]):
        base = f"encoder.layer.{layer}."
        context = attend(x, base + "attention.self.")
        x = ln(lin(context, base + "attention.output.dense") + x, base + "attention.output.LayerNorm")
        inner = act(lin(x, base + "intermediate.dense"))
        x = ln(lin(inner, base + "output.dense") + x, base + "output.LayerNorm")
    return x


def reference_outputs(config, tensors, input_ids, token_type_ids, attention_mask):
    """Transformers' forward in float64: dict of `sequence_output` [B, S, H], `pooled_output`
    [B, H] (when the class has a pooler) and the heads' logits (`mlm_logits` [B, S, V],
    `nsp_logits` [B, 2], `logits` [B, C] or [B, S, C], `start_logits`/`end_logits` [B, S])."""
    arch = config["architectures"][0]
    w = {}
    for name, value in tensors.items():
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta",
                                                                             "LayerNorm.bias")
        w[name.removeprefix("bert.")] = np.asarray(value, np.float64)
    act = ACTIVATIONS[config["hidden_act"]]
    lin, ln, embed, attend = _arithmetic(config, w, attention_mask)
    x = _bert_layers(config, embed(input_ids, token_type_ids), lin, ln, attend, act)
    return _with_heads(x, w, HEADS[arch], arch == "BertForSequenceClassification", lin, ln, act,
                       pooler="pooler.dense", mlm="cls.predictions.transform.",
                       mlm_bias="cls.predictions.bias", pair=("nsp", "cls.seq_relationship"))


def _with_heads(x, w, heads, pooled_classifier, lin, ln, act, pooler, mlm, mlm_bias, pair):
    """`sequence_output` x, `pooled_output` (where `pooler` is a weight) and the logits of
    `heads`; `mlm` prefixes the masked-LM head's dense and LayerNorm, `pair` is (the head,
    its Linear) of the sentence-pair head."""
    out = {"sequence_output": x}
    if f"{pooler}.weight" in w:
        out["pooled_output"] = np.tanh(lin(x[:, 0], pooler))
    if "mlm" in heads:
        y = ln(act(lin(x, mlm + "dense")), mlm + "LayerNorm")
        out["mlm_logits"] = y @ w["embeddings.word_embeddings.weight"].T + w[mlm_bias]
    if pair[0] in heads:
        out[f"{pair[0]}_logits"] = lin(out["pooled_output"], pair[1])
    if "classifier" in heads:
        out["logits"] = lin(out["pooled_output"] if pooled_classifier else x, "classifier")
    if "qa" in heads:
        logits = lin(x, "qa_outputs")
        out["start_logits"], out["end_logits"] = logits[..., 0], logits[..., 1]
    return out


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


# --- ALBERT ---------------------------------------------------------------------------------

ALBERT_SPM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "albert_spm",
                          "albert.model")
ALBERT_VOCAB_SIZE = 2000  # the pieces of ALBERT_SPM
ALBERT_TOKENIZER_CONFIG = {"tokenizer_class": "AlbertTokenizer", "do_lower_case": True,
                           "remove_space": True, "keep_accents": False}
ALBERT_HEADS = {
    "AlbertModel": (),
    "AlbertForPreTraining": ("mlm", "sop"),
    "AlbertForMaskedLM": ("mlm",),
    "AlbertForSequenceClassification": ("classifier",),
    "AlbertForQuestionAnswering": ("qa",),
    "AlbertForTokenClassification": ("classifier",),
}
ALBERT_NO_POOLER = ("AlbertForMaskedLM", "AlbertForQuestionAnswering",
                    "AlbertForTokenClassification")


def albert_hub_config(architecture, **overrides):
    """config.json of a small ALBERT: L=3 over 2 groups of 2 inner blocks, E=8 != H=16."""
    config = dict(
        architectures=[architecture], model_type="albert", vocab_size=ALBERT_VOCAB_SIZE,
        embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=2,
        inner_group_num=2, num_attention_heads=4, intermediate_size=24, hidden_act="gelu_new",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=20,
        type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
        classifier_dropout_prob=0.1,
    )
    config.update(overrides)
    return config


def albert_state_dict(config, seed=0, num_labels=3, prefix=None, buffers=False,
                      tied_decoder=False, pooler=None, identity_mapping=None):
    """{name: float32 array} as Transformers' `state_dict()` of config["architectures"][0]:
    every group of `albert_layer_groups` (used or not), `embedding_hidden_mapping_in` always
    (the identity with a zero bias when `identity_mapping`, default: when E == H)."""
    arch = config["architectures"][0]
    rng = np.random.default_rng(seed)
    e, h, i_size = config["embedding_size"], config["hidden_size"], config["intermediate_size"]
    v, p, t = config["vocab_size"], config["max_position_embeddings"], config["type_vocab_size"]
    if prefix is None:
        prefix = "" if arch == "AlbertModel" else "albert."
    if identity_mapping is None:
        identity_mapping = e == h
    out = {}
    mat, linear, norm = _drawers(rng, out)
    em = prefix + "embeddings."
    out[em + "word_embeddings.weight"] = mat(v, e)
    out[em + "position_embeddings.weight"] = mat(p, e)
    out[em + "token_type_embeddings.weight"] = mat(t, e)
    norm(em + "LayerNorm", e)
    if buffers:
        out[em + "position_ids"] = np.arange(p, dtype=np.int64)[None]
    mapping = prefix + "encoder.embedding_hidden_mapping_in"
    if identity_mapping:
        out[mapping + ".weight"] = np.eye(h, e, dtype=np.float32)
        out[mapping + ".bias"] = np.zeros(h, np.float32)
    else:
        linear(mapping, h, e)
    for group in range(config["num_hidden_groups"]):
        for inner in range(config["inner_group_num"]):
            base = f"{prefix}encoder.albert_layer_groups.{group}.albert_layers.{inner}."
            for part in ("query", "key", "value", "dense"):
                linear(base + f"attention.{part}", h, h)
            norm(base + "attention.LayerNorm", h)
            linear(base + "ffn", i_size, h)
            linear(base + "ffn_output", h, i_size)
            norm(base + "full_layer_layer_norm", h)
    if arch not in ALBERT_NO_POOLER if pooler is None else pooler:
        linear(prefix + "pooler", h, h)
    heads = ALBERT_HEADS[arch]
    if "mlm" in heads:
        linear("predictions.dense", e, h)
        norm("predictions.LayerNorm", e)
        out["predictions.bias"] = mat(v)
        if tied_decoder:
            out["predictions.decoder.weight"] = out[em + "word_embeddings.weight"].copy()
            out["predictions.decoder.bias"] = out["predictions.bias"].copy()
    if "sop" in heads:
        linear("sop_classifier.classifier", 2, h)
    if "classifier" in heads:
        linear("classifier", num_labels, h)
    if "qa" in heads:
        linear("qa_outputs", 2, h)
    return out


def albert_reference_outputs(config, tensors, input_ids, token_type_ids, attention_mask):
    """Transformers' ALBERT forward in float64 (layer i runs group int(i / (L / G)), each of its
    inner blocks in turn): `sequence_output`, `pooled_output` (with a pooler), `mlm_logits`
    [B, S, V], `sop_logits` [B, 2], `logits`, `start_logits`/`end_logits`."""
    arch = config["architectures"][0]
    w = {name.removeprefix("albert."): np.asarray(value, np.float64)
         for name, value in tensors.items()}
    act = ACTIVATIONS[config["hidden_act"]]
    lin, ln, embed, attend = _arithmetic(config, w, attention_mask)
    x = lin(embed(input_ids, token_type_ids), "encoder.embedding_hidden_mapping_in")
    layers, groups = config["num_hidden_layers"], config["num_hidden_groups"]
    for layer in range(layers):
        group = int(layer / (layers / groups))
        for inner in range(config["inner_group_num"]):
            base = f"encoder.albert_layer_groups.{group}.albert_layers.{inner}."
            context = attend(x, base + "attention.")
            x = ln(lin(context, base + "attention.dense") + x, base + "attention.LayerNorm")
            ffn = lin(act(lin(x, base + "ffn")), base + "ffn_output")
            x = ln(ffn + x, base + "full_layer_layer_norm")
    return _with_heads(x, w, ALBERT_HEADS[arch], arch == "AlbertForSequenceClassification", lin,
                       ln, act, pooler="pooler", mlm="predictions.", mlm_bias="predictions.bias",
                       pair=("sop", "sop_classifier.classifier"))


# --- RoBERTa --------------------------------------------------------------------------------

# The byte-level BPE vocabulary committed for RoBERTa's tokenizer tests (fairseq's layout:
# <s> 0, <pad> 1, </s> 2, <unk> 3, ..., <mask> last); a config of pad_token_id 0 gets it with
# <s> and <pad> swapped (`roberta_vocab`).
ROBERTA_TOKENIZER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                     "roberta_tokenizer")
ROBERTA_VOCAB_SIZE = 1036
ROBERTA_TOKENIZER_CONFIG = {"tokenizer_class": "RobertaTokenizer", "add_prefix_space": False,
                            "errors": "replace", "trim_offsets": True}
ROBERTA_HEADS = {
    "RobertaModel": (),
    "RobertaForMaskedLM": ("mlm",),
    "RobertaForSequenceClassification": ("classifier",),
    "RobertaForQuestionAnswering": ("qa",),
    "RobertaForTokenClassification": ("tagging",),
}


def roberta_vocab(pad_token_id=1):
    """{token: id} of the committed vocab.json, <pad> at `pad_token_id` (1 or 0)."""
    with open(os.path.join(ROBERTA_TOKENIZER_DIR, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    if pad_token_id == 0:
        vocab["<s>"], vocab["<pad>"] = vocab["<pad>"], vocab["<s>"]
    return dict(sorted(vocab.items(), key=lambda item: item[1]))


def roberta_merges():
    """The committed merges.txt's merges, "a b" strings in rank order."""
    with open(os.path.join(ROBERTA_TOKENIZER_DIR, "merges.txt"), encoding="utf-8") as f:
        return [line for line in f.read().split("\n")[1:] if line]


def roberta_hub_config(architecture, **overrides):
    """config.json of a small RoBERTa: H=16, 2 layers, 14 positions (12 usable with pad id 1),
    type_vocab_size 1, epsilon 1e-5, the exact GELU."""
    config = dict(
        architectures=[architecture], model_type="roberta", vocab_size=ROBERTA_VOCAB_SIZE,
        hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=24,
        hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
        max_position_embeddings=14, type_vocab_size=1, initializer_range=0.02,
        layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )
    config.update(overrides)
    return config


def roberta_state_dict(config, seed=0, num_labels=3, prefix=None, buffers=False,
                       tied_decoder=False, pooler=None):
    """{name: float32 array} as Transformers' `state_dict()` of config["architectures"][0]
    (every weight drawn, the token-type and padding rows too; `pooler` False: a RobertaModel
    made with add_pooling_layer=False, as sentence-transformers folders have it)."""
    arch = config["architectures"][0]
    rng = np.random.default_rng(seed)
    h, v = config["hidden_size"], config["vocab_size"]
    if prefix is None:
        prefix = "" if arch == "RobertaModel" else "roberta."
    out = {}
    mat, linear, draw_norm = _drawers(rng, out)

    def norm(name):
        draw_norm(name, h)

    _draw_bert_encoder(config, prefix, buffers, out, mat, linear, norm)
    if arch == "RobertaModel" if pooler is None else pooler:
        linear(prefix + "pooler.dense", h, h)
    heads = ROBERTA_HEADS[arch]
    if "mlm" in heads:
        linear("lm_head.dense", h, h)
        norm("lm_head.layer_norm")
        out["lm_head.bias"] = mat(v)
        if tied_decoder:
            out["lm_head.decoder.weight"] = out[prefix + "embeddings.word_embeddings.weight"].copy()
            out["lm_head.decoder.bias"] = out["lm_head.bias"].copy()
    if "classifier" in heads:
        linear("classifier.dense", h, h)
        linear("classifier.out_proj", num_labels, h)
    if "tagging" in heads:
        linear("classifier", num_labels, h)
    if "qa" in heads:
        linear("qa_outputs", 2, h)
    return out


def write_roberta_snapshot(folder, config, tensors, weights="safetensors", tokenizer="files",
                           tokenizer_config=None):
    """A RoBERTa snapshot: `write_snapshot`'s weights and config.json, and the tokenizer as
    vocab.json + merges.txt (`tokenizer` "files") or tokenizer.json's BPE model ("json")."""
    write_snapshot(folder, config, tensors, weights=weights, tokenizer=(),
                   tokenizer_config=tokenizer_config or ROBERTA_TOKENIZER_CONFIG)
    vocab = roberta_vocab(config.get("pad_token_id", 1))
    merges = roberta_merges()
    if tokenizer == "files":
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    else:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump({
                "version": "1.0", "normalizer": None,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                  "trim_offsets": True, "use_regex": True},
                "model": {"type": "BPE", "dropout": None, "unk_token": None,
                          "continuing_subword_prefix": "", "end_of_word_suffix": "",
                          "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                          "vocab": vocab, "merges": [m.split(" ") for m in merges]},
            }, f, ensure_ascii=False)
    return folder


def assert_roberta_export(back_dir, tensors, config, bare):
    """The Hub folder `back_dir` an export wrote holds `tensors` (the state dict of a RoBERTa or
    XLM-R snapshot, `config` its config.json) bit for bit and float32, less the buffers and tied
    tensors (`bert_tf.roberta.hub_names.LEFT_OUT`), with the `roberta.` prefix unless `bare`
    (XLMRobertaModel, RobertaModel); its config.json has the snapshot's class, model_type and
    sizes. Returns that config.json."""
    from bert_tf.hf.safetensors_io import SafetensorsFile
    from bert_tf.roberta.hub_names import LEFT_OUT

    back = SafetensorsFile(os.path.join(back_dir, "model.safetensors"))
    got = back.read_all()
    expected = {}
    for name, value in tensors.items():
        short = name.removeprefix("roberta.")
        if short not in LEFT_OUT:
            expected[short if bare else name] = value
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert back.entries[name] == ("F32", value.shape), name
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    with open(os.path.join(back_dir, "config.json"), encoding="utf-8") as f:
        hub_config = json.load(f)
    assert hub_config["architectures"] == config["architectures"]
    assert hub_config["model_type"] == config["model_type"]
    for key in ("hidden_act", "layer_norm_eps", "pad_token_id", "type_vocab_size",
                "max_position_embeddings", "vocab_size"):
        assert hub_config[key] == config[key], key
    return hub_config


def roberta_forward(tmp_path, arch, folder, feats, encoder):
    """The outputs of our model of Hub folder `folder` of Transformers class `arch` on `feats`:
    `encoder.from_pretrained` for the bare model (`RobertaModel`, `XLMRobertaModel`), the
    pretraining model on the imported folder for `*ForMaskedLM`, else `BertTaskModel`."""
    from bert_tf import checkpoints, families
    from bert_tf.bert.pretraining import BertPretrainingModel
    from bert_tf.hf.convert import import_snapshot
    from bert_tf.models import BertTaskModel

    if arch.endswith("Model"):
        return encoder.from_pretrained(folder)(feats)
    if arch.endswith("ForMaskedLM"):
        import_snapshot(folder, tmp_path / "google")
        model = BertPretrainingModel(families.read_config(tmp_path / "google/bert_config.json"))
        checkpoints.load_original_checkpoint(model, tmp_path / "google")
        return model(feats)
    return BertTaskModel.from_pretrained(folder)(feats)


def roberta_positions(input_ids, pad_token_id):
    """Transformers' create_position_ids_from_input_ids: cumsum(ids != pad) * (ids != pad) +
    pad."""
    mask = (input_ids != pad_token_id).astype(np.int64)
    return np.cumsum(mask, axis=1) * mask + pad_token_id


def roberta_reference_outputs(config, tensors, input_ids, token_type_ids, attention_mask):
    """Transformers' RoBERTa forward in float64: `sequence_output`, `pooled_output` (with a
    pooler), `mlm_logits` [B, S, V] (lm_head: dense, exact GELU, layer_norm, tied decoder),
    `logits` ([B, C]: classifier.dense, tanh, out_proj on <s>; or [B, S, C] for tagging),
    `start_logits`/`end_logits`."""
    arch = config["architectures"][0]
    w = {name.removeprefix("roberta."): np.asarray(value, np.float64)
         for name, value in tensors.items()}
    act = ACTIVATIONS[config.get("hidden_act", "gelu")]
    lin, ln, _, attend = _arithmetic(config, w, attention_mask)
    positions = roberta_positions(input_ids, config.get("pad_token_id", 1))
    x = ln(w["embeddings.word_embeddings.weight"][input_ids]
           + w["embeddings.token_type_embeddings.weight"][token_type_ids]
           + w["embeddings.position_embeddings.weight"][positions], "embeddings.LayerNorm")
    x = _bert_layers(config, x, lin, ln, attend, act)
    out = {"sequence_output": x}
    heads = ROBERTA_HEADS[arch]
    if "pooler.dense.weight" in w:
        out["pooled_output"] = np.tanh(lin(x[:, 0], "pooler.dense"))
    if "mlm" in heads:
        y = ln(ACTIVATIONS["gelu"](lin(x, "lm_head.dense")), "lm_head.layer_norm")
        out["mlm_logits"] = y @ w["embeddings.word_embeddings.weight"].T + w["lm_head.bias"]
    if "classifier" in heads:
        out["pooled_output"] = np.tanh(lin(x[:, 0], "classifier.dense"))
        out["logits"] = lin(out["pooled_output"], "classifier.out_proj")
    if "tagging" in heads:
        out["logits"] = lin(x, "classifier")
    if "qa" in heads:
        logits = lin(x, "qa_outputs")
        out["start_logits"], out["end_logits"] = logits[..., 0], logits[..., 1]
    return out
