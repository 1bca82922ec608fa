"""`XLMRobertaModel`: XLM-RoBERTa's encoder, which is RoBERTa's (`bert_tf.roberta.model`)."""

from bert_tf.roberta.model import RobertaModel


class XLMRobertaModel(RobertaModel):
    """The XLM-RoBERTa encoder, for configs of model_type "xlm-roberta" (`XLMRobertaConfig`):
    `RobertaModel` unchanged (positions cumsum(mask) * mask + pad_token_id, the pooler on
    `<s>`, inputs and outputs as there).

    Scope: `roberta/`, as RoBERTa's. fairseq's and Transformers' XLM-R modules are RoBERTa's
    (Transformers' tensors carry the prefix `roberta.`), so the variables are the same; the
    config's `model_type` (and the vocabulary beside it) says which tokenizer goes with them.
    BERT's code refuses the scope, as for RoBERTa; a RoBERTa config on these weights computes
    the same encoder (only the tokenizer would be wrong).
    """

    model_type = "xlm-roberta"
