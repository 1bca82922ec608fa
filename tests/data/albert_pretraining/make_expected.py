"""Records what google-research/albert's run_pretraining.py computes
(tests/test_albert_pretraining_task.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_pretraining/make_expected.py --original_repo=/tmp/orig_albert

Its `run_pretraining.model_fn_builder` (with `modeling`, `optimization`, `lamb_optimizer`,
loaded unmodified through `tools.original.load_albert_module`) builds the TRAIN and EVAL graphs
of the grouped model of tests/data/albert_model/grouped (L=4 over 2 groups of 2 inner blocks,
E=8 != H=16, dropout 0), its weights restored from that directory's model.ckpt (fresh optimizer
slots, global_step 0). The batches are those of records.tfrecord (written here, 16 records of
max_seq_length 16 and 3 predictions) read in file order, 4 per batch. The learning rate is fed
with the value create_optimizer computes from global_step before the step (its unordered
`global_step + 1`, as tests/data/electra_model/make_expected.py).

Outputs:
  records.tfrecord: the records;
  expected.json: per optimizer of RUNS its schedule arguments and per step (3) the loss and
    learning rate; the eval metrics of metric_fn over the first 2 batches at the starting
    weights (one update per batch, as Estimator.evaluate with 2 steps; loss = the batches'
    mean); the variables of each training graph (name, shape, dtype);
  <optimizer>_after_3_steps.npz: every variable of the training graph after 3 steps (weights,
    <name>/adam_m, <name>/adam_v, global_step);
  group0.ckpt.*: the starting weights without group 1, and group0_init.npz: the weights the
    original's --init_from_group0 initialises from it (group 1 = group 0; net_structure_type
    set to the released configs' 0: the original fails on a config file without it). There
    the original leaves group 0's attention_1 and ffn_1 variables at their random
    initialisation: its assignment map for group 1 first maps them (their names contain
    "/attention_1/", "/ffn_1/") and then maps the same checkpoint names to group 1's.

With --restore=PREFIX --optimizer=lamb|adamw it instead builds that training graph, restores
every one of its variables from checkpoint PREFIX with tf.compat.v1.train.Saver and prints a
JSON line {"global_step", "loss"} (the loss of batch 0 at the restored weights): the test of
bert_tf's checkpoints in the original runs this.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_albert_module  # noqa: E402

v1 = tf.compat.v1
MODEL_DIR = os.path.join(REPO, "tests", "data", "albert_model", "grouped")
BATCH_SIZE, SEQ_LENGTH, PREDICTIONS, NUM_RECORDS = 4, 16, 3, 16
STEPS = 3
EVAL_BATCHES = 2
RUNS = {
    # LAMB, polynomial decay of power 2, no warmup
    "lamb": dict(learning_rate=1e-2, num_train_steps=10, num_warmup_steps=0, poly_power=2.0,
                 start_warmup_step=0),
    # AdamW, warmup ramp counted from step -2 over 4 steps: lr x 0.5, 0.75, 1.0
    "adamw": dict(learning_rate=1e-3, num_train_steps=10, num_warmup_steps=4, poly_power=1.0,
                  start_warmup_step=-2),
}
FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
            "masked_lm_weights", "next_sentence_labels")


def batches():
    spec = {k: tf.io.FixedLenFeature([1 if k == "next_sentence_labels" else
                                      PREDICTIONS if k.startswith("masked") else SEQ_LENGTH],
                                     tf.float32 if k == "masked_lm_weights" else tf.int64)
            for k in FEATURES}
    data = tf.data.TFRecordDataset(os.path.join(HERE, "records.tfrecord")).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(BATCH_SIZE, drop_remainder=True)
    return [{k: v.numpy().astype(np.float32 if v.dtype == tf.float32 else np.int32)
             for k, v in b.items()} for b in data]


class OriginalGraph:
    """The original's model_fn graph of `mode` ("train"/"eval") with fed features."""

    def __init__(self, rp, mode, optimizer="lamb", init_checkpoint=None):
        run = RUNS[optimizer]
        config = rp.modeling.AlbertConfig.from_json_file(os.path.join(MODEL_DIR,
                                                                      "albert_config.json"))
        # --init_from_group0 reads net_structure_type, which the file (as the released
        # ones are not) lacks: the released files' 0.
        config.net_structure_type = 0
        captured = {}
        classes = (rp.optimization.AdamWeightDecayOptimizer,
                   rp.optimization.lamb_optimizer.LAMBOptimizer)
        inits = [c.__init__ for c in classes]

        def recording(original_init):
            def init(opt, learning_rate, **kwargs):
                captured["learning_rate"] = learning_rate
                original_init(opt, learning_rate, **kwargs)
            return init

        # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
        rp.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.features = {
                k: v1.placeholder(tf.float32 if k == "masked_lm_weights" else tf.int32,
                                  [BATCH_SIZE, 1 if k == "next_sentence_labels" else
                                   PREDICTIONS if k.startswith("masked") else SEQ_LENGTH],
                                  name=k) for k in FEATURES}
            model_fn = rp.model_fn_builder(
                config, init_checkpoint, run["learning_rate"], run["num_train_steps"],
                run["num_warmup_steps"], use_tpu=False, use_one_hot_embeddings=False,
                optimizer=optimizer, poly_power=run["poly_power"],
                start_warmup_step=run["start_warmup_step"])
            for c, original_init in zip(classes, inits):
                c.__init__ = recording(original_init)
            try:
                self.spec = model_fn(self.features, None, mode, {})
            finally:
                for c, original_init in zip(classes, inits):
                    c.__init__ = original_init
            self.learning_rate = captured.get("learning_rate")
            self.global_step = v1.train.get_or_create_global_step()
            if mode == "eval":
                metric_fn, values = self.spec["eval_metrics"]
                self.metrics = metric_fn(*values)
            self.variables = v1.global_variables()
            self.saver = v1.train.Saver(self.variables)
            self.init_saver = v1.train.Saver({v.op.name: v for v in v1.trainable_variables()})
            init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def restore(self, prefix, everything=False):
        with self.graph.as_default():
            (self.saver if everything else self.init_saver).restore(self.session, prefix)

    def feed(self, batch):
        return {self.features[k]: batch[k] for k in FEATURES}

    def train(self, data):
        records = []
        for batch in data[:STEPS]:
            step, rate = self.session.run((self.global_step, self.learning_rate))
            feed = self.feed(batch)
            feed[self.learning_rate] = rate
            _, loss = self.session.run((self.spec["train_op"], self.spec["loss"]), feed)
            records.append({"step": int(step), "learning_rate": float(rate), "loss": float(loss)})
        return records

    def evaluate(self, data):
        losses = []
        for batch in data[:EVAL_BATCHES]:
            updates = {k: update for k, (_, update) in self.metrics.items()}
            _, loss = self.session.run((updates, self.spec["loss"]), self.feed(batch))
            losses.append(loss)
        values = self.session.run({k: value for k, (value, _) in self.metrics.items()})
        values = {k: float(v) for k, v in values.items()}
        values["loss"] = float(np.mean(np.asarray(losses, np.float32)))
        values["global_step"] = 0
        return values

    def state(self):
        return {v.op.name: v for v in self.variables}


