"""The tokenizer files of a Hub snapshot, read and written for the families' tokenizers:
BERT's WordPiece (`vocab.txt`, `tokenizer.json`), ALBERT's SentencePiece (`spiece.model`) and
RoBERTa's byte-level BPE (`vocab.json` + `merges.txt`, or `tokenizer.json`'s BPE model), the
last two at the end of this module. A family's Hub table says which (`TOKENIZER_FILES`);
`snapshot_tokenizer` and `write_hub_files` take that kind.

The original tokenizer knows one setting, `do_lower_case` (lower-casing and accent stripping
together, CJK ideographs always split, `##` continuations, an unknown token, words of up to 200
characters); its special tokens are the family's (`SpecialTokens`, given by the caller: the
tokenizer class's `special_tokens`, or the family's Hub table). A snapshot says more: `tokenizer_config.json` (`do_lower_case`,
`strip_accents` (None = follow lower-casing, the original's rule), `tokenize_chinese_chars`,
`never_split`) and `tokenizer.json` (a WordPiece `model` with its vocab, a `BertNormalizer`).
`read_settings` finds `do_lower_case` and warns of every setting with no equivalent in the
original; `vocab_tokens` reads the vocabulary from `vocab.txt` or else `tokenizer.json`.

Pure Python: `FullTokenizer.from_pretrained` uses it without TensorFlow.
"""

import json
import os
import re
import tempfile

from bert_tf.hf import HubError

VOCAB_FILE = "vocab.txt"
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
SPIECE_MODEL = "spiece.model"
_ORIGINAL_MAX_CHARS = 200
# The released checkpoints' folder names say their casing (as
# bert_tf.text.validate_case_matches_checkpoint reads them).
_CASED_NAME = re.compile(r"(^|[_-])cased_L-")
_UNCASED_NAME = re.compile(r"(^|[_-])uncased_L-|^(multilingual|chinese)_L-")


def read_json(path):
    """A JSON object from `path`, or a one-line HubError naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise HubError(f"{path}: cannot read ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise HubError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise HubError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def _wordpiece_model(path):
    data = read_json(path)
    model = data.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        kind = model.get("type") if isinstance(model, dict) else None
        raise HubError(f"{path}: model type {kind!r}, expected WordPiece (the original "
                       "tokenizer is WordPiece only)")
    return data, model


def vocab_from_tokenizer_json(path, special_tokens):
    """The tokens of `tokenizer.json`'s WordPiece vocab in id order (ids must be 0..n-1); its
    continuation prefix and unknown token must be `special_tokens`' (a `SpecialTokens`)."""
    path = os.fspath(path)
    _, model = _wordpiece_model(path)
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise HubError(f"{path}: model.vocab is not a non-empty {{token: id}} object")
    prefix, unk = special_tokens.continuation_prefix, special_tokens.unk
    if model.get("continuing_subword_prefix", prefix) != prefix:
        raise HubError(f"{path}: model.continuing_subword_prefix is "
                       f"{model['continuing_subword_prefix']!r}; the original tokenizer uses "
                       f"{prefix!r}")
    if model.get("unk_token", unk) != unk:
        raise HubError(f"{path}: model.unk_token is {model['unk_token']!r}; the original "
                       f"tokenizer uses {unk!r}")
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if not isinstance(index, int) or not 0 <= index < len(vocab) or tokens[index] is not None:
            raise HubError(f"{path}: model.vocab gives {token!r} id {index!r}; ids must be "
                           f"0..{len(vocab) - 1}, each once")
        if token != token.strip() or "\n" in token or not token:
            raise HubError(f"{path}: model.vocab token {token!r} (id {index}) has surrounding "
                           "whitespace or a newline: a vocab.txt line cannot hold it")
        tokens[index] = token
    return tokens


def vocab_text(tokens):
    """vocab.txt's bytes: one token a line, in id order."""
    return "".join(f"{token}\n" for token in tokens).encode("utf-8")


def snapshot_vocab(hf_dir, special_tokens):
    """(vocab.txt bytes, source description) of a snapshot: its vocab.txt as it is, else
    tokenizer.json's WordPiece vocab (with `special_tokens`' continuation prefix and unknown
    token)."""
    vocab_path = os.path.join(hf_dir, VOCAB_FILE)
    if os.path.isfile(vocab_path):
        with open(vocab_path, "rb") as f:
            return f.read(), vocab_path
    json_path = os.path.join(hf_dir, TOKENIZER_JSON)
    if os.path.isfile(json_path):
        return (vocab_text(vocab_from_tokenizer_json(json_path, special_tokens)),
                f"{json_path} (model.vocab)")
    raise HubError(f"{hf_dir}: no {VOCAB_FILE} and no {TOKENIZER_JSON}: the snapshot has no "
                   "vocabulary")


