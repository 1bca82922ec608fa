"""Records what google-research/albert's run_squad_v1.py computes (tests/test_albert_squad_task.py,
tests/test_squad_char_spans.py, tests/test_albert_run_squad_v1.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_squad_v1/make_expected.py --original_repo=/tmp/orig_albert

Its `squad_utils` (with `modeling`, `optimization`, `fine_tuning_utils`, `tokenization`, loaded
unmodified through `tools.original.load_albert_module`) on the SQuAD 1.1 file of
../albert_squad (squad_v1.json: a long context over several windows, accents, digit commas, a
paragraph aligned only on the retry, two dropped by the alignment) and a tiny ALBERT whose
vocabulary is ../albert_spm/albert.model (CONFIG: L=3 over 2 groups, E=8 != H=16, dropout 0).

Outputs, beside this file:
  albert_config.json, model.ckpt.*: the starting weights: the original's initialisers (graph
    seed SEED) with every bias and LayerNorm moved by N(0, 0.1) and cls/squad/output_weights
    drawn N(0, 0.3) (the original's 0.02 makes the logits nearly equal), written by a TF1 Saver
    under the original's names;
  train.tf_record: read_squad_examples(is_training=True), the Random(12345) shuffle and
    convert_examples_to_features through FeatureWriter, as main() does (MAX_SEQ_LENGTH,
    DOC_STRIDE, MAX_QUERY_LENGTH, lower case);
  predict.tf_record: the same file read with is_training=False;
  forward.npz: start_logits and end_logits [N, MAX_SEQ_LENGTH] (float32, the model_fn's
    PREDICT outputs "start_log_prob" / "end_log_prob") of the predict records at the starting
    weights;
  after_3_steps.npz: every variable of the TRAIN graph (v1_model_fn_builder: loss, AdamW of
    create_optimizer, use_tpu False) after 3 steps on the train records in file order, batch
    BATCH_SIZE, learning rate LEARNING_RATE over NUM_TRAIN_STEPS, no warmup;
  expected.json.gz:
    steps: per step the global_step it ran at, the loss and the learning rate (fed: the value
      create_optimizer computes from global_step before the step, fixing its unordered
      `global_step + 1`);
    variables: name, shape and dtype of every variable of the TRAIN graph;
    counts: examples and features of each record file;
    predictions: per PREDICTION_RUNS entry, the files write_predictions_v1 writes
      (predictions.json and nbest_predictions.json, text) after accumulate_predictions_v1, and
      evaluate_v1 of the predictions against the file's answers. "model/*" runs use the
      forward logits; "synthetic/*" runs seeded logits rounded to one decimal (ties) whose
      padding positions are the largest of some windows (they take n-best places).
"""

import argparse
import gzip
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_albert_module  # noqa: E402

v1 = tf.compat.v1
SPM_MODEL = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
SQUAD_FILE = os.path.join(REPO, "tests", "data", "albert_squad", "squad_v1.json")
SEED = 2911
MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH = 48, 16, 8
DO_LOWER_CASE = True
BATCH_SIZE, LEARNING_RATE, NUM_TRAIN_STEPS, STEPS = 4, 1e-3, 10, 3
CONFIG = dict(embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=2,
              inner_group_num=1, num_attention_heads=2, intermediate_size=24,
              hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              max_position_embeddings=64, type_vocab_size=2, initializer_range=0.2)
# name -> (logits: "model" or "synthetic", n_best_size, max_answer_length)
PREDICTION_RUNS = {
    "model/20/30": ("model", 20, 30),
    "model/3/2": ("model", 3, 2),
    "synthetic/20/30": ("synthetic", 20, 30),
    "synthetic/5/4": ("synthetic", 5, 4),
    "synthetic/1/1": ("synthetic", 1, 1),
}
RECORD_NAMES = ("unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask")


def synthetic_logits(features, seed=7):
    """Seeded logits [N, MAX_SEQ_LENGTH] rounded to 0.1 (ties), with every third window's
    padding positions above all its real ones."""
    rng = np.random.default_rng(seed)
    start = np.round(rng.normal(size=(len(features), MAX_SEQ_LENGTH)), 1).astype(np.float32)
    end = np.round(rng.normal(size=(len(features), MAX_SEQ_LENGTH)), 1).astype(np.float32)
    for i, feature in enumerate(features):
        if i % 3 == 0:
            real = sum(feature.input_mask)
            start[i, real:] = 5.0
            end[i, real:] = 4.0
    return start, end


