"""XLM-RoBERTa's tokenizer: SentencePiece (`sentencepiece.bpe.model`) with fairseq's dictionary
ids, as Transformers' `XLMRobertaTokenizer` gives them.

fairseq's XLM-R dictionary is the SentencePiece model's pieces shifted by one, after four
special tokens of its own:

    <s> 0, <pad> 1, </s> 2, <unk> 3, piece i of the model (i >= 3) -> i + 1, <mask> last

(the model's own 0..2 are <unk>, <s>, </s>; `FAIRSEQ_OFFSET` = 1; a piece the model does not
know, SentencePiece's id 0, is <unk>'s 3; `<mask>` = GetPieceSize() + 1, so the vocabulary has
GetPieceSize() + 2 ids: xlm-roberta-base's 250,002). The model XLM-R ships is a unigram model
despite its file name (fairseq's name for it); any SentencePiece model whose first three pieces
are <unk>, <s>, </s> is read.

`XLMRobertaTokenizer(vocab_file, do_lower_case=False)` tokenizes as Transformers'
XLMRobertaTokenizer (its sentencepiece "slow" one, and the fast one, which agree on the recorded
goldens: tests/data/xlm_roberta/):
  1. special tokens written in the text (`<s>`, `</s>`, `<pad>`, `<unk>`, `<mask>`) are pieces
     of their own, the text between them tokenized apart (the whitespace `<mask>` strips on its
     left is whitespace SentencePiece drops anyway);
  2. SentencePiece's `EncodeAsPieces` of each chunk: the model's own normalization (XLM-R's:
     NFKC and whitespace runs collapsed, `▁` before each word); no lower-casing (the
     vocabulary is cased), no accent stripping;
  3. the ids shifted as above.
Pairs are `<s> A </s></s> B </s>`, all segment 0 (`SPECIAL_TOKENS`, RoBERTa's layout);
truncation counts the four special tokens.

`tokenize_with_offsets(text)`: each piece's characters of `text` (ALBERT's SentencePiece offsets,
`bert_tf.albert.tokenization.sentencepiece_pieces_with_offsets`, per chunk), special tokens
spanning their own characters.

Pure Python, no TensorFlow (`bert_tf.xlm_roberta.fast_tokenization` is the in-graph twin);
`sentencepiece` is imported when a model is loaded (`bert_tf.albert.tokenization`'s loader).
"""

import base64
import json
import os
import re

from bert_tf.albert.tokenization import (SPIECE_UNDERLINE, load_sentencepiece,
                                         sentencepiece_pieces_with_offsets)
from bert_tf.families import SpecialTokens
from bert_tf.text import VocabError, convert_to_unicode

__all__ = ["FAIRSEQ_OFFSET", "FAIRSEQ_TOKENS", "SPECIAL_TOKENS", "VOCAB_FILE",
           "XLMRobertaVocab", "XLMRobertaTokenizer", "special_chunks", "read_tokenizer_json"]

VOCAB_FILE = "sentencepiece.bpe.model"
# fairseq's Dictionary: its own four tokens first, then dict.txt (= the SentencePiece pieces
# from id 3 on, in the model's order), then <mask> (added by the masked-LM task).
FAIRSEQ_TOKENS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
FAIRSEQ_OFFSET = 1
# The pieces a SentencePiece model of XLM-R's layout has at 0..2 (spm_train's defaults).
_MODEL_SPECIALS = ("<unk>", "<s>", "</s>")

SPECIAL_TOKENS = SpecialTokens(
    cls="<s>", sep="</s>", mask="<mask>", pad="<pad>", unk="<unk>",
    word_start_prefix=SPIECE_UNDERLINE, pair_separators=2, pair_segments=False,
    pads_with_token=True)


class XLMRobertaVocab(dict):
    """{token: fairseq id} of a SentencePiece model (see the module docstring), carrying the
    model as `sp_model` (what the graph tokenizer is built from, as ALBERT's
    `SentencePieceVocab`).

    Raises:
      VocabError: naming `source` when the model's first pieces are not <unk>, <s>, </s>.
    """

    def __init__(self, sp_model, source="sentencepiece model"):
        size = sp_model.GetPieceSize()
        first = tuple(sp_model.IdToPiece(i) for i in range(min(size, 3)))
        if first != _MODEL_SPECIALS or sp_model.unk_id() != 0:
            raise VocabError(f"{source}: pieces 0..2 are {list(first)}, expected "
                             f"{list(_MODEL_SPECIALS)} (XLM-R's layout, which fairseq's "
                             "dictionary offset assumes)")
        super().__init__(FAIRSEQ_TOKENS)
        for i in range(3, size):
            self.setdefault(sp_model.IdToPiece(i), i + FAIRSEQ_OFFSET)
        self[SPECIAL_TOKENS.mask] = size + FAIRSEQ_OFFSET
        self.sp_model = sp_model
        # The number of ids (the word embeddings' rows it needs).
        self.size = size + FAIRSEQ_OFFSET + 1


