"""Records what the ORIGINAL google-research/bert extract_features.py does.

    python3 tests/data/extract_features/make_expected.py --original_repo=/tmp/orig_bert

Needs ../shared/golden/model and ../shared/data/uncased_vocab.txt. Writes next to this file:

* read_convert_expected.json: the original `read_examples` on read_lines.txt and its
  `convert_examples_to_features` on them (uncased vocab, do_lower_case True, max_seq_length
  READ_SEQ_LENGTH, so long lines are truncated, and SHORT_SEQ_LENGTH).
* golden_output.jsonl: the file the original `main` writes for model_input.txt with the golden
  model (flags in MODEL_FLAGS).

TensorFlow 2.21 has no Estimator, so `main` runs unmodified with a stand-in for
`tf.contrib.tpu` whose `TPUEstimator.predict` does what the Estimator's CPU predict does:
build the graph from `input_fn(params)` and `model_fn(features, None, PREDICT, params)`,
initialise the variables (`init_from_checkpoint` has replaced their initialisers), run the
predictions batch by batch until the data set ends and yield one example at a time.
"""

import argparse
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from tools.original import load_original_module  # noqa: E402

SHARED = os.path.join(os.path.dirname(ROOT), "shared")
GOLDEN_MODEL = os.path.join(SHARED, "golden", "model")
READ_SEQ_LENGTH = 12
# So short that truncation empties b: the original then drops b's [SEP] too.
SHORT_SEQ_LENGTH = 4
# The golden model has 3 layers, so the default --layers (down to -4) would fail in the original.
MODEL_FLAGS = {"layers": "-2,0", "max_seq_length": 16, "batch_size": 2,
               "do_lower_case": True}


def _estimator_stand_in(tf):
    """The parts of `tf.contrib.tpu` extract_features.main uses, running on CPU in a v1 graph."""

    class TPUEstimator:
        def __init__(self, use_tpu, model_fn, config, predict_batch_size):
            assert not use_tpu
            self.model_fn = model_fn
            self.batch_size = predict_batch_size

        def predict(self, input_fn, yield_single_examples=True):
            assert yield_single_examples
            params = {"batch_size": self.batch_size}
            with tf.Graph().as_default():
                dataset = input_fn(params)
                features = tf.data.make_one_shot_iterator(dataset).get_next()
                spec = self.model_fn(features, None, tf.estimator.ModeKeys.PREDICT, params)
                predictions = spec["predictions"]
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    while True:
                        try:
                            batch = sess.run(predictions)
                        except tf.errors.OutOfRangeError:
                            return
                        size = len(batch["unique_id"])
                        for i in range(size):
                            yield {key: value[i] for key, value in batch.items()}

    return types.SimpleNamespace(
        TPUEstimator=TPUEstimator,
        TPUEstimatorSpec=lambda mode, predictions, scaffold_fn: {
            "mode": mode, "predictions": predictions},
        RunConfig=lambda **kwargs: kwargs,
        TPUConfig=lambda **kwargs: kwargs,
        InputPipelineConfig=types.SimpleNamespace(PER_HOST_V2=2),
    )


def record_read_convert(orig, vocab_file):
    tokenizer = orig.tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    examples = orig.read_examples(os.path.join(HERE, "read_lines.txt"))
    def convert(seq_length):
        features = orig.convert_examples_to_features(examples, seq_length, tokenizer)
        return [{"unique_id": f.unique_id, "tokens": f.tokens, "input_ids": f.input_ids,
                 "input_mask": f.input_mask, "input_type_ids": f.input_type_ids}
                for f in features]

    return {
        "vocab": "uncased_vocab.txt",
        "do_lower_case": True,
        "max_seq_length": READ_SEQ_LENGTH,
        "examples": [[e.unique_id, e.text_a, e.text_b] for e in examples],
        "features": convert(READ_SEQ_LENGTH),
        "short_max_seq_length": SHORT_SEQ_LENGTH,
        "short_features": convert(SHORT_SEQ_LENGTH),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    orig = load_original_module(args.original_repo, "extract_features")
    import tensorflow  # pylint: disable=g-import-not-at-top

    tensorflow.compat.v1.disable_v2_behavior()
    tf = orig.tf
    tf.contrib.tpu = _estimator_stand_in(tf)
    if not hasattr(tf, "estimator"):
        tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(PREDICT="infer"))

    out = os.path.join(HERE, "read_convert_expected.json")
    record = record_read_convert(orig, os.path.join(SHARED, "data", "uncased_vocab.txt"))
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=True, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)
    print("wrote", out)

    out = os.path.join(HERE, "golden_output.jsonl")
    argv = ["extract_features",
            f"--input_file={os.path.join(HERE, 'model_input.txt')}",
            f"--output_file={out}.tmp",
            f"--vocab_file={os.path.join(GOLDEN_MODEL, 'vocab.txt')}",
            f"--bert_config_file={os.path.join(GOLDEN_MODEL, 'bert_config.json')}",
            f"--init_checkpoint={os.path.join(GOLDEN_MODEL, 'bert_model.ckpt')}"]
    argv += [f"--{key}={value}" for key, value in MODEL_FLAGS.items()]
    orig.FLAGS(argv)
    orig.main(None)
    os.replace(out + ".tmp", out)
    print("wrote", out)


if __name__ == "__main__":
    main()