def read_records(path, is_training):
    names = list(RECORD_NAMES)
    if is_training:
        names += ["start_positions", "end_positions", "is_impossible"]
    out = {n: [] for n in names}
    for record in v1.io.tf_record_iterator(path):
        example = tf.train.Example.FromString(record)
        for n in names:
            out[n].append(list(example.features.feature[n].int64_list.value))
    arrays = {n: np.asarray(v, np.int32) for n, v in out.items()}
    for n in ("unique_ids", "start_positions", "end_positions", "is_impossible"):
        if n in arrays:
            arrays[n] = arrays[n][:, 0]
    return arrays


def write_records(squad_utils, tokenizer):
    """main()'s records; returns the prediction features and the counts."""
    counts, predict_features = {}, []
    for name, is_training in (("train", True), ("predict", False)):
        examples = squad_utils.read_squad_examples(SQUAD_FILE, is_training)
        if is_training:
            random.Random(12345).shuffle(examples)
        writer = squad_utils.FeatureWriter(os.path.join(HERE, f"{name}.tf_record"), is_training)

        def output(feature, writer=writer, is_training=is_training):
            writer.process_feature(feature)
            if not is_training:
                predict_features.append(feature)

        squad_utils.convert_examples_to_features(
            examples, tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH, is_training,
            output, DO_LOWER_CASE)
        writer.close()
        counts[name] = {"examples": len(examples), "features": writer.num_features}
    return predict_features, counts


class V1Graph:
    """v1_model_fn_builder's graph of `mode` on fed features, its learning rate captured."""

    def __init__(self, squad_utils, config, mode, init_checkpoint=None):
        captured = {}
        optimizer_class = squad_utils.optimization.AdamWeightDecayOptimizer
        original_init = optimizer_class.__init__

        def recording_init(optimizer, learning_rate, **kwargs):
            captured["learning_rate"] = learning_rate
            original_init(optimizer, learning_rate, **kwargs)

        # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
        squad_utils.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
        self.graph = tf.Graph()
        with self.graph.as_default():
            v1.set_random_seed(SEED)
            self.features = {n: v1.placeholder(tf.int32, [None, MAX_SEQ_LENGTH], name=n)
                             for n in ("input_ids", "input_mask", "segment_ids")}
            for n in ("unique_ids", "start_positions", "end_positions"):
                self.features[n] = v1.placeholder(tf.int32, [None], name=n)
            model_fn = squad_utils.v1_model_fn_builder(
                config, init_checkpoint, LEARNING_RATE, NUM_TRAIN_STEPS, 0, use_tpu=False,
                use_one_hot_embeddings=False, use_einsum=True, hub_module=None)
            optimizer_class.__init__ = recording_init
            try:
                self.spec = model_fn(self.features, None, mode, {})
            finally:
                optimizer_class.__init__ = original_init
            self.learning_rate = captured.get("learning_rate")
            self.global_step = v1.train.get_or_create_global_step()
            self.variables = v1.global_variables()
            self.trainable = v1.trainable_variables()
            self.saver = v1.train.Saver({v.op.name: v for v in self.trainable})
            init = v1.global_variables_initializer()
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def feed(self, batch):
        return {self.features[k]: batch[k] for k in self.features if k in batch}

    def perturb_and_save(self, prefix):
        """The starting weights (see the module docstring), saved to `prefix`."""
        rng = np.random.default_rng(SEED)
        with self.graph.as_default():
            for v in self.trainable:
                name = v.op.name
                value = self.session.run(v)
                if name == "cls/squad/output_weights":
                    value = rng.normal(0, 0.3, value.shape)
                elif name.endswith(("bias", "beta", "gamma")):
                    value = value + rng.normal(0, 0.1, value.shape)
                v.load(value.astype(np.float32), self.session)
            self.saver.save(self.session, prefix, write_meta_graph=False, write_state=False)

    def forward(self, records):
        predictions = self.spec["predictions"]
        out = self.session.run(
            {"start_logits": predictions["start_log_prob"],
             "end_logits": predictions["end_log_prob"]}, self.feed(records))
        return out

    def train(self, records):
        steps = []
        for t in range(STEPS):
            batch = {k: v[BATCH_SIZE * t:BATCH_SIZE * (t + 1)] for k, v in records.items()}
            step, rate = self.session.run((self.global_step, self.learning_rate))
            feed = self.feed(batch)
            feed[self.learning_rate] = rate
            _, loss = self.session.run((self.spec["train_op"], self.spec["loss"]), feed)
            steps.append({"step": int(step), "loss": float(loss), "learning_rate": float(rate)})
        return steps


