"""Records what the ORIGINAL run_classifier.py's model side computes (tests/test_classification.py).

Run once, in one process, with a copy of google-research/bert and the golden tiny model:

    python3 tests/data/classifier_model/make_expected.py --original_repo=/tmp/orig_bert

Inputs: train.tsv / dev.tsv / test.tsv beside this file (MRPC layout, text written for this
fixture), and ../shared/golden/train (bert_config.json with dropout 0.0, init.ckpt, vocab.txt).
The original's MrpcProcessor and file_based_convert_examples_to_features write
train.tf_record, eval.tf_record and predict.tf_record (max_seq_length 32) here. The classifier
head starts from a seeded draw (head_init.npz) on top of init.ckpt, so our run can start from
the same weights.

The original runs through tf.compat.v1 graphs (tools.original supplies the two TF1 functions
TF 2.21 lacks: tf.layers.dense and tf.contrib.layers.layer_norm; tf.contrib.data.map_and_batch
is added below for its input_fn). Its model_fn cannot run as it is: TF 2.21 has no Estimator.
So the graph is the one model_fn builds (create_model, create_optimizer with use_tpu=False),
fed with the batches of the original's own file_based_input_fn_builder, and the Estimator's
parts are emulated in a session: initialisation from init_checkpoint through
modeling.get_assignment_map_from_checkpoint + tf.train.init_from_checkpoint, the eval metrics
of metric_fn as tf.compat.v1.metrics local variables streamed over the batches, plus the
`loss` (tf.compat.v1.metrics.mean of each batch's loss) and `global_step` the Estimator adds,
and the writing of eval_results.txt and test_results.tsv as main() does.

Dropout: the config's dropout is 0.0, but create_model(is_training=True) applies a fixed
keep_prob 0.9 dropout to the pooled output. For a deterministic recording the graph is built
with is_training=False: with the config at 0.0 the encoder is the same, and the only difference
from the training graph is that head dropout (our side runs ClassificationTask with
dropout_rate=0.0).

Records written (all float32 values as Python floats, exact):
  expected.json:
    forward: logits, probabilities, per_example_loss of the init weights on the dev records;
    steps[warmup]: for num_warmup_steps 0 and 3 (learning rate 1e-3, num_train_steps 10, batch
      4, train records in file order), per step the loss and the learning rate;
    resume: the warmup-3 run continued from its step-3 checkpoint as the Estimator does (the
      input_fn starts again at the first record; the training input repeats) up to step 10:
      per step loss and learning rate, and the head's weights and Adam moments at the end;
  warmup0/model.ckpt-3, warmup3/model.ckpt-3: the original's checkpoint after step 3 (every
    weight, adam_m, adam_v and global_step), written by tf.compat.v1.train.Saver;
  original_variables.json: name, shape and dtype of every variable the original's training
    graph creates (what a checkpoint must hold for its Saver to restore);
  eval_results.txt: eval on the dev records (eval_batch_size 4, partial last batch) after the
    3 steps of the warmup-0 run, as the original writes it;
  test_results.tsv: predictions on the test records after those 3 steps, as the original
    writes them.
"""

import argparse
import json
import os
import shutil
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
BATCH_SIZE = 4
LEARNING_RATE = 1e-3
NUM_TRAIN_STEPS = 10
RECORDED_STEPS = 3
HEAD_SEED = 20261123
HEAD_WEIGHTS_STDDEV = 0.2
HEAD_BIAS_STDDEV = 0.1
RECORDS = {"train": "train.tf_record", "dev": "eval.tf_record", "test": "predict.tf_record"}


def floats(array):
    return np.asarray(array, np.float32).tolist()


def write_records(rc, vocab_file):
    """The original's MrpcProcessor + file_based_convert_examples_to_features."""
    processor = rc.MrpcProcessor()
    tokenizer = rc.tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=True)
    examples = {
        "train": processor.get_train_examples(HERE),
        "dev": processor.get_dev_examples(HERE),
        "test": processor.get_test_examples(HERE),
    }
    for split, name in RECORDS.items():
        rc.file_based_convert_examples_to_features(
            examples[split], processor.get_labels(), MAX_SEQ_LENGTH, tokenizer,
            os.path.join(HERE, name))
    return {split: len(exs) for split, exs in examples.items()}, processor.get_labels()


def read_batches(rc, split, drop_remainder):
    """The batches of the original's file_based_input_fn_builder(is_training=False), which
    reads the records once in file order (the training input_fn would shuffle them)."""
    input_fn = rc.file_based_input_fn_builder(
        os.path.join(HERE, RECORDS[split]), MAX_SEQ_LENGTH, is_training=False,
        drop_remainder=drop_remainder)
    batches = []
    with tf.Graph().as_default():
        iterator = v1.data.make_one_shot_iterator(input_fn({"batch_size": BATCH_SIZE}))
        next_batch = iterator.get_next()
        with v1.Session() as session:
            while True:
                try:
                    batches.append(session.run(next_batch))
                except tf.errors.OutOfRangeError:
                    return batches


