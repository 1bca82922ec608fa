"""Records what the ORIGINAL run_squad.py's model side computes (tests/test_squad.py).

Run once, in one process, with a copy of google-research/bert and the golden tiny model:

    python3 tests/data/squad_model/make_expected.py --original_repo=/tmp/orig_bert

Inputs: ../shared/golden/train (bert_config.json with dropout 0.0, init.ckpt, vocab.txt) and
the SQuAD 1.1 file this script writes first, squad.json: two paragraphs and eight questions
written with words of the golden vocab only. With max_seq_length 32, max_query_length 8 and
doc_stride 8 every question gives several windows (features).

The graph is the original's model_fn (mode TRAIN: create_model, its start/end loss,
create_optimizer with use_tpu=False, init_from_checkpoint of init.ckpt) with create_model
called with is_training=False: the config's dropout is 0 and the SQuAD head has none, so this
is the training graph without dropout ops. The head starts from seeded weights (head_init.npz,
larger than the 0.02 initializer so that the logits differ visibly).

Outputs, beside this file:
  squad.json: the SQuAD file above;
  train.tf_record: read_squad_examples(is_training=True), the Random(12345) shuffle and
    convert_examples_to_features through FeatureWriter, as main() does;
  predict.tf_record: the same file read with is_training=False;
  head_init.npz: cls/squad/output_weights [2, H] and output_bias [2] at the start;
  forward.npz: start_logits and end_logits [N, 32] (float32) on the predict records with the
    initial weights, in file order;
  expected.json:
    steps: 3 optimizer steps on the train records in file order, batch 4 (learning rate 1e-3,
      num_train_steps 10, warmup 0): per step the global_step it ran at, the loss and the
      learning rate;
    loss_on_fixed_logits: model_fn's total loss (and start/end losses) on seeded logits and
      positions (first and last positions included);
  after_3_steps.npz: every variable of the original's graph after step 3 (weights, adam_m,
    adam_v; float32), keyed by variable name; global_step is in expected.json;
  original_variables.json: name, shape and dtype of every variable the original's training
    graph creates (no Adam slots for bert/pooler: it gets no gradient).
"""

import argparse
import json
import os
import random
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_original_module  # noqa: E402

v1 = tf.compat.v1

GOLDEN_TRAIN = os.path.join(os.path.dirname(REPO), "shared", "golden", "train")
MAX_SEQ_LENGTH = 32
MAX_QUERY_LENGTH = 8
DOC_STRIDE = 8
BATCH_SIZE = 4
LEARNING_RATE = 1e-3
NUM_TRAIN_STEPS = 10
RECORDED_STEPS = 3
HEAD_SEED = 20261123
HEAD_WEIGHTS_STDDEV = 0.2
HEAD_BIAS_STDDEV = 0.1
LOGITS_SEED = 7

PARAGRAPHS = [
    ("gate",
     "the young monk philammon crossed the desert and reached the gate of the city at early "
     "morning . he saw the palaces and towers of the ancient city , and the sea beyond them "
     "was blue . the guide smiled and put the heavy basket down upon the quay .",
     [("who crossed the desert ?", "the young monk philammon"),
      ("what did the monk reach at early morning ?", "the gate of the city"),
      ("what was blue ?", "the sea"),
      ("where did the guide put the basket ?", "upon the quay")]),
    ("camp",
     "the camels and elephants drove through the sand to the camp . the fire was blazing and "
     "the jeweler held a chunk of gold ore . in the morning the moon gleamed over the hills "
     "and the silence of the wilderness was terrible .",
     [("what did the jeweler hold ?", "a chunk of gold ore"),
      ("what gleamed over the hills ?", "the moon"),
      ("where did the camels and elephants drive ?", "to the camp"),
      ("what was terrible ?", "the silence of the wilderness")]),
]


