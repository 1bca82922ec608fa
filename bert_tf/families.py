"""The model families and the one registry that finds them.

A family (BERT, ELECTRA, ...) is a package of bert_tf with the same rooms as its siblings:
`config.py` (its hyper-parameters), `model.py` (its encoder, on the shared `bert_tf.layers`,
naming its own checkpoint variables), `pretraining.py` (its pretraining model and objective),
its tokenizer, its pretraining-data builder and its commands, and `family.py`, which
describes it to the rest of bert_tf as a `Family`. A config names its family in `model_type`
(default "bert"); the tasks, the trainer, checkpoints, export and the Hub bridge ask this
registry for what they need, and no core module names a family.

Adding a family = a new package with those rooms + its line in `PACKAGES`.

Pure Python: importing this module imports no family (nor TensorFlow); `get` imports the one
asked for.
"""

import dataclasses
import importlib
import json
import os

# model_type -> the package whose `family` module defines `FAMILY`.
PACKAGES = {
    "bert": "bert_tf.bert",
    "electra": "bert_tf.electra",
    "albert": "bert_tf.albert",
    "roberta": "bert_tf.roberta",
    "xlm-roberta": "bert_tf.xlm_roberta",
}
# Config keys that name a family when a config has no `model_type`: Google's albert_config.json
# has none (nor the original's AlbertConfig), but only ALBERT's configs hold these.
SIGNATURE_KEYS = {
    "albert": ("num_hidden_groups", "inner_group_num"),
}
DEFAULT = "bert"
NAMES = tuple(PACKAGES)


@dataclasses.dataclass(frozen=True)
class Family:
    """What a family hands the rest of bert_tf.

    Attributes:
      name: its `model_type`.
      config: its config class (`from_dict(d, source=...)`, `from_json_file(path)`,
        `to_json_file(path)`, `model_type`); its errors are `ConfigError`s.
      encoder: the encoder class, `encoder(config, name=...)`: a keras.Model taking a dict of
        int `input_ids`, `input_mask`, `segment_ids` [B, S] and returning `sequence_output`
        [B, S, H], `pooled_output` [B, H] (and the other outputs of `BertModel`); with
        `checkpoint_variables()`, `embedding_table` and `gathered_tables` (the tables the
        original looks up with `tf.nn.embedding_lookup`, whose gradient it clips by rows).
      tokenizer: `tokenizer(vocab_file, do_lower_case, **kwargs)`, the host tokenizer; its
        `special_tokens` (a `SpecialTokens`) name the family's special tokens. One whose
        pieces mark word starts may also give `tokenize_with_offsets(text)` -> (pieces, the
        (start, end) characters of `text` of each piece): SQuAD then aligns answers and
        predicted spans to the context by characters (`bert_tf.data.squad`); WordPiece's are
        mapped back by the original's `get_final_text`.
      graph_tokenizer: `graph_tokenizer(vocab, do_lower_case)`, the same tokenizer in
        TensorFlow ops for SavedModels that take text (`bert_tf.serving`): a tf.Module mapping
        string [N] to ragged int64 piece ids [N, None], with the host tokenizer's ids. `vocab`
        is the host tokenizer's `vocab` (ALBERT's also carries its SentencePiece model). Its
        default mode is the family's most portable, named by its `core_ops` attribute: True
        when the graph holds core TensorFlow ops only (BERT's), False when a SavedModel of it
        needs `import tensorflow_text` before loading (ALBERT's: SentencePiece has no
        core-op form, and it refuses `core_ops=True`). One whose host tokenizer has
        `tokenize_with_offsets` may also give `tokenize_with_offsets(texts)`: texts tf.string
        [N] -> (ids, starts, ends), int64 RaggedTensors [N, None], the ids of its `__call__`
        and for each piece the BYTES [start, end) of its UTF-8 input string it stands for:
        the host's character spans converted to bytes (start inclusive, end exclusive; a
        piece that stands for no character has start == end where its word starts; a
        position past the last character is the string's length; bytes that are not UTF-8
        belong to no character). The SQuAD export then maps predicted pieces back to the
        context by them (ALBERT's), as `bert_tf.data.squad` does with the host's; WordPiece's
        has `normalize` instead (BasicTokenizer's character mapping, for `get_final_text`).
      tokenizer_file_flags: the keyword arguments of `tokenizer` (and nothing else) that name
        files the commands take as flags of the same name, beside --vocab_file (RoBERTa's
        `merges_file`: --merges_file); each None (the flag not given) lets the tokenizer find
        its file beside vocab_file. `make_tokenizer` passes them; the commands define the
        flags once (`bert_tf.flags.define_tokenizer_file_flags`) and never name a family.
      word_tokenizer_kwargs: keyword arguments of `tokenizer` and `graph_tokenizer` for
        tasks whose text comes split into words, each tokenized alone (SQuAD's context words,
        tagging's words): RoBERTa's `add_prefix_space=True`, Transformers'
        `is_split_into_words`, so that every word starts with "Ġ" as inside running text.
        Those tasks tokenize all their text with them (SQuAD's question too).
      cased: whether the tokenizer never lower-cases (RoBERTa's byte-level BPE): the
        commands' --do_lower_case then defaults to false for it (the original BERT's default,
        true, applies to the others) and an explicit --do_lower_case=true is refused.
    """

    name: str
    config: type
    encoder: type
    tokenizer: object
    graph_tokenizer: object
    tokenizer_file_flags: tuple = ()
    word_tokenizer_kwargs: dict = dataclasses.field(default_factory=dict)
    cased: bool = False