def predictions(squad_utils, examples, features, start, end, n_best_size, max_answer_length,
                dataset):
    results = [squad_utils.RawResult(unique_id=f.unique_id,
                                     start_log_prob=[float(x) for x in start[i]],
                                     end_log_prob=[float(x) for x in end[i]])
               for i, f in enumerate(features)]
    result_dict = {}
    squad_utils.accumulate_predictions_v1(result_dict, examples, features, results,
                                          n_best_size, max_answer_length)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, n) for n in ("predictions.json", "nbest_predictions.json")]
        predicted = squad_utils.write_predictions_v1(
            result_dict, examples, features, results, n_best_size, max_answer_length, *paths)
        texts = []
        for path in paths:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
    return {"predictions.json": texts[0], "nbest_predictions.json": texts[1],
            "evaluate_v1": squad_utils.evaluate_v1(dataset, predicted)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    v1.logging.set_verbosity(v1.logging.ERROR)
    squad_utils = load_albert_module(args.original_repo, "squad_utils")
    tokenizer = squad_utils.tokenization.FullTokenizer(None, DO_LOWER_CASE, SPM_MODEL)
    config_values = dict(CONFIG, vocab_size=tokenizer.sp_model.GetPieceSize())
    with open(os.path.join(HERE, "albert_config.json"), "w") as f:
        json.dump(config_values, f, indent=2, sort_keys=True)
        f.write("\n")
    config = squad_utils.modeling.AlbertConfig.from_dict(config_values)
    features, counts = write_records(squad_utils, tokenizer)
    prefix = os.path.join(HERE, "model.ckpt")

    graph = V1Graph(squad_utils, config, "train")
    graph.perturb_and_save(prefix)
    train_graph = V1Graph(squad_utils, config, "train", init_checkpoint=prefix)
    steps = train_graph.train(read_records(os.path.join(HERE, "train.tf_record"), True))
    values = train_graph.session.run({v.op.name: v for v in train_graph.variables})
    np.savez_compressed(os.path.join(HERE, "after_3_steps.npz"), **values)
    variables = [{"name": v.op.name, "shape": v.shape.as_list(),
                  "dtype": v.dtype.base_dtype.name} for v in train_graph.variables]

    predict_graph = V1Graph(squad_utils, config, "infer", init_checkpoint=prefix)
    forward = predict_graph.forward(read_records(os.path.join(HERE, "predict.tf_record"),
                                                 False))
    np.savez_compressed(os.path.join(HERE, "forward.npz"), **forward)

    examples = squad_utils.read_squad_examples(SQUAD_FILE, False)
    with open(SQUAD_FILE, encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    logits = {"model": (forward["start_logits"], forward["end_logits"]),
              "synthetic": synthetic_logits(features)}
    runs = {name: predictions(squad_utils, examples, features, *logits[source], n_best,
                              max_answer, dataset)
            for name, (source, n_best, max_answer) in PREDICTION_RUNS.items()}
    expected = dict(max_seq_length=MAX_SEQ_LENGTH, doc_stride=DOC_STRIDE,
                    max_query_length=MAX_QUERY_LENGTH, batch_size=BATCH_SIZE,
                    learning_rate=LEARNING_RATE, num_train_steps=NUM_TRAIN_STEPS, steps=steps,
                    variables=variables, counts=counts, predictions=runs)
    with gzip.open(os.path.join(HERE, "expected.json.gz"), "wt", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("counts", counts, "losses", [s["loss"] for s in steps])
    print({name: run["evaluate_v1"] for name, run in runs.items()})


if __name__ == "__main__":
    main()