def read_vocab(vocab_file):
    """`XLMRobertaVocab` of a SentencePiece model file (VocabError naming it otherwise)."""
    path = os.fspath(vocab_file)
    return XLMRobertaVocab(load_sentencepiece(path, flag="vocab file"),
                           source=f"vocab file {path!r}")


def _normalizer_charsmap(normalizer, refuse):
    """The precompiled charsmap (bytes, or b"" for none) of tokenizer.json's `normalizer`: a
    `Precompiled` one (SentencePiece's own rules), alone or in a `Sequence` with the
    whitespace steps Transformers 4's converter adds (`Replace` of " {2,}", `Strip`), which
    SentencePiece's remove_extra_whitespaces does too. Anything else is refused."""
    if normalizer is None:
        return b""
    steps = normalizer.get("normalizers") if normalizer.get("type") == "Sequence" else [normalizer]
    charsmap = b""
    for step in steps or []:
        kind = step.get("type") if isinstance(step, dict) else None
        if kind == "Precompiled":
            charsmap = base64.b64decode(step.get("precompiled_charsmap") or "")
        elif kind == "Replace" and step.get("pattern") == {"Regex": " {2,}"} and step.get(
                "content") in (" ", SPIECE_UNDERLINE):
            continue
        elif kind != "Strip":
            refuse(f"normalizer step {kind!r} (SentencePiece's own normalization only)")
    return charsmap


def read_tokenizer_json(path):
    """A SentencePiece model (serialized bytes) with the ids of tokenizer.json at `path`, as
    Transformers 5 saves an XLM-R tokenizer (without sentencepiece.bpe.model): its Unigram
    vocabulary (<s>, <pad>, </s>, <unk>, the pieces with their scores, <mask> last) and its
    normalizer's precompiled charsmap become a unigram model of XLM-R's layout (<unk>, <s>, </s>,
    then the pieces: fairseq's offset gives the same ids back), normalizing as SentencePiece
    does (word-start "▁" first, whitespace runs collapsed). Its bytes differ from the original
    model's; its pieces, scores, normalization and so its ids do not.

    Raises:
      VocabError: one line naming the file, for anything else (another model type, byte
        fallback, another layout of special tokens, another pre-tokenizer or normalizer).
    """
    from sentencepiece import sentencepiece_model_pb2 as pb  # needs protobuf

    path = os.fspath(path)

    def refuse(what):
        raise VocabError(f"{path}: {what}: not an XLM-R SentencePiece tokenizer this reader can "
                         "turn back into a SentencePiece model")

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabError(f"{path}: cannot read as JSON ({e})") from None
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "Unigram":
        refuse(f"model type {model.get('type') if isinstance(model, dict) else None!r} "
               "(expected Unigram)")
    if model.get("byte_fallback"):
        refuse("byte_fallback=true")
    vocab = model.get("vocab")
    specials = list(FAIRSEQ_TOKENS)
    if (not isinstance(vocab, list) or len(vocab) < 6 or model.get("unk_id") != 3
            or [entry[0] for entry in vocab[:4]] != specials
            or vocab[-1][0] != SPECIAL_TOKENS.mask):
        refuse(f"model.vocab does not start with {specials} (unk_id 3) and end with "
               f"{SPECIAL_TOKENS.mask}")
    pre = data.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    kinds = [step.get("type") for step in steps or [] if isinstance(step, dict)]
    metaspace = [step for step in steps or [] if step.get("type") == "Metaspace"]
    if (not metaspace or set(kinds) - {"Metaspace", "WhitespaceSplit"}
            or metaspace[0].get("replacement") != SPIECE_UNDERLINE
            or metaspace[0].get("prepend_scheme", "always") != "always"
            or metaspace[0].get("add_prefix_space", True) is not True):
        refuse(f"pre_tokenizer {pre!r} (expected Metaspace with '▁' before every word)")
    charsmap = _normalizer_charsmap(data.get("normalizer"), refuse)
    proto = pb.ModelProto()
    proto.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    proto.trainer_spec.unk_id, proto.trainer_spec.bos_id, proto.trainer_spec.eos_id = 0, 1, 2
    proto.trainer_spec.pad_id = -1
    spec = proto.normalizer_spec
    spec.name = "nmt_nfkc" if charsmap else "identity"
    spec.precompiled_charsmap = charsmap
    spec.add_dummy_prefix = spec.remove_extra_whitespaces = spec.escape_whitespaces = True
    Piece = pb.ModelProto.SentencePiece  # noqa: N806 (the protobuf's class)
    for piece, kind in (("<unk>", Piece.UNKNOWN), ("<s>", Piece.CONTROL),
                        ("</s>", Piece.CONTROL)):
        proto.pieces.add(piece=piece, score=0.0, type=kind)
    for piece, score in vocab[4:-1]:
        proto.pieces.add(piece=piece, score=score, type=Piece.NORMAL)
    return proto.SerializeToString()