def read_settings(folder):
    """What the tokenizer files of `folder` say, for the original tokenizer.

    Returns:
      (do_lower_case or None when no file says, notes: list of lines saying what was found,
      warnings: list of lines naming each setting the original tokenizer cannot follow).
    """
    notes, warnings = [], []
    do_lower_case = None
    config_path = os.path.join(folder, TOKENIZER_CONFIG)
    config = read_json(config_path) if os.path.isfile(config_path) else {}
    json_path = os.path.join(folder, TOKENIZER_JSON)
    normalizer, model = {}, {}
    if os.path.isfile(json_path):
        data = read_json(json_path)

        def part(key):
            value = data.get(key)
            return value if isinstance(value, dict) else {}

        normalizer, model = part("normalizer"), part("model")
        if normalizer.get("type") not in (None, "BertNormalizer"):
            warnings.append(f"{json_path}: normalizer {normalizer.get('type')!r} is not "
                            "BertNormalizer; the original tokenizer normalizes as BERT does")
            normalizer = {}
        pre = part("pre_tokenizer").get("type")
        if pre not in (None, "BertPreTokenizer"):
            warnings.append(f"{json_path}: pre_tokenizer {pre!r} is not BertPreTokenizer; the "
                            "original splits on whitespace and punctuation as BERT does")
        max_chars = model.get("max_input_chars_per_word", _ORIGINAL_MAX_CHARS)
        if max_chars != _ORIGINAL_MAX_CHARS:
            warnings.append(
                f"{json_path}: model.max_input_chars_per_word={max_chars}; the original "
                f"tokenizer splits words of up to {_ORIGINAL_MAX_CHARS} characters (a longer "
                "one is [UNK] in both), so only words in between tokenize differently")
    if isinstance(config.get("do_lower_case"), bool):
        do_lower_case = config["do_lower_case"]
        notes.append(f"do_lower_case={do_lower_case} ({config_path})")
    elif isinstance(normalizer.get("lowercase"), bool):
        do_lower_case = normalizer["lowercase"]
        notes.append(f"do_lower_case={do_lower_case} ({json_path}: normalizer.lowercase)")
    strip_accents = config.get("strip_accents", normalizer.get("strip_accents"))
    if do_lower_case is not None and strip_accents is not None and strip_accents != do_lower_case:
        warnings.append(
            f"strip_accents={strip_accents} with do_lower_case={do_lower_case}: no equivalent in "
            "the original tokenizer, which strips accents exactly when it lower-cases")
    chinese = config.get("tokenize_chinese_chars", normalizer.get("handle_chinese_chars", True))
    if chinese is False:
        warnings.append("tokenize_chinese_chars=False: no equivalent in the original tokenizer, "
                        "which always splits CJK ideographs into single characters")
    if normalizer.get("clean_text", True) is False:
        warnings.append(f"{json_path}: normalizer.clean_text=False: no equivalent in the "
                        "original tokenizer, which always removes control characters")
    never_split = config.get("never_split")
    if never_split:
        warnings.append(f"never_split={never_split!r}: no equivalent in the original tokenizer, "
                        "which splits every word")
    return do_lower_case, notes, warnings


def casing_from_folder_name(folder):
    """True/False when `folder`'s name is a released uncased/cased model's, else None."""
    name = os.path.basename(os.path.normpath(folder))
    if _UNCASED_NAME.search(name):
        return True
    if _CASED_NAME.search(name):
        return False
    return None


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def special_tokens_map(special_tokens):
    """special_tokens_map.json's object of a `SpecialTokens`."""
    s = special_tokens
    return {"unk_token": s.unk, "sep_token": s.sep, "pad_token": s.pad, "cls_token": s.cls,
            "mask_token": s.mask}


