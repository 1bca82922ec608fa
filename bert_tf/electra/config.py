"""The bert_tf configs (`BertConfig`, bert_config.json format) of ELECTRA's networks.

`discriminator_config(hp)` is the network the original's `PretrainingModel` builds under
`electra/` from `PretrainingHparams` `hp` (the original's `get_bert_config`, then its `debug`
sizes); `generator_config(hp)` the generator (its `get_generator_config`). ELECTRA's keys on top of
BERT's:

  * `"hidden_act": "gelu_exact"` -- ELECTRA's "gelu" is the exact erf form;
  * `"embedding_size": E` -- the width of the embeddings, projected to `hidden_size` by
    `embeddings_project`; present only when it differs from `hidden_size`;
  * `"model_type": "electra"` -- ELECTRA's variable scopes and no pooler.

Command line: `python -m bert_tf.electra.config --hparams JSON-or-file.json --output FILE` writes
the discriminator's config, the one fine-tuning and feature extraction read.
"""

import argparse
import sys

from bert_tf.bert.config import BertConfig, BertConfigError
from bert_tf.electra.hparams import MODEL_SIZES, HparamsError, PretrainingHparams

__all__ = ["discriminator_config", "generator_config", "main"]

# ELECTRA's BertConfig defaults for the keys `get_bert_config` does not set (type_vocab_size is 2,
# not bert_tf's 16).
_ELECTRA_DEFAULTS = {
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
# Keys the original reads from the hparams, never from the model config; an override of them
# does nothing there, so it does nothing here.
_NOT_MODEL_KEYS = ("embedding_size", "model_type")


def _activation(value):
    """ELECTRA's `hidden_act` names in bert_tf's: its "gelu" is the erf form."""
    if value is None or value == "":
        return "linear"
    if not isinstance(value, str):
        raise HparamsError(f"model_hparam_overrides: hidden_act must be a string, got {value!r}")
    value = value.lower()
    return "gelu_exact" if value == "gelu" else value


def _sizes(hp):
    """The original's `get_bert_config` on `hp`, as a dict of BertConfig keys."""
    hidden_size, num_layers = MODEL_SIZES[hp.model_size]
    args = {"hidden_size": hidden_size, "num_hidden_layers": num_layers, "vocab_size": hp.vocab_size}
    args.update(hp.model_hparam_overrides)
    # heads and FFN follow the (possibly overridden) hidden size unless overridden themselves
    args["num_attention_heads"] = max(1, args["hidden_size"] // 64)
    args["intermediate_size"] = 4 * args["hidden_size"]
    args.update(hp.model_hparam_overrides)
    for key in _NOT_MODEL_KEYS:
        args.pop(key, None)
    return {**_ELECTRA_DEFAULTS, **args}


def _make(args, embedding_size, source):
    args = dict(args, model_type="electra")
    args["hidden_act"] = _activation(args["hidden_act"])
    if embedding_size != args["hidden_size"]:
        args["embedding_size"] = embedding_size
    try:
        return BertConfig.from_dict(args, source=source)
    except BertConfigError as e:
        raise HparamsError(str(e)) from None


def _embedding_size(hp, hidden_size):
    return hidden_size if hp.embedding_size is None else hp.embedding_size


def _discriminator_args(hp):
    args = _sizes(hp)
    if hp.debug:  # the original's PretrainingModel shrinks the model in debug mode
        args.update(num_hidden_layers=3, hidden_size=144, intermediate_size=144 * 4, num_attention_heads=4)
    return args


def discriminator_config(hp):
    """BertConfig of the discriminator (scope `electra/`) that `PretrainingHparams` `hp` describe.

    With `electra_objective` false it is the masked LM's encoder (the original's BERT objective).
    Raises HparamsError when the sizes do not make a valid model.
    """
    args = _discriminator_args(hp)
    return _make(args, _embedding_size(hp, args["hidden_size"]), "ELECTRA discriminator config")


def generator_config(hp):
    """BertConfig of the generator's encoder that `hp` describe, or None for `uniform_generator`.

    The small generator (scope `generator/`) when training ELECTRA (or Electric) with
    `untied_generator`: hidden = round(H * generator_hidden_size), layers = round(L *
    generator_layers), FFN 4x hidden, heads max(1, hidden // 64). Its `embedding_size` is the
    discriminator's (shared embeddings) unless `untied_generator_embeddings`, when it has its own
    embeddings of its hidden size. Otherwise the masked LM is the full-size network, with the
    discriminator's config (and, in the original, its variables).
    """
    if hp.uniform_generator:
        return None
    args = _discriminator_args(hp)
    embedding_size = _embedding_size(hp, args["hidden_size"])
    if not ((hp.electra_objective or hp.electric_objective) and hp.untied_generator):
        return _make(args, embedding_size, "ELECTRA generator config")
    hidden_size = int(round(args["hidden_size"] * hp.generator_hidden_size))
    args.update(
        hidden_size=hidden_size,
        num_hidden_layers=int(round(args["num_hidden_layers"] * hp.generator_layers)),
        intermediate_size=4 * hidden_size,
        num_attention_heads=max(1, hidden_size // 64),
    )
    if hp.untied_generator_embeddings:
        embedding_size = hidden_size
    return _make(args, embedding_size, "ELECTRA generator config")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.electra.config",
        description="Writes the bert_config.json of the ELECTRA discriminator that pretraining "
                    "hparams describe.")
    parser.add_argument("--hparams", default="{}",
                        help="JSON dict of pretraining hparams, or the path of a .json file holding one.")
    parser.add_argument("--output", required=True, help="Where to write the config (bert_config.json format).")
    args = parser.parse_args(argv)
    try:
        # The data layout plays no part in the model's config.
        hp = PretrainingHparams.from_args("", "model", args.hparams)
        config = discriminator_config(hp)
    except HparamsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        config.to_json_file(args.output)
    except OSError as e:
        print(f"error: cannot write --output {args.output}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
