"""XLM-RoBERTa's tokenizer in TensorFlow ops, for SavedModels that take text: the ids of
`XLMRobertaTokenizer.tokenize_to_ids` (bert_tf.xlm_roberta.tokenization).

`TokenizerModule(vocab)` is a `tf.Module`: texts tf.string [N] -> tf.RaggedTensor of int64 ids
[N, None]. Its steps mirror the host's:

1. bytes that are not UTF-8 are dropped (`unicode_transcode` with errors="ignore", as the host's
   `bytes.decode("utf-8", "ignore")`);
2. the special tokens written in the text (`<s>`, `</s>`, `<pad>`, `<unk>`, `<mask>`) become
   chunks of their own (`regex_replace` puts a 0xFF byte, which no UTF-8 text holds, on both
   sides of each, `strings.split` cuts there; tensorflow-text's `regex_split` would stop at a
   NUL byte); each becomes its fairseq id;
3. every other chunk goes through tensorflow-text's `FastSentencepieceTokenizer` built on the
   serialized model (ALBERT's choice, for the same reason: it breaks ties between
   equal-score segmentations as the `sentencepiece` package does; see
   `bert_tf.albert.fast_tokenization`), and its ids are shifted by fairseq's offset (0, the
   model's <unk>, -> 3; i -> i + 1).

No core-op mode (SentencePiece needs tensorflow-text ops; a SavedModel of it needs
`import tensorflow_text` before loading), and no `tokenize_with_offsets` yet: the SQuAD export,
which maps predicted pieces back to the context by byte offsets, does not take XLM-R
checkpoints (docs/xlm-roberta.md).
"""

import functools
import os
import re

from bert_tf.albert.fast_tokenization import model_proto
from bert_tf.bert.fast_tokenization_tables import import_tf_text
from bert_tf.xlm_roberta.tokenization import (FAIRSEQ_OFFSET, FAIRSEQ_TOKENS, SPECIAL_TOKENS,
                                              read_vocab)


# A byte no UTF-8 string holds: the mark around special tokens (step 2).
_MARK = b"\xff"


class XLMRobertaGraphTokenizerError(ValueError):
    """A model the graph tokenizer cannot use, or a mode it does not have."""


def _special_token_ids(vocab):
    """{special token written in text: its id} (`<mask>` last id of `vocab`)."""
    special = SPECIAL_TOKENS
    return {token: vocab[token] for token in (special.cls, special.sep, special.pad,
                                              special.unk, special.mask)}


def _make_module_class():
    tf, tf_text = import_tf_text()

    class TokenizerModule(tf.Module):
        """In-graph XLM-R tokenizer: tf.string [N] -> tf.RaggedTensor int64 ids [N, None]
        (see the module docstring). Holds the converted SentencePiece model as a constant."""

        def __init__(self, vocab, do_lower_case=False, core_ops=False,
                     name="xlm_roberta_tokenizer"):
            super().__init__(name=name)
            if core_ops:
                raise XLMRobertaGraphTokenizerError(
                    "XLM-RoBERTa's in-graph tokenizer has no core-op mode (SentencePiece runs "
                    "on tensorflow-text ops): build it with core_ops=False; a SavedModel "
                    "holding it needs `import tensorflow_text` before loading")
            if do_lower_case:
                raise XLMRobertaGraphTokenizerError(
                    "do_lower_case=True: XLM-RoBERTa's vocabulary is cased")
            if isinstance(vocab, (str, os.PathLike)):
                vocab = read_vocab(vocab)
            self.do_lower_case = False
            self.core_ops = False
            self.vocab_size = int(vocab.size)
            proto = model_proto(vocab)
            try:
                self._sentencepiece = tf_text.FastSentencepieceTokenizer(proto)
            except Exception as e:  # the converter's errors have no common type
                raise XLMRobertaGraphTokenizerError(
                    "tensorflow-text cannot convert this SentencePiece model "
                    f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
            specials = _special_token_ids(vocab)
            self._pattern = "|".join(re.escape(t) for t in sorted(specials, key=len,
                                                                   reverse=True))
            self._specials = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(specials)), tf.constant(list(specials.values()), tf.int64)),
                default_value=-1)
            self._unk_id = FAIRSEQ_TOKENS[SPECIAL_TOKENS.unk]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def __call__(self, texts):
            """texts tf.string [N] -> ids tf.RaggedTensor int64 [N, None]."""
            texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="ignore")
            # Each special token between two 0xFF bytes, which valid UTF-8 never holds, then
            # split there (tensorflow-text's regex_split stops at a NUL byte; these do not).
            marked = tf.strings.regex_replace(texts, self._pattern, _MARK + rb"\0" + _MARK)
            chunks = tf.strings.split(marked, sep=_MARK)
            flat = chunks.flat_values  # [C]: every chunk of every text
            special_id = self._specials.lookup(flat)
            is_special = special_id >= 0
            # A special token's chunk goes to SentencePiece as "" (no ids) and gets its id.
            spm = self._sentencepiece.tokenize(tf.where(is_special, "", flat))
            spm = tf.cast(spm, tf.int64).with_row_splits_dtype(tf.int64)
            values = tf.where(tf.equal(spm.flat_values, 0), tf.constant(self._unk_id, tf.int64),
                              spm.flat_values + FAIRSEQ_OFFSET)
            shifted = spm.with_flat_values(values)
            specials = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(special_id, is_special), tf.cast(is_special, tf.int64),
                validate=False)
            per_chunk = tf.concat([specials, shifted], axis=1)  # one of the two is empty
            ids = tf.RaggedTensor.from_row_splits(
                per_chunk, tf.cast(chunks.row_splits, tf.int64), validate=False)
            return ids.merge_dims(1, 2)

    return TokenizerModule


@functools.lru_cache(maxsize=1)
def _module_class():
    return _make_module_class()


def TokenizerModule(vocab, do_lower_case=False, core_ops=False, **kwargs):  # noqa: N802
    """Builds XLM-RoBERTa's in-graph tokenizer `tf.Module` (see the module docstring).

    Args:
      vocab: the host tokenizer's `vocab` (an `XLMRobertaVocab`, carrying its SentencePiece
        model) or the path of a sentencepiece.bpe.model.
      do_lower_case: must be False (the vocabulary is cased).
      core_ops: must be False: the graph needs tensorflow-text.
    Returns: the module; `module(texts)` takes tf.string [N] and gives int64 ids
      tf.RaggedTensor [N, None].
    """
    return _module_class()(vocab, do_lower_case=do_lower_case, core_ops=core_ops, **kwargs)
