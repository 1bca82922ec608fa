"""BertTaskModel with each fine-tuning head: outputs, config round trip, checkpoint names,
float32 heads under a 16-bit policy."""

import numpy as np
import pytest

from bert_tf import BertConfig
from bert_tf.checkpoints import original_variable_map
from bert_tf.layers.heads import ClassifierHead, SpanHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.training import precision
from conftest import tiny_config_dict

HEADS = {
    "classifier": (lambda: ClassifierHead(3, 16), {"logits": (2, 3), "probabilities": (2, 3)},
                   ("output_weights", "output_bias"), (3, 16)),
    "span": (lambda: SpanHead(16), {"start_logits": (2, 7), "end_logits": (2, 7)},
             ("cls/squad/output_weights", "cls/squad/output_bias"), (2, 16)),
    "tags": (lambda: TokenClassifierHead(5, 16), {"logits": (2, 7, 5)},
             ("bert_tf/tagging/output_weights", "bert_tf/tagging/output_bias"), (5, 16)),
}


def inputs():
    rng = np.random.RandomState(0)
    mask = np.ones((2, 7), np.int32)
    mask[1, 4:] = 0
    return {"input_ids": rng.randint(1, 37, (2, 7)).astype(np.int32), "input_mask": mask,
            "segment_ids": np.zeros((2, 7), np.int32)}


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_task_model_outputs_names_and_config(kind):
    make_head, shapes, names, weight_shape = HEADS[kind]
    config = BertConfig.from_dict(tiny_config_dict())
    model = BertTaskModel(config, make_head())
    out = model(inputs())
    for key, shape in shapes.items():
        assert tuple(out[key].shape) == shape, key
    table = original_variable_map(model)
    assert list(table)[-2:] == list(names)
    assert tuple(table[names[0]].shape) == weight_shape
    assert len([n for n in table if not n.startswith("bert/")]) == 2
    clone = BertTaskModel.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    for key in shapes:
        np.testing.assert_array_equal(clone(inputs())[key].numpy(), out[key].numpy())


@pytest.mark.parametrize("kind", sorted(HEADS))
def test_heads_stay_float32_under_bf16(kind):
    make_head, shapes, _, _ = HEADS[kind]
    with precision.dtype_policy("bf16"):
        model = BertTaskModel(BertConfig.from_dict(tiny_config_dict()), make_head())
    out = model(inputs())
    assert out["sequence_output"].dtype.name == "bfloat16"
    for key in shapes:
        assert out[key].dtype.name == "float32", key
    assert model.head.output_weights.dtype == "float32"
