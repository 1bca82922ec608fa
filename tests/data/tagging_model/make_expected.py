"""Records a reference tagger on the ORIGINAL modeling.BertModel and create_optimizer
(tests/test_tagging_model.py): the recipe of issue 22, step by step, on the golden tiny model.

Run once, in one process, with a copy of google-research/bert:

    python3 tests/data/tagging_model/make_expected.py --original_repo=/tmp/orig_bert

The original has no tagger. The reference is the recipe written on the original's pieces, as
benchmarks/tagging_quality.py's ReferenceTagger: each word's pieces from the original's
FullTokenizer, `[CLS] pieces [SEP]`, label id and weight 1 at each word's first piece (0
elsewhere); modeling.BertModel's sequence output, a dense layer [num_labels, H] + bias (named
as our head's variables, so that the checkpoints compare name by name); the loss the sum of
weight * cross-entropy over the batch divided by the sum of the weights; the train op of
optimization.create_optimizer (use_tpu=False). Golden tiny model (../shared/golden/train:
dropout 0.0, init.ckpt, vocab.txt); the head's dropout is left out (the graph is deterministic;
ours runs with tagging dropout 0). The head starts from a seeded draw (head_init.npz), larger
than the 0.02 initializer so that the logits differ visibly.

create_optimizer's `global_step + 1` is not ordered after the update's read of the step; as
tests/data/classifier_model/make_expected.py does, the learning rate of the step about to run
is fed, which is what the update sees in practice.

Outputs beside this file:
  train.txt: the CoNLL sentences (words of the golden vocab, several pieces for some);
  expected.json: labels, max_seq_length, batch size, learning rate, num_train_steps,
    num_warmup_steps; features: the reference's input_ids, input_mask, label_ids,
    label_weights [N, S]; forward: the init weights' logits on them; steps: per step (batches
    of 4 in file order) the global step, loss and learning rate;
  head_init.npz: bert_tf/tagging/output_weights and output_bias at the start;
  after_3_steps.npz: every variable of the graph after 3 steps (weights, adam_m, adam_v),
    keyed by name with "/" replaced by "|", plus global_step.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_original_module  # noqa: E402

v1 = tf.compat.v1
GOLDEN_TRAIN = os.path.join(os.path.dirname(REPO), "shared", "golden", "train")
MAX_SEQ_LENGTH = 16
BATCH_SIZE = 4
LEARNING_RATE = 1e-3
NUM_TRAIN_STEPS = 10
NUM_WARMUP_STEPS = 3
RECORDED_STEPS = 3
HEAD_SEED = 20261125
HEAD_STDDEV = 0.2
HEAD_SCOPE = "bert_tf/tagging"

# (word, tag) sentences; "philammon", "cassius" and "guttenberg" are several pieces or whole
# words of the golden vocab; "xq" is two pieces ("x", "##q").
SENTENCES = [
    [("philammon", "B-PER"), ("crossed", "O"), ("the", "O"), ("desert", "B-LOC")],
    [("the", "O"), ("monk", "O"), ("reached", "O"), ("the", "O"), ("gate", "B-LOC"),
     ("of", "O"), ("india", "B-LOC")],
    [("cassius", "B-PER"), ("guttenberg", "I-PER"), ("saw", "O"), ("the", "O"),
     ("palaces", "O")],
    [("mr", "O"), ("xq", "B-PER"), ("held", "O"), ("a", "O"), ("chunks", "O"), ("of", "O"),
     ("gold", "B-MISC"), ("ore", "I-MISC")],
    [("laura", "B-PER"), ("smiled", "O")],
    [("the", "O"), ("guide", "O"), ("put", "O"), ("the", "O"), ("basket", "O"), ("upon", "O"),
     ("the", "O"), ("quay", "B-LOC")],
    [("hypatia", "B-PER"), ("looked", "O"), ("at", "O"), ("the", "O"), ("sea", "B-LOC")],
    [("the", "O"), ("camels", "O"), ("drove", "O"), ("through", "O"), ("the", "O"),
     ("sand", "O"), ("to", "O"), ("the", "O"), ("camp", "B-LOC")],
    [("philammon", "B-PER"), ("and", "O"), ("hypatia", "B-PER"), ("met", "O")],
    [("gold", "B-MISC"), ("glittered", "O"), ("in", "O"), ("the", "O"), ("city", "B-LOC")],
    [("the", "O"), ("jeweler", "O"), ("knew", "O"), ("cassius", "B-PER")],
    [("laura", "B-PER"), ("guttenberg", "I-PER"), ("left", "O"), ("the", "O"),
     ("cabin", "B-LOC"), ("early", "O")],
]


def labels_of(sentences):
    return ["O"] + sorted({t for s in sentences for _, t in s} - {"O"})


def features(tokenizer, sentences, labels):
    """The reference's features (every sentence fits in one window here)."""
    n, s = len(sentences), MAX_SEQ_LENGTH
    out = {k: np.zeros([n, s], np.int32) for k in ("input_ids", "input_mask", "label_ids")}
    out["label_weights"] = np.zeros([n, s], np.float32)
    for i, sentence in enumerate(sentences):
        pieces = ["[CLS]"]
        for word, tag in sentence:
            out["label_ids"][i, len(pieces)] = labels.index(tag)
            out["label_weights"][i, len(pieces)] = 1.0
            pieces += tokenizer.tokenize(word)
        pieces.append("[SEP]")
        assert len(pieces) <= s, sentence
        out["input_ids"][i, :len(pieces)] = tokenizer.convert_tokens_to_ids(pieces)
        out["input_mask"][i, :len(pieces)] = 1
    return out


