"""Records the ORIGINAL ELECTRA's pretraining hparams and model sizes (tests/test_electra_hparams.py).

For each case of hparams below: `configure_pretraining.PretrainingConfig(model_name, data_dir,
**hparams).__dict__`, the discriminator's BertConfig as `run_pretraining.PretrainingModel` builds
it (`training_utils.get_bert_config`, then its debug sizes) and the generator's
(`run_pretraining.get_generator_config`), or the error the original raises.

    git clone <google-research/electra> /tmp/electra
    python3 tests/data/electra_hparams/make_expected.py --original_repo=/tmp/electra

writes tests/data/electra_hparams/expected.json. The original's modules import `tf.estimator`
and `tensorflow.contrib`, gone from TF 2; this script gives them stand-ins before importing (none
of the recorded functions uses them).
"""

import argparse
import copy
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [
    {},
    {"debug": True},
    {"debug": True, "train_batch_size": 16, "num_train_steps": 7},
    {"model_size": "base"},
    {"model_size": "large", "mask_prob": 0.25, "max_seq_length": 512},
    {"model_size": "base", "debug": True},
    {"electric_objective": True},
    {"embedding_size": 256, "generator_hidden_size": 1.0},
    {"model_hparam_overrides": {"hidden_size": 512}},
    {"model_hparam_overrides": {"hidden_size": 384, "num_attention_heads": 3, "hidden_act": "relu"}},
    {"generator_layers": 0.5, "generator_hidden_size": 0.5, "untied_generator_embeddings": True},
    {"model_size": "base", "generator_hidden_size": 0.33333},
    {"vocab_file": "/elsewhere/vocab.txt", "model_dir": "/elsewhere/m"},
    {"foo": 1},
    {"max_predictions_per_seq": 3},
]


def _import_original(repo):
    import tensorflow.compat.v1 as v1  # pylint: disable=g-import-not-at-top

    # v1 is a lazy-loading module wrapper; its own __dict__ is looked up first
    v1.__dict__["estimator"] = types.SimpleNamespace(SessionRunHook=object)
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.SimpleNamespace()
    sys.modules.setdefault("tensorflow.contrib", contrib)
    sys.path.insert(0, repo)
    import configure_pretraining  # pylint: disable=import-outside-toplevel
    import run_pretraining  # pylint: disable=import-outside-toplevel
    from util import training_utils  # pylint: disable=import-outside-toplevel
    return configure_pretraining, run_pretraining, training_utils


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    configure, run_pretraining, training_utils = _import_original(args.original_repo)
    out = []
    for hparams in CASES:
        entry = {"hparams": hparams}
        try:
            config = configure.PretrainingConfig("m", "D", **copy.deepcopy(hparams))
        except ValueError as e:
            entry["error"] = str(e)
            out.append(entry)
            continue
        entry["config"] = dict(config.__dict__)
        bert_config = training_utils.get_bert_config(config)
        if config.debug:  # as PretrainingModel.__init__
            bert_config.num_hidden_layers = 3
            bert_config.hidden_size = 144
            bert_config.intermediate_size = 144 * 4
            bert_config.num_attention_heads = 4
        entry["discriminator"] = bert_config.to_dict()
        entry["embedding_size"] = (bert_config.hidden_size if config.embedding_size is None
                                   else config.embedding_size)
        entry["generator"] = run_pretraining.get_generator_config(config, bert_config).to_dict()
        out.append(entry)
    path = os.path.join(HERE, "expected.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path} ({len(out)} cases)")


if __name__ == "__main__":
    main()