def write_hub_tokenizer_files(folder, vocab_bytes, do_lower_case, model_max_length,
                              tokenizer_class, special_tokens):
    """vocab.txt, tokenizer_config.json and special_tokens_map.json of a WordPiece
    `tokenizer_class` (Transformers' name, e.g. "BertTokenizer") doing what the original
    tokenizer does with `do_lower_case`, with `special_tokens` (a `SpecialTokens`)."""
    with open(os.path.join(folder, VOCAB_FILE), "wb") as f:
        f.write(vocab_bytes)
    tokens = special_tokens_map(special_tokens)
    write_json(os.path.join(folder, TOKENIZER_CONFIG), {
        "tokenizer_class": tokenizer_class,
        "do_lower_case": bool(do_lower_case),
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "model_max_length": int(model_max_length),
        **tokens,
    })
    write_json(os.path.join(folder, SPECIAL_TOKENS_MAP), tokens)


def write_original_tokenizer_config(folder, do_lower_case):
    """The imported folder's tokenizer_config.json: only what the original tokenizer does (the
    scripts ignore it and take --do_lower_case; from_pretrained and export read it)."""
    write_json(os.path.join(folder, TOKENIZER_CONFIG), {"do_lower_case": bool(do_lower_case)})


def resolve_do_lower_case(folder, vocab_file=None):
    """(do_lower_case, how it was found) for a folder: its tokenizer files, else a released
    model's folder name, else True (the original scripts' default)."""
    for directory in dict.fromkeys(d for d in (folder, vocab_file and os.path.dirname(vocab_file))
                                   if d):
        found, notes, _ = read_settings(directory)
        if found is not None:
            return found, notes[0]
        by_name = casing_from_folder_name(directory)
        if by_name is not None:
            return by_name, f"do_lower_case={by_name} (the released model name {directory})"
    return True, ("do_lower_case=True (no tokenizer_config.json or tokenizer.json says; the "
                  "original scripts' default)")


def tokenizer_from_pretrained(tokenizer_class, folder, do_lower_case=None, **kwargs):
    """A `tokenizer_class` (e.g. FullTokenizer) of a folder's vocab.txt (else tokenizer.json's
    vocab); `do_lower_case` None = as its tokenizer files or released model name say, else
    True."""
    folder = os.fspath(folder)
    if do_lower_case is None:
        do_lower_case, _ = resolve_do_lower_case(folder)
    vocab_bytes, _ = snapshot_vocab(folder, tokenizer_class.special_tokens)
    with tempfile.TemporaryDirectory(prefix="bert_tf_vocab_") as tmp:
        vocab_file = os.path.join(tmp, VOCAB_FILE)
        with open(vocab_file, "wb") as f:
            f.write(vocab_bytes)
        return tokenizer_class(vocab_file, do_lower_case, **kwargs)


# --- SentencePiece (ALBERT) ------------------------------------------------------------------


def snapshot_sentencepiece(hf_dir):
    """(spiece.model bytes, source) of a snapshot: the SentencePiece model the original's
    tokenizer loads, carried over byte for byte. A snapshot with only tokenizer.json is refused:
    its Unigram table is Transformers' rewrite of the model, not the model."""
    path = os.path.join(hf_dir, SPIECE_MODEL)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read(), path
    also = (f" (its {TOKENIZER_JSON} is Transformers' rewrite of the model, which the original's "
            "SentencePiece cannot load)" if os.path.isfile(os.path.join(hf_dir, TOKENIZER_JSON))
            else "")
    raise HubError(f"{hf_dir}: no {SPIECE_MODEL}: the original tokenizer needs the "
                   f"SentencePiece model{also}")


def read_sentencepiece_settings(folder):
    """What `tokenizer_config.json` of `folder` says for the original's SentencePiece tokenizer
    (`preprocess_text`: whitespace collapsed, accents dropped, lower-cased with
    `do_lower_case`).

    Returns:
      (do_lower_case or None when the file does not say, notes, warnings): as `read_settings`.
    """
    notes, warnings = [], []
    config_path = os.path.join(folder, TOKENIZER_CONFIG)
    config = read_json(config_path) if os.path.isfile(config_path) else {}
    do_lower_case = config.get("do_lower_case")
    if isinstance(do_lower_case, bool):
        notes.append(f"do_lower_case={do_lower_case} ({config_path})")
    else:
        do_lower_case = None
    if config.get("remove_space", True) is False:
        warnings.append(f"{config_path}: remove_space=False: no equivalent in the original "
                        "tokenizer, which always collapses whitespace runs (preprocess_text)")
    if config.get("keep_accents", False) is True:
        warnings.append(f"{config_path}: keep_accents=True: no equivalent in the original "
                        "tokenizer, which always drops accents (NFKD, combining marks removed)")
    return do_lower_case, notes, warnings