class TaggingGraph:
    def __init__(self, modeling, optimization, config, num_labels, init_checkpoint, head):
        self.graph = tf.Graph()
        captured = {}
        optimizer_class = optimization.AdamWeightDecayOptimizer
        original_init = optimizer_class.__init__

        def recording_init(optimizer, learning_rate, **kwargs):
            captured["learning_rate"] = learning_rate
            original_init(optimizer, learning_rate, **kwargs)

        with self.graph.as_default():
            self.features = {k: v1.placeholder(tf.float32 if k == "label_weights" else tf.int32,
                                               [None, MAX_SEQ_LENGTH], name=k)
                             for k in ("input_ids", "input_mask", "label_ids", "label_weights")}
            model = modeling.BertModel(
                config=config, is_training=False, input_ids=self.features["input_ids"],
                input_mask=self.features["input_mask"],
                token_type_ids=tf.zeros_like(self.features["input_ids"]),
                use_one_hot_embeddings=False)
            sequence = model.get_sequence_output()
            with v1.variable_scope(HEAD_SCOPE):
                weights = v1.get_variable("output_weights", [num_labels, config.hidden_size])
                bias = v1.get_variable("output_bias", [num_labels])
            self.logits = tf.einsum("bsh,nh->bsn", sequence, weights) + bias
            log_probs = tf.nn.log_softmax(self.logits, axis=-1)
            per_position = -tf.reduce_sum(
                tf.one_hot(self.features["label_ids"], num_labels) * log_probs, axis=-1)
            label_weights = self.features["label_weights"]
            self.loss = (tf.reduce_sum(label_weights * per_position)
                         / tf.reduce_sum(label_weights))
            tvars = v1.trainable_variables()
            assignment, _ = modeling.get_assignment_map_from_checkpoint(tvars, init_checkpoint)
            v1.train.init_from_checkpoint(init_checkpoint, assignment)
            optimizer_class.__init__ = recording_init
            try:
                self.train_op = optimization.create_optimizer(
                    self.loss, LEARNING_RATE, NUM_TRAIN_STEPS, NUM_WARMUP_STEPS, False)
            finally:
                optimizer_class.__init__ = original_init
            self.learning_rate = captured["learning_rate"]
            self.global_step = v1.train.get_global_step()
            self.variables = v1.global_variables()
            init = v1.global_variables_initializer()
            set_head = [weights.assign(head["output_weights"]), bias.assign(head["output_bias"])]
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)
        self.session.run(set_head)

    def feed(self, batch):
        return {self.features[k]: v for k, v in batch.items()}

    def train(self, batches):
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
    modeling = load_original_module(args.original_repo, "modeling")
    optimization = load_original_module(args.original_repo, "optimization")
    tokenization = load_original_module(args.original_repo, "tokenization")
    tokenizer = tokenization.FullTokenizer(os.path.join(args.golden_dir, "vocab.txt"), True)
    config = modeling.BertConfig.from_json_file(os.path.join(args.golden_dir,
                                                             "bert_config.json"))
    labels = labels_of(SENTENCES)

    with open(os.path.join(HERE, "train.txt"), "w") as f:
        for sentence in SENTENCES:
            f.write("".join(f"{word} X {tag}\n" for word, tag in sentence) + "\n")
    feats = features(tokenizer, SENTENCES, labels)
    rng = np.random.RandomState(HEAD_SEED)
    head = {"output_weights": (HEAD_STDDEV * rng.randn(len(labels), config.hidden_size))
            .astype(np.float32),
            "output_bias": (0.1 * rng.randn(len(labels))).astype(np.float32)}
    np.savez(os.path.join(HERE, "head_init.npz"), **head)

    graph = TaggingGraph(modeling, optimization, config, len(labels),
                         os.path.join(args.golden_dir, "init.ckpt"), head)
    forward = graph.session.run(graph.logits, graph.feed(feats))
    batches = [{k: v[i:i + BATCH_SIZE] for k, v in feats.items()}
               for i in range(0, BATCH_SIZE * RECORDED_STEPS, BATCH_SIZE)]
    steps = graph.train(batches)
    values = graph.session.run({v.op.name: v for v in graph.variables})
    np.savez(os.path.join(HERE, "after_3_steps.npz"),
             **{name.replace("/", "|"): value for name, value in values.items()})
    expected = {
        "labels": labels, "max_seq_length": MAX_SEQ_LENGTH, "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE, "num_train_steps": NUM_TRAIN_STEPS,
        "num_warmup_steps": NUM_WARMUP_STEPS,
        "features": {k: v.tolist() for k, v in feats.items()},
        "forward": forward.tolist(), "steps": steps,
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"wrote {HERE}: {len(SENTENCES)} sentences, {len(labels)} labels, steps {steps}")


if __name__ == "__main__":
    main()