@dataclasses.dataclass(frozen=True)
class SpecialTokens:
    """A family's special tokens, how its word pieces mark word boundaries, and how it lays
    out one or two sequences.

    Attributes:
      cls, sep, mask, pad, unk: the tokens (`[CLS]`, ...).
      continuation_prefix: the prefix of a word piece that continues a word (WordPiece's
        `##`), or None where pieces mark the START of a word instead.
      word_start_prefix: the prefix of a piece that starts a word (SentencePiece's `▁`,
        byte-level BPE's `Ġ`), or None.
      pair_separators: how many `sep` tokens stand between the two sequences of a pair
        (BERT's `[CLS] a [SEP] b [SEP]`: 1; RoBERTa's `<s> a </s></s> b </s>`: 2).
      pair_segments: whether the second sequence of a pair (and its final `sep`) gets
        segment id 1 (BERT) or 0 like the rest (RoBERTa).
      pads_with_token: whether padding holds the id of `pad` (RoBERTa's `<pad>`, 1, as
        Transformers pads) or 0 (the original BERT's and ALBERT's literal zeros, whatever the
        vocab); see `pad_id`.
    """

    cls: str
    sep: str
    mask: str
    pad: str
    unk: str
    continuation_prefix: str | None = None
    word_start_prefix: str | None = None
    pair_separators: int = 1
    pair_segments: bool = True
    pads_with_token: bool = False

    def pad_id(self, vocab):
        """The id padded positions of `input_ids` hold: `vocab[pad]` with `pads_with_token`,
        else 0. Only padded rows' outputs depend on it (attention masks padding out, and
        RoBERTa's positions come from the mask), which the SQuAD head's n-best and loss read
        (the original's arithmetic over all max_seq_length positions)."""
        return int(vocab[self.pad]) if self.pads_with_token else 0

    def pair_budget(self, max_seq_length):
        """How many pieces of the two sequences a pair of `max_seq_length` positions holds
        (max_seq_length - 3 for BERT: [CLS] and two [SEP])."""
        return max_seq_length - 2 - self.pair_separators

    def lay_out(self, first, second, cls, sep):
        """The sequence of `cls first sep` and, when `second` is non-empty,
        `(pair_separators - 1) * sep second sep` after it; `cls` and `sep` are tokens or ids,
        `first` and `second` lists already truncated (see `pair_budget`).

        Returns:
          (list, num_first): the laid-out items, and how many of them lead with segment id 0;
          the rest have segment id 1 (all are segment 0 without `pair_segments`).
        """
        items = [cls, *first, sep]
        if not second:
            return items, len(items)
        items += [sep] * (self.pair_separators - 1)
        num_first = len(items)
        items += [*second, sep]
        return items, num_first if self.pair_segments else len(items)

    def is_continuation(self, token):
        """Whether word piece `token` continues the word of the piece before it."""
        if self.continuation_prefix is not None:
            return token.startswith(self.continuation_prefix)
        return not token.startswith(self.word_start_prefix)

    def detokenize(self, tokens):
        """The text of word pieces `tokens` (list of str), words separated by one space.

        WordPiece: run_squad.py's `" ".join(tokens)` with " ##" then "##" removed (so a "##"
        inside a piece goes too, as there). Word-start prefixes: the pieces joined, each prefix
        a space.
        """
        if self.continuation_prefix is not None:
            prefix = self.continuation_prefix
            text = " ".join(tokens).replace(" " + prefix, "").replace(prefix, "")
        else:
            text = "".join(tokens).replace(self.word_start_prefix, " ")
        return " ".join(text.split())