class ClassifierGraph:
    """model_fn's graph for all three modes at once: create_model on fed features (the
    dropout-free graph, see the module docstring), create_optimizer's train op, metric_fn's
    metrics and the Estimator's loss metric."""

    def __init__(self, rc, bert_config, num_labels, num_warmup_steps, init_checkpoint, head):
        modeling, optimization = rc.modeling, rc.optimization
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.features = {
                name: v1.placeholder(tf.int32, [None, MAX_SEQ_LENGTH], name=name)
                for name in ("input_ids", "input_mask", "segment_ids")
            }
            self.features["label_ids"] = v1.placeholder(tf.int32, [None], name="label_ids")
            self.features["is_real_example"] = v1.placeholder(
                tf.int32, [None], name="is_real_example")
            (self.loss, self.per_example_loss, self.logits,
             self.probabilities) = rc.create_model(
                bert_config, False, self.features["input_ids"], self.features["input_mask"],
                self.features["segment_ids"], self.features["label_ids"], num_labels, False)
            tvars = v1.trainable_variables()
            assignment_map, _ = modeling.get_assignment_map_from_checkpoint(
                tvars, init_checkpoint)
            v1.train.init_from_checkpoint(init_checkpoint, assignment_map)

            # create_optimizer keeps its learning-rate tensor to itself: the optimizer's
            # constructor is wrapped for the call to remember it.
            learning_rates = []
            optimizer_class = optimization.AdamWeightDecayOptimizer
            original_init = optimizer_class.__init__

            def recording_init(optimizer, learning_rate, **kwargs):
                learning_rates.append(learning_rate)
                original_init(optimizer, learning_rate, **kwargs)

            optimizer_class.__init__ = recording_init
            try:
                self.train_op = optimization.create_optimizer(
                    self.loss, LEARNING_RATE, NUM_TRAIN_STEPS, num_warmup_steps, False)
            finally:
                optimizer_class.__init__ = original_init
            (self.learning_rate,) = learning_rates
            self.global_step = v1.train.get_global_step()

            weights = tf.cast(self.features["is_real_example"], tf.float32)
            predictions = tf.argmax(self.logits, axis=-1, output_type=tf.int32)
            self.metrics = {
                "eval_accuracy": v1.metrics.accuracy(
                    labels=self.features["label_ids"], predictions=predictions, weights=weights),
                "eval_loss": v1.metrics.mean(values=self.per_example_loss, weights=weights),
                "loss": v1.metrics.mean(self.loss),
            }
            self.variables = v1.global_variables()
            self.saver = v1.train.Saver(self.variables, save_relative_paths=True)
            self.reset_metrics = v1.local_variables_initializer()
            init = v1.global_variables_initializer()
            by_name = {v.op.name: v for v in self.variables}
            set_head = [by_name["output_weights"].assign(head["output_weights"]),
                        by_name["output_bias"].assign(head["output_bias"])]
        self.session = v1.Session(graph=self.graph)
        self.session.run([init, self.reset_metrics])
        self.session.run(set_head)

    def feed(self, batch):
        return {self.features[k]: batch[k] for k in self.features}

    def forward(self, batches):
        fetches = {"logits": self.logits, "probabilities": self.probabilities,
                   "per_example_loss": self.per_example_loss}
        out = [self.session.run(fetches, self.feed(b)) for b in batches]
        return {k: floats(np.concatenate([o[k] for o in out])) for k in fetches}

    def train(self, batches):
        """One optimizer step per batch; per step the loss and the learning rate it used.

        create_optimizer groups `global_step + 1` with the update, unordered, so the learning
        rate may be computed from the incremented step (with TF1's ref variables it is here,
        for most steps). As for the golden pretraining steps, that race is fixed: the rate of
        the step before it runs is computed first and fed to the update."""
        steps = []
        for batch in batches:
            step, learning_rate = self.session.run([self.global_step, self.learning_rate])
            feed = self.feed(batch)
            feed[self.learning_rate] = learning_rate
            _, loss = self.session.run([self.train_op, self.loss], feed)
            steps.append({"step": int(step), "loss": float(loss),
                          "learning_rate": float(learning_rate)})
        return steps

    def evaluate(self, batches):
        """Estimator.evaluate: the metrics streamed over every batch, then read once."""
        self.session.run(self.reset_metrics)
        for batch in batches:
            self.session.run({k: update for k, (_, update) in self.metrics.items()},
                             self.feed(batch))
        results = self.session.run({k: value for k, (value, _) in self.metrics.items()})
        results["global_step"] = self.session.run(self.global_step)
        return results

    def save(self, directory):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        step = int(self.session.run(self.global_step))
        prefix = self.saver.save(self.session, os.path.join(directory, "model.ckpt"),
                                 global_step=step, write_meta_graph=False)
        os.remove(os.path.join(directory, "checkpoint"))  # the tests write their own
        return prefix

    def restore(self, prefix):
        self.saver.restore(self.session, prefix)

    def head_state(self):
        names = [name + slot for name in ("output_weights", "output_bias")
                 for slot in ("", "/adam_m", "/adam_v")]
        by_name = {v.op.name: v for v in self.variables}
        return {n: floats(self.session.run(by_name[n])) for n in names}


