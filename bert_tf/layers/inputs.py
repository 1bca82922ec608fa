"""The input convention every model of bert_tf shares: a dict of int tensors [B, S]."""

ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


def check_inputs(inputs, names, model_name):
    """Fails clearly when a feature the model needs is missing from the input dict."""
    if not isinstance(inputs, dict):
        raise TypeError(f"{model_name} takes a dict of features {list(names)}, got {type(inputs).__name__}")
    missing = [name for name in names if name not in inputs]
    if missing:
        raise KeyError(
            f"{model_name}: input dict lacks {', '.join(missing)} (has {', '.join(sorted(inputs))})"
        )