def squad_json():
    data = []
    for title, context, questions in PARAGRAPHS:
        qas = []
        for i, (question, answer) in enumerate(questions):
            start = context.index(answer)
            qas.append({"id": f"{title}{i}", "question": question,
                        "answers": [{"text": answer, "answer_start": start}]})
        data.append({"title": title, "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "1.1", "data": data}


def write_records(sq, squad_file, vocab_file):
    """main()'s records: (train, predict) feature counts."""
    tokenizer = sq.tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=True)
    counts = {}
    for name, is_training in (("train", True), ("predict", False)):
        examples = sq.read_squad_examples(squad_file, is_training)
        if is_training:
            random.Random(12345).shuffle(examples)
        writer = sq.FeatureWriter(os.path.join(HERE, f"{name}.tf_record"), is_training)
        sq.convert_examples_to_features(examples, tokenizer, MAX_SEQ_LENGTH, DOC_STRIDE,
                                        MAX_QUERY_LENGTH, is_training, writer.process_feature)
        writer.close()
        counts[name] = {"examples": len(examples), "features": writer.num_features}
    return counts


def read_records(name, is_training):
    """Every record of `name` in file order, as int32 arrays [N, ...]."""
    names = ["unique_ids", "input_ids", "input_mask", "segment_ids"]
    if is_training:
        names += ["start_positions", "end_positions"]
    out = {n: [] for n in names}
    for record in tf.compat.v1.io.tf_record_iterator(os.path.join(HERE, f"{name}.tf_record")):
        example = tf.train.Example.FromString(record)
        for n in names:
            out[n].append(list(example.features.feature[n].int64_list.value))
    arrays = {n: np.asarray(v, np.int32) for n, v in out.items()}
    for n in ("unique_ids", "start_positions", "end_positions"):
        if n in arrays:
            arrays[n] = arrays[n][:, 0]
    return arrays


class SquadGraph:
    """model_fn's TRAIN graph on fed features, with the tensors it keeps to itself (the
    logits from create_model, the learning rate of create_optimizer) captured."""

    def __init__(self, sq, bert_config, init_checkpoint, head):
        self.graph = tf.Graph()
        captured = {}
        original_create_model = sq.create_model

        def create_model(bert_config, is_training, **kwargs):
            del is_training  # dropout-free graph: see the module docstring
            captured["logits"] = original_create_model(bert_config=bert_config,
                                                       is_training=False, **kwargs)
            return captured["logits"]

        optimizer_class = sq.optimization.AdamWeightDecayOptimizer
        original_init = optimizer_class.__init__

        def recording_init(optimizer, learning_rate, **kwargs):
            captured["learning_rate"] = learning_rate
            original_init(optimizer, learning_rate, **kwargs)

        with self.graph.as_default():
            self.features = {
                n: v1.placeholder(tf.int32, [None, MAX_SEQ_LENGTH], name=n)
                for n in ("input_ids", "input_mask", "segment_ids")}
            for n in ("unique_ids", "start_positions", "end_positions"):
                self.features[n] = v1.placeholder(tf.int32, [None], name=n)
            model_fn = sq.model_fn_builder(
                bert_config, init_checkpoint, LEARNING_RATE, NUM_TRAIN_STEPS, 0,
                use_tpu=False, use_one_hot_embeddings=False)
            sq.create_model, optimizer_class.__init__ = create_model, recording_init
            try:
                spec = model_fn(self.features, None, sq.tf.estimator.ModeKeys.TRAIN, {})
            finally:
                sq.create_model, optimizer_class.__init__ = original_create_model, original_init
            self.loss, self.train_op = spec["loss"], spec["train_op"]
            self.start_logits, self.end_logits = captured["logits"]
            self.learning_rate = captured["learning_rate"]
            self.global_step = v1.train.get_global_step()
            self.variables = v1.global_variables()
            by_name = {v.op.name: v for v in self.variables}
            init = v1.global_variables_initializer()
            set_head = [by_name[n].assign(head[n]) for n in head]
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)
        self.session.run(set_head)

    def feed(self, batch):
        return {self.features[k]: batch[k] for k in self.features if k in batch}

    def forward(self, records):
        start, end = self.session.run([self.start_logits, self.end_logits], self.feed(records))
        return {"start_logits": start, "end_logits": end}

    def loss_on(self, start_logits, end_logits, start_positions, end_positions):
        return float(self.session.run(self.loss, {
            self.start_logits: start_logits, self.end_logits: end_logits,
            self.features["start_positions"]: start_positions,
            self.features["end_positions"]: end_positions,
            self.features["input_ids"]: np.zeros_like(start_logits, np.int32)}))

    def train(self, batches):
        """One step per batch: the step, loss and learning rate. As in
        tests/data/classifier_model/make_expected.py, create_optimizer's unordered
        `global_step + 1` race is fixed by feeding the rate of the step about to run."""
        steps = []
        for batch in batches:
            step, learning_rate = self.session.run([self.global_step, self.learning_rate])
            feed = self.feed(batch)
            feed[self.learning_rate] = learning_rate
            _, loss = self.session.run([self.train_op, self.loss], feed)
            steps.append({"step": int(step), "loss": float(loss),
                          "learning_rate": float(learning_rate)})
        return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--golden_dir", default=GOLDEN_TRAIN)
    args = parser.parse_args()
    v1.disable_v2_behavior()
    sq = load_original_module(args.original_repo, "run_squad")
    sq.FLAGS(["make_expected"])
    # TensorFlow 2 has neither the Estimator nor tf.contrib.tpu: model_fn needs only the mode
    # names and a spec holder.
    sq.tf.estimator = types.SimpleNamespace(ModeKeys=types.SimpleNamespace(
        TRAIN="train", EVAL="eval", PREDICT="infer"))
    sq.tf.contrib.tpu = types.SimpleNamespace(TPUEstimatorSpec=lambda **kwargs: kwargs)

    squad_file = os.path.join(HERE, "squad.json")
    with open(squad_file, "w") as f:
        json.dump(squad_json(), f, indent=1)
        f.write("\n")
    vocab_file = os.path.join(args.golden_dir, "vocab.txt")
    counts = write_records(sq, squad_file, vocab_file)
    bert_config = sq.modeling.BertConfig.from_json_file(
        os.path.join(args.golden_dir, "bert_config.json"))
    assert bert_config.hidden_dropout_prob == bert_config.attention_probs_dropout_prob == 0.0
    rng = np.random.RandomState(HEAD_SEED)
    head = {
        "cls/squad/output_weights": (rng.standard_normal((2, bert_config.hidden_size))
                                     * HEAD_WEIGHTS_STDDEV).astype(np.float32),
        "cls/squad/output_bias": (rng.standard_normal(2) * HEAD_BIAS_STDDEV).astype(np.float32),
    }
    np.savez(os.path.join(HERE, "head_init.npz"),
             **{k.rsplit("/", 1)[1]: v for k, v in head.items()})

    graph = SquadGraph(sq, bert_config, os.path.join(args.golden_dir, "init.ckpt"), head)
    predict = read_records("predict", is_training=False)
    train = read_records("train", is_training=True)
    assert counts["train"]["features"] >= RECORDED_STEPS * BATCH_SIZE
    rng = np.random.RandomState(LOGITS_SEED)
    fixed = {"start_logits": rng.normal(0, 3, (3, MAX_SEQ_LENGTH)).astype(np.float32),
             "end_logits": rng.normal(0, 3, (3, MAX_SEQ_LENGTH)).astype(np.float32),
             "start_positions": np.array([0, 5, MAX_SEQ_LENGTH - 1], np.int32),
             "end_positions": np.array([MAX_SEQ_LENGTH - 1, 0, 7], np.int32)}
    expected = {
        "max_seq_length": MAX_SEQ_LENGTH, "max_query_length": MAX_QUERY_LENGTH,
        "doc_stride": DOC_STRIDE, "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE,
        "num_train_steps": NUM_TRAIN_STEPS, "counts": counts,
        "loss_on_fixed_logits": dict(
            {k: v.tolist() for k, v in fixed.items()},
            total_loss=graph.loss_on(**fixed)),
    }
    np.savez_compressed(os.path.join(HERE, "forward.npz"), **graph.forward(predict))
    batches = [{k: v[i * BATCH_SIZE:(i + 1) * BATCH_SIZE] for k, v in train.items()}
               for i in range(RECORDED_STEPS)]
    expected["steps"] = graph.train(batches)
    expected["global_step"] = int(graph.session.run(graph.global_step))
    state = graph.session.run({v.op.name: v for v in graph.variables
                               if v.op.name != "global_step"})
    np.savez_compressed(os.path.join(HERE, "after_3_steps.npz"),
                        **{k: np.asarray(v, np.float32) for k, v in state.items()})
    variables = [{"name": v.op.name, "shape": v.shape.as_list(),
                  "dtype": v.dtype.base_dtype.name} for v in graph.variables]
    assert not [v for v in variables if v["name"].startswith("bert/pooler/")
                and v["name"].endswith(("adam_m", "adam_v"))]
    with open(os.path.join(HERE, "original_variables.json"), "w") as f:
        json.dump(variables, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("wrote", HERE, counts)


if __name__ == "__main__":
    main()