def special_chunks(text, special_tokens=SPECIAL_TOKENS):
    """[(chunk, start, special)] of `text`: each special token written in it (special True)
    and the non-empty text between them; `start` is the chunk's first character in `text`."""
    names = {special_tokens.cls, special_tokens.sep, special_tokens.pad, special_tokens.unk,
             special_tokens.mask}
    pattern = "|".join(re.escape(t) for t in sorted(names, key=len, reverse=True))
    out, position = [], 0
    for match in re.finditer(pattern, text):
        if match.start() > position:
            out.append((text[position:match.start()], position, False))
        out.append((match.group(), match.start(), True))
        position = match.end()
    if position < len(text):
        out.append((text[position:], position, False))
    return out


class XLMRobertaTokenizer:
    """The XLM-RoBERTa family's tokenizer (`bert_tf.families.Family.tokenizer`).

    Args:
      vocab_file: sentencepiece.bpe.model (the commands' --vocab_file).
      do_lower_case: must be False (or None): the vocabulary is cased and Transformers'
        tokenizer never lower-cases; True is refused rather than ignored.

    Attributes:
      vocab: an `XLMRobertaVocab` (token -> id); inv_vocab: id -> token.
      sp_model: the `sentencepiece.SentencePieceProcessor`.
      special_tokens: `SPECIAL_TOKENS` (class attribute).

    Raises:
      VocabError: a missing or bad model file, one line naming it.
      ValueError: do_lower_case=True.
    """

    special_tokens = SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=False, **kwargs):
        del kwargs  # other families' options (merges_file, spm_model_file, ...): none apply
        if do_lower_case:
            raise ValueError(
                "do_lower_case=True: XLM-RoBERTa's SentencePiece vocabulary is cased "
                "(Transformers' XLMRobertaTokenizer never lower-cases); pass "
                "do_lower_case=False (--do_lower_case=false)")
        self.do_lower_case = False
        self.vocab = read_vocab(vocab_file)
        self.sp_model = self.vocab.sp_model
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.unk_id = FAIRSEQ_TOKENS[SPECIAL_TOKENS.unk]

    def _shift(self, spm_id):
        return spm_id + FAIRSEQ_OFFSET if spm_id else self.unk_id

    def tokenize(self, text):
        """The pieces (list of str) of `text` (str, or bytes decoded as UTF-8 with undecodable
        bytes dropped); no special tokens added."""
        pieces = []
        for chunk, _, special in special_chunks(convert_to_unicode(text)):
            pieces += [chunk] if special else self.sp_model.EncodeAsPieces(chunk)
        return pieces

    def tokenize_to_ids(self, text):
        """The ids of `tokenize(text)`."""
        ids = []
        for chunk, _, special in special_chunks(convert_to_unicode(text)):
            if special:
                ids.append(self.vocab[chunk])
            else:
                ids += [self._shift(i) for i in self.sp_model.EncodeAsIds(chunk)]
        return ids

    def tokenize_with_offsets(self, text):
        """`tokenize(text)` and, per piece, the (start, end) characters of `text` it stands for
        (no whitespace at either end; empty where its word starts for a lone "▁")."""
        text = convert_to_unicode(text)
        pieces, spans = [], []
        for chunk, start, special in special_chunks(text):
            if special:
                pieces.append(chunk)
                spans.append((start, start + len(chunk)))
                continue
            chunk_pieces, chunk_spans = sentencepiece_pieces_with_offsets(self.sp_model, chunk)
            pieces += chunk_pieces
            spans += [(start + a, start + b) for a, b in chunk_spans]
        return pieces, spans

    def convert_tokens_to_ids(self, tokens):
        """Ids of `tokens`; a token the vocabulary does not have is `<unk>`'s id."""
        return [self.vocab.get(t, self.unk_id) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.inv_vocab[int(i)] for i in ids]

    def decode(self, ids):
        """The text of `ids`: SentencePiece's decoding of the pieces, special tokens as written
        (each run of pieces decoded on its own)."""
        out, run = [], []
        for token in self.convert_ids_to_tokens(ids):
            if token in FAIRSEQ_TOKENS or token == SPECIAL_TOKENS.mask:
                out.append(self.sp_model.DecodePieces(run))
                out.append(token)
                run = []
            else:
                run.append(token)
        out.append(self.sp_model.DecodePieces(run))
        return " ".join(part for part in out if part)