def write_group0_checkpoint():
    """group0.ckpt: model.ckpt's variables but group 1's."""
    reader = tf.train.load_checkpoint(os.path.join(MODEL_DIR, "model.ckpt"))
    graph = tf.Graph()
    with graph.as_default():
        variables = [v1.Variable(reader.get_tensor(name), name=name)
                     for name in sorted(reader.get_variable_to_shape_map())
                     if "/group_1/" not in name]
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            v1.train.Saver(variables).save(session, os.path.join(HERE, "group0.ckpt"),
                                           write_meta_graph=False, write_state=False)


def restore_ours(rp, prefix, optimizer):
    graph = OriginalGraph(rp, "train", optimizer)
    graph.restore(prefix, everything=True)
    batch = batches()[0]
    step, loss = graph.session.run((graph.global_step, graph.spec["loss"]), graph.feed(batch))
    print(json.dumps({"global_step": int(step), "loss": float(loss)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--restore", default=None)
    parser.add_argument("--optimizer", default="lamb", choices=sorted(RUNS))
    args = parser.parse_args()
    v1.logging.set_verbosity(v1.logging.ERROR)
    rp = load_albert_module(args.original_repo, "run_pretraining")
    if args.restore:
        restore_ours(rp, args.restore, args.optimizer)
        return
    from test_training_helpers import write_records
    write_records(os.path.join(HERE, "records.tfrecord"), NUM_RECORDS, SEQ_LENGTH, PREDICTIONS,
                  vocab_size=40, seed=28)
    data = batches()
    expected = {"runs": {}}
    for optimizer, run in RUNS.items():
        graph = OriginalGraph(rp, "train", optimizer)
        graph.restore(os.path.join(MODEL_DIR, "model.ckpt"))
        steps = graph.train(data)
        values = graph.session.run(graph.state())
        np.savez_compressed(os.path.join(HERE, f"{optimizer}_after_3_steps.npz"), **values)
        expected["runs"][optimizer] = dict(run, steps=steps, variables=[
            {"name": v.op.name, "shape": v.shape.as_list(), "dtype": v.dtype.base_dtype.name}
            for v in graph.variables])
    graph = OriginalGraph(rp, "eval")
    graph.restore(os.path.join(MODEL_DIR, "model.ckpt"))
    expected["eval"] = graph.evaluate(data)
    write_group0_checkpoint()
    rp.FLAGS(["make_expected", "--init_from_group0"])
    graph = OriginalGraph(rp, "eval", init_checkpoint=os.path.join(HERE, "group0.ckpt"))
    values = graph.session.run({v.op.name: v for v in graph.variables
                                if v.op.name != "global_step"})
    np.savez_compressed(os.path.join(HERE, "group0_init.npz"), **values)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("recorded", {k: [s["loss"] for s in r["steps"]] for k, r in expected["runs"].items()},
          expected["eval"])


if __name__ == "__main__":
    main()