def eval_results_text(results):
    """main()'s eval_results.txt: "%s = %s" of str(value), keys sorted."""
    return "".join("%s = %s\n" % (key, str(results[key])) for key in sorted(results))


def test_results_text(probabilities, num_actual):
    """main()'s test_results.tsv: the first num_actual predictions, str() of each float32."""
    lines = []
    for i, row in enumerate(np.concatenate(probabilities)):
        if i >= num_actual:
            break
        lines.append("\t".join(str(p) for p in row) + "\n")
    assert len(lines) == num_actual
    return "".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--golden_dir", default=GOLDEN_TRAIN)
    args = parser.parse_args()
    # The original's graph code predates TF2 shapes (`shape[-1].value`) and control flow.
    v1.disable_v2_behavior()
    rc = load_original_module(args.original_repo, "run_classifier")
    rc.FLAGS(["make_expected"])
    # file_based_input_fn_builder batches through tf.contrib.data, which TF 2 moved.
    rc.tf.contrib.data = types.SimpleNamespace(map_and_batch=tf.data.experimental.map_and_batch)

    counts, labels = write_records(rc, os.path.join(args.golden_dir, "vocab.txt"))
    bert_config = rc.modeling.BertConfig.from_json_file(
        os.path.join(args.golden_dir, "bert_config.json"))
    assert bert_config.hidden_dropout_prob == bert_config.attention_probs_dropout_prob == 0.0
    init_checkpoint = os.path.join(args.golden_dir, "init.ckpt")
    rng = np.random.RandomState(HEAD_SEED)
    head = {
        "output_weights": (rng.standard_normal((len(labels), bert_config.hidden_size))
                           * HEAD_WEIGHTS_STDDEV).astype(np.float32),
        "output_bias": (rng.standard_normal(len(labels)) * HEAD_BIAS_STDDEV).astype(np.float32),
    }
    np.savez(os.path.join(HERE, "head_init.npz"), **head)

    train = read_batches(rc, "train", drop_remainder=True)
    dev = read_batches(rc, "dev", drop_remainder=False)
    test = read_batches(rc, "test", drop_remainder=False)
    assert [len(b["label_ids"]) for b in dev][-1] < BATCH_SIZE, "the last dev batch must be partial"

    expected = {"labels": labels, "counts": counts, "learning_rate": LEARNING_RATE,
                "num_train_steps": NUM_TRAIN_STEPS, "batch_size": BATCH_SIZE,
                "max_seq_length": MAX_SEQ_LENGTH, "steps": {}}
    for warmup in (0, 3):
        graph = ClassifierGraph(rc, bert_config, len(labels), warmup, init_checkpoint, head)
        if warmup == 0:
            expected["forward"] = graph.forward(dev)
            variables = [{"name": v.op.name, "shape": v.shape.as_list(),
                          "dtype": v.dtype.base_dtype.name} for v in graph.variables]
            with open(os.path.join(HERE, "original_variables.json"), "w") as f:
                json.dump(variables, f, indent=1)
                f.write("\n")
        expected["steps"][str(warmup)] = graph.train(train[:RECORDED_STEPS])
        prefix = graph.save(os.path.join(HERE, f"warmup{warmup}"))
        if warmup == 0:
            text = eval_results_text(graph.evaluate(dev))
            with open(os.path.join(HERE, "eval_results.txt"), "w") as f:
                f.write(text)
            probabilities = [graph.session.run(graph.probabilities, graph.feed(b)) for b in test]
            text = test_results_text(probabilities, counts["test"])
            with open(os.path.join(HERE, "test_results.tsv"), "w") as f:
                f.write(text)
        else:
            # A new Estimator.train on the output_dir: the checkpoint is restored, and the
            # input_fn starts again at the first record (repeating, in file order here).
            graph.restore(prefix)
            schedule = [train[i % len(train)]
                        for i in range(NUM_TRAIN_STEPS - RECORDED_STEPS)]
            expected["resume"] = {"steps": graph.train(schedule),
                                  "head": graph.head_state(),
                                  "global_step": int(graph.session.run(graph.global_step))}
        graph.session.close()
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("wrote", HERE)


if __name__ == "__main__":
    main()
