"""`ElectraModel`: ELECTRA's encoder (google-research/electra's `model/modeling.py`): BERT's,
under the checkpoint scope `electra/`, with embeddings of width `embedding_size` projected to
hidden_size (`embeddings_project`) where they differ, and no pooler."""

from bert_tf.bert.model import BertModel


class ElectraModel(BertModel):
    """`BertModel` for configs of model_type "electra": names under `electra/`, no pooler.

    Returns the outputs of `BertModel`; `pooled_output` [B, H] is the [CLS] vector
    `sequence_output[:, 0]`, what ELECTRA's fine-tuning heads read.
    """

    model_type = "electra"
    scope = "electra"
    has_pooler = False