def default_special_tokens():
    """The special tokens of the default family's tokenizer: those google-research/bert's code
    lays out, for functions that keep the original's signature (no tokenizer argument)."""
    return get(DEFAULT).tokenizer.special_tokens


def special_tokens_of(tokenizer):
    """The `SpecialTokens` of `tokenizer`: its `special_tokens`, else the default family's.

    A tokenizer without the attribute is google-research/bert's own `FullTokenizer` (the tests
    and their scripts compare our data code with the original's on it), whose tokens those are.
    """
    tokens = getattr(tokenizer, "special_tokens", None)
    return tokens if tokens is not None else default_special_tokens()


class UnknownFamilyError(ValueError):
    """A `model_type` no package of bert_tf provides."""


class ConfigError(ValueError):
    """A config file (or dict) that does not describe a valid model of its family; each
    family's config class raises a subclass (e.g. `BertConfigError`)."""


def get(name):
    """The `Family` of `model_type` `name`."""
    package = PACKAGES.get(name)
    if package is None:
        raise UnknownFamilyError(f"model_type must be one of {', '.join(NAMES)}, got {name!r}")
    return importlib.import_module(f"{package}.family").FAMILY


def hub_names(name):
    """The table of Hugging Face Hub names of family `name` (its package's `hub_names` module,
    e.g. `bert_tf.bert.hub_names`), or None where the family has none (no Hub bridge) or there
    is no such family. Imports no TensorFlow (the bridge reads snapshots without it)."""
    package = PACKAGES.get(name)
    if package is None:
        return None
    try:
        return importlib.import_module(f"{package}.hub_names")
    except ModuleNotFoundError as e:
        if e.name != f"{package}.hub_names":
            raise
        return None


def of(config):
    """The `Family` of a config (its `model_type`)."""
    return get(getattr(config, "model_type", DEFAULT))


def lower_case_setting(family, do_lower_case, flag="--do_lower_case"):
    """The do_lower_case of `family` (a `Family` or a config) for a setting `do_lower_case`:
    None (not given) -> the family's default (False for a `cased` family, else the original
    BERT's True); True for a `cased` family raises ValueError naming `flag`."""
    if not isinstance(family, Family):
        family = of(family)
    if do_lower_case is None:
        return not family.cased
    if do_lower_case and family.cased:
        raise ValueError(
            f"{flag}=true: a {family.name} model's tokenizer is cased and never lower-cases; "
            f"leave the flag out (or pass {flag}=false)")
    return bool(do_lower_case)


def make_tokenizer(family, vocab_file, do_lower_case, tokenizer_files=None, words=False):
    """The host tokenizer of `family` (a `Family`, or a config whose family to use).

    Args:
      vocab_file, do_lower_case: the commands' flags.
      tokenizer_files: dict flag name -> path of the commands' tokenizer file flags; those in
        the family's `tokenizer_file_flags` are passed (None or absent: the tokenizer's
        default), the others ignored (another family's).
      words: the text comes split into words, each tokenized alone (`word_tokenizer_kwargs`).
    """
    if not isinstance(family, Family):
        family = of(family)
    files = {name: path for name, path in (tokenizer_files or {}).items()
             if name in family.tokenizer_file_flags and path}
    kwargs = dict(family.word_tokenizer_kwargs) if words else {}
    return family.tokenizer(vocab_file, do_lower_case, **files, **kwargs)


def build_encoder(config, **kwargs):
    """The encoder of `config`'s family: `of(config).encoder(config, **kwargs)`."""
    return of(config).encoder(config, **kwargs)


def _model_type(data):
    if not isinstance(data, dict):
        return DEFAULT
    if "model_type" not in data:
        for name, keys in SIGNATURE_KEYS.items():
            if any(key in data for key in keys):
                return name
    model_type = data.get("model_type", DEFAULT)
    # A name no family has is left to the default family's config class to refuse, by name.
    return model_type if model_type in PACKAGES else DEFAULT


def config_from_dict(data, source="bert config"):
    """The config of `data` (a dict of a config file), by the family its `model_type` names."""
    return get(_model_type(data)).config.from_dict(data, source=source)


def read_config(json_file):
    """The config of a config file (`bert_config.json`, `albert_config.json`) of any family: its
    `model_type` (else the family whose `SIGNATURE_KEYS` it holds, else "bert") picks the family, whose config class reads the file and says what is
    wrong with it (a `ConfigError`)."""
    path = os.fspath(json_file)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = None  # unreadable: the family's reader names the problem
    return get(_model_type(data)).config.from_json_file(path)