def write_hub_sentencepiece_files(folder, model_bytes, do_lower_case, model_max_length,
                                  tokenizer_class, special_tokens):
    """spiece.model, tokenizer_config.json and special_tokens_map.json of Transformers'
    `tokenizer_class` (e.g. "AlbertTokenizer") doing what the original's `preprocess_text` and
    SentencePiece do with `do_lower_case` (whitespace collapsed, accents dropped)."""
    with open(os.path.join(folder, SPIECE_MODEL), "wb") as f:
        f.write(model_bytes)
    tokens = special_tokens_map(special_tokens)
    # The original's pairs begin with [CLS] and end with [SEP]: Transformers' bos/eos.
    tokens.update(bos_token=special_tokens.cls, eos_token=special_tokens.sep)
    write_json(os.path.join(folder, TOKENIZER_CONFIG), {
        "tokenizer_class": tokenizer_class,
        "do_lower_case": bool(do_lower_case),
        "remove_space": True,
        "keep_accents": False,
        "model_max_length": int(model_max_length),
        **tokens,
    })
    write_json(os.path.join(folder, SPECIAL_TOKENS_MAP), tokens)


# --- byte-level BPE (RoBERTa) ------------------------------------------------------------------

VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"
# The first line GPT-2's and RoBERTa's merges.txt carry (readers skip it).
MERGES_HEADER = "#version: 0.2\n"


def snapshot_bpe(hf_dir, read_tokenizer_json):
    """({vocab.json: bytes, merges.txt: bytes}, source, warnings) of a snapshot: its two files
    byte for byte, else its tokenizer.json (as Transformers 5 saves a snapshot) read by the
    family's `read_tokenizer_json(path)` -> (vocab {token: id}, merges [(left, right)],
    settings), which refuses what its tokenizer does not compute, written as the two files."""
    paths = {name: os.path.join(hf_dir, name) for name in (VOCAB_JSON, MERGES_TXT)}
    present = [name for name, path in paths.items() if os.path.isfile(path)]
    if len(present) == 2:
        files = {}
        for name, path in paths.items():
            with open(path, "rb") as f:
                files[name] = f.read()
        return files, f"{paths[VOCAB_JSON]}, {paths[MERGES_TXT]}", []
    json_path = os.path.join(hf_dir, TOKENIZER_JSON)
    if os.path.isfile(json_path):
        vocab, merges, settings = read_tokenizer_json(json_path)
        warnings = []
        if settings.get("add_prefix_space"):
            warnings.append(f"{json_path}: pre_tokenizer.add_prefix_space=true: "
                            + _PREFIX_SPACE_WARNING)
        files = {VOCAB_JSON: (json.dumps(vocab, ensure_ascii=False) + "\n").encode("utf-8"),
                 MERGES_TXT: (MERGES_HEADER + "".join(f"{a} {b}\n" for a, b in merges)
                              ).encode("utf-8")}
        return files, f"{json_path} (model.vocab, model.merges)", warnings
    if present:
        missing = MERGES_TXT if present == [VOCAB_JSON] else VOCAB_JSON
        raise HubError(f"{hf_dir}: {present[0]} without {missing} (and no {TOKENIZER_JSON}): "
                       "byte-level BPE needs both")
    raise HubError(f"{hf_dir}: no {VOCAB_JSON} + {MERGES_TXT} and no {TOKENIZER_JSON}: the "
                   "snapshot has no vocabulary")


_PREFIX_SPACE_WARNING = ("the scripts tokenize as RoBERTa was pretrained, without a space "
                         "before the first word")


def _token_content(value):
    """A special token of tokenizer_config.json / special_tokens_map.json: a string, or an
    AddedToken object with its `content`."""
    return value.get("content") if isinstance(value, dict) else value


def read_bpe_settings(folder, special_tokens, family="RoBERTa", prefix_space=False):
    """What `tokenizer_config.json` and `special_tokens_map.json` of `folder` say for RoBERTa's
    byte-level BPE tokenizer (or XLM-R's SentencePiece: `family` "XLM-RoBERTa",
    `prefix_space` True): a special token other than `special_tokens`' is refused (its ids
    would differ); settings the tokenizer cannot follow are warned of (lower-casing, an
    `add_prefix_space` other than `prefix_space`, the tokenizer's own: RoBERTa adds no space
    before the first word, SentencePiece always does).

    Returns:
      (do_lower_case: always False (neither has a casing option), notes, warnings).
    """
    notes, warnings = [], []
    ours = special_tokens_map(special_tokens)
    ours.update(bos_token=special_tokens.cls, eos_token=special_tokens.sep)
    for name in (TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        data = read_json(path)
        for key, token in ours.items():
            given = _token_content(data.get(key, token))
            if given != token:
                raise HubError(f"{path}: {key} is {given!r}; {family}'s tokenizer uses "
                               f"{token!r}")
        if name != TOKENIZER_CONFIG:
            continue
        if data.get("do_lower_case") is True:
            warnings.append(f"{path}: do_lower_case=True: Transformers' {family} tokenizer does "
                            "not lower-case, nor does ours")
        if data.get("add_prefix_space", prefix_space) is not prefix_space:
            warnings.append(f"{path}: add_prefix_space={data['add_prefix_space']}: "
                            + (_PREFIX_SPACE_WARNING if not prefix_space else
                               "the scripts tokenize as SentencePiece does, with a word start "
                               "before the first word"))
    return False, notes, warnings


def _roberta_special_tokens(special_tokens, vocab):
    """(special_tokens_map.json's object with `<s>` and `</s>` also as bos/eos,
    tokenizer_config.json's `added_tokens_decoder` {id: AddedToken object}) of RoBERTa's layout:
    `<mask>` strips the whitespace on its left, as fairseq's and Transformers' RoBERTa and
    XLM-R do. `vocab`: {token: id}."""
    tokens = special_tokens_map(special_tokens)
    tokens.update(bos_token=special_tokens.cls, eos_token=special_tokens.sep)
    added = {}
    for token in dict.fromkeys(tokens.values()):
        if token in vocab:
            added[str(vocab[token])] = {
                "content": token, "lstrip": token == special_tokens.mask, "rstrip": False,
                "normalized": False, "single_word": False, "special": True}
    return tokens, added


def write_hub_bpe_files(folder, vocab_bytes, merges_bytes, model_max_length, tokenizer_class,
                        special_tokens):
    """vocab.json, merges.txt (byte for byte), tokenizer_config.json and
    special_tokens_map.json of Transformers' `tokenizer_class` ("RobertaTokenizer") with
    RoBERTa's settings: no prefix space, `special_tokens` (`<s>` and `</s>` also as bos/eos),
    `<mask>` stripping the space before it, as fairseq's and Transformers' RoBERTa do."""
    vocab = json.loads(vocab_bytes.decode("utf-8"))
    for name, data in ((VOCAB_JSON, vocab_bytes), (MERGES_TXT, merges_bytes)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    tokens, added = _roberta_special_tokens(special_tokens, vocab)
    write_json(os.path.join(folder, TOKENIZER_CONFIG), {
        "tokenizer_class": tokenizer_class,
        "add_prefix_space": False,
        "errors": "replace",
        "trim_offsets": True,
        "model_max_length": int(model_max_length),
        "added_tokens_decoder": added,
        **tokens,
    })
    write_json(os.path.join(folder, SPECIAL_TOKENS_MAP), tokens)


# --- SentencePiece with fairseq's dictionary (XLM-RoBERTa) ----------------------------------

FAIRSEQ_SPM_MODEL = "sentencepiece.bpe.model"


def snapshot_fairseq_sentencepiece(hf_dir, read_tokenizer_json):
    """(sentencepiece.bpe.model bytes, source) of a snapshot: its file byte for byte
    (xlm-roberta-base has it beside its tokenizer.json), else the model the family's
    `read_tokenizer_json(path)` rebuilds from tokenizer.json (what Transformers 5's
    save_pretrained writes alone; the same ids, other bytes)."""
    path = os.path.join(hf_dir, FAIRSEQ_SPM_MODEL)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read(), path
    json_path = os.path.join(hf_dir, TOKENIZER_JSON)
    if os.path.isfile(json_path):
        return (read_tokenizer_json(json_path),
                f"{json_path} (its Unigram vocabulary and normalizer rebuilt as "
                f"{FAIRSEQ_SPM_MODEL})")
    raise HubError(f"{hf_dir}: no {FAIRSEQ_SPM_MODEL} and no {TOKENIZER_JSON}: the snapshot has "
                   "no vocabulary")


def write_hub_fairseq_sentencepiece_files(folder, model_bytes, model_max_length,
                                          tokenizer_class, special_tokens):
    """sentencepiece.bpe.model (byte for byte), tokenizer_config.json and
    special_tokens_map.json of Transformers' `tokenizer_class` ("XLMRobertaTokenizer"): ids
    <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> = the model's piece count + 1 (fairseq's
    dictionary), `<mask>` stripping the whitespace on its left."""
    import sentencepiece as spm  # only here: the rest of this module needs no package

    processor = spm.SentencePieceProcessor()
    processor.LoadFromSerializedProto(model_bytes)
    vocab = {special_tokens.cls: 0, special_tokens.pad: 1, special_tokens.sep: 2,
             special_tokens.unk: 3, special_tokens.mask: processor.GetPieceSize() + 1}
    with open(os.path.join(folder, FAIRSEQ_SPM_MODEL), "wb") as f:
        f.write(model_bytes)
    tokens, added = _roberta_special_tokens(special_tokens, vocab)
    write_json(os.path.join(folder, TOKENIZER_CONFIG), {
        "tokenizer_class": tokenizer_class,
        "model_max_length": int(model_max_length),
        "added_tokens_decoder": added,
        **tokens,
    })
    write_json(os.path.join(folder, SPECIAL_TOKENS_MAP), tokens)


# --- by kind -----------------------------------------------------------------------------------

# The files of each kind an import copies and an export writes, the vocabulary first.
FILES = {"wordpiece": (VOCAB_FILE,), "sentencepiece": (SPIECE_MODEL,),
         "bpe": (VOCAB_JSON, MERGES_TXT), "fairseq_sentencepiece": (FAIRSEQ_SPM_MODEL,)}
# Whether the tokenizer of each kind has a casing option (do_lower_case); the others are cased.
HAS_CASING = {"wordpiece": True, "sentencepiece": True, "bpe": False,
              "fairseq_sentencepiece": False}


def snapshot_tokenizer(hf_dir, kind, special_tokens, read_tokenizer_json=None):
    """What an import takes from a snapshot's tokenizer files, for a family whose Hub table says
    `kind` ("wordpiece", "sentencepiece" or "bpe"; "bpe" reads a tokenizer.json with the
    family's `read_tokenizer_json`, see `snapshot_bpe`).

    Returns:
      ({file name: bytes} of the Google folder's vocabulary files (`FILES[kind]`: vocab.txt,
      spiece.model, or vocab.json and merges.txt), where they came from, do_lower_case or None,
      notes, warnings).
    """
    if kind == "sentencepiece":
        data, source = snapshot_sentencepiece(hf_dir)
        return ({SPIECE_MODEL: data}, source, *read_sentencepiece_settings(hf_dir))
    if kind == "fairseq_sentencepiece":
        data, source = snapshot_fairseq_sentencepiece(hf_dir, read_tokenizer_json)
        do_lower_case, notes, warnings = read_bpe_settings(
            hf_dir, special_tokens, family="XLM-RoBERTa", prefix_space=True)
        return {FAIRSEQ_SPM_MODEL: data}, source, do_lower_case, notes, warnings
    if kind == "bpe":
        files, source, warnings = snapshot_bpe(hf_dir, read_tokenizer_json)
        do_lower_case, notes, more = read_bpe_settings(hf_dir, special_tokens)
        return files, source, do_lower_case, notes, warnings + more
    data, source = snapshot_vocab(hf_dir, special_tokens)
    return ({VOCAB_FILE: data}, source, *read_settings(hf_dir))


def write_hub_files(kind, folder, files, do_lower_case, model_max_length, tokenizer_class,
                    special_tokens):
    """Writes the Hub tokenizer files of `kind` into `folder`: `files` {name of FILES[kind]:
    bytes} and the settings files (see the writers above)."""
    if kind == "sentencepiece":
        write_hub_sentencepiece_files(folder, files[SPIECE_MODEL], do_lower_case,
                                      model_max_length, tokenizer_class, special_tokens)
    elif kind == "fairseq_sentencepiece":
        write_hub_fairseq_sentencepiece_files(folder, files[FAIRSEQ_SPM_MODEL], model_max_length,
                                              tokenizer_class, special_tokens)
    elif kind == "bpe":
        write_hub_bpe_files(folder, files[VOCAB_JSON], files[MERGES_TXT], model_max_length,
                            tokenizer_class, special_tokens)
    else:
        write_hub_tokenizer_files(folder, files[VOCAB_FILE], do_lower_case, model_max_length,
                                  tokenizer_class, special_tokens)
