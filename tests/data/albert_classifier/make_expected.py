"""Records what google-research/albert's run_classifier.py (with classifier_utils.py) does
(tests/test_albert_classifier_data.py, tests/test_albert_run_classifier.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_classifier/make_expected.py --original_repo=/tmp/orig_albert

It writes, beside this file:
  glue/<TASK>/*.tsv        a small GLUE root (every task's files in the GLUE layout, texts and
                           labels written here with the quirks the original's processors act on:
                           accents, runs of spaces, upper case, digits with commas, guids and
                           labels with spaces, an empty second text, texts longer than the
                           sequence, QQP rows with missing columns);
  examples.json            task -> split -> [guid, text_a, text_b, label] of every example the
                           original's processor reads (do_lower_case true; and mrpc, sst-2 with
                           do_lower_case false);
  records/<task>_<split>.tf_record  the original's file_based_convert_examples_to_features of
                           them (max_seq_length 32, the SentencePiece model of
                           tests/data/albert_spm);
  model/                   the tiny ALBERT the runs fine-tune: albert_config.json (4 layers over 2
                           groups of 2 inner blocks, E 8, H 16, the SentencePiece model's 2000
                           pieces, dropout 0) and model.ckpt, the original's AlbertModel's
                           variables at a seeded initialisation;
  heads.npz                the classifier head each run starts from (mrpc: [2, 16], sts-b:
                           [1, 16]), seeded draws; the runs' --init_checkpoint is model.ckpt plus
                           these two variables;
  runs/<task>/             the original's main() run on the mrpc (AdamW) and sts-b (LAMB, 2 warmup
                           steps) data: --do_train --do_eval --do_predict, 3 steps of 4 examples,
                           a checkpoint after every step, max_seq_length 32; its eval_results.txt,
                           best_trial.txt, test_results.tsv and submit_results.tsv, and
                           expected.json (the flags, per step the loss and learning rate, the files
                           left in output_dir); after_3_steps.npz: every variable of the training
                           graph after the 3 steps (weights, adam_m, adam_v, global_step).

TF 2.21 has no Estimator and no tf.contrib: main() runs unmodified with stand-ins for what
tools.original leaves empty (`contrib_tpu.RunConfig`, `TPUConfig`, `TPUEstimator`,
`TPUEstimatorSpec`, `contrib_metrics.streaming_concat` and `streaming_pearson_correlation`), written
here after TF 1.15's: the Estimator builds model_fn's graph on input_fn's batches; train saves
model.ckpt-<step> when its session starts, every save_checkpoints_steps steps and at the end
(all kept, as the RunConfig's keep_checkpoint_max=0), with .meta files; evaluate restores the
checkpoint given, streams metric_fn's metrics plus `loss` (mean of the batches' losses) over the
input once and adds `global_step`; predict yields one dict per example. The Pearson correlation
is contrib's streaming co-moment algorithm (float32). Two things differ from a run of the
original on TF 1.15, so that ours can be compared step for step: the training input is read in
file order (its shuffle(100) is the identity while input_fn builds the dataset; ours:
--shuffle_buffer_size=0), and the head's fixed dropout (keep_prob 0.9) is the identity while
model_fn builds the training graph (ours: --classifier_dropout=0; the config's dropouts are 0).
create_optimizer's `global_step + 1` is unordered with the update: the learning rate of each step
is computed before it and fed (as the other recordings do).

  runs/loop/               main()'s eval loop alone (--do_eval) on empty checkpoint files
                           model.ckpt-0 .. -5 with scripted results (LOOP_RESULTS; the stand-in
                           evaluate returns them by the checkpoint's step): eval_results.txt,
                           best_trial.txt, and the files left (the removed checkpoints, the best
                           renamed to model.ckpt-best).

`--run=<task>` (or loop) runs one of them (one original script per process: absl flags).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import RunConfig, load_albert_module, patched  # noqa: E402

v1 = tf.compat.v1
GLUE = os.path.join(HERE, "glue")
MODEL = os.path.join(HERE, "model")
SPM = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
MAX_SEQ_LENGTH = 32
MODEL_SEED = 20261126
HEAD_SEED = 29
CONFIG = {
    "attention_probs_dropout_prob": 0.0, "embedding_size": 8, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0, "hidden_size": 16, "initializer_range": 0.2,
    "inner_group_num": 2, "intermediate_size": 24, "max_position_embeddings": 32,
    "num_attention_heads": 2, "num_hidden_groups": 2, "num_hidden_layers": 4,
    "type_vocab_size": 2, "vocab_size": 2000,
}
# The runs: task -> flags of main() besides the data, model and output files.
RUNS = {
    "mrpc": dict(task_name="MRPC", optimizer="adamw", learning_rate=1e-3, warmup_step=0),
    "sts-b": dict(task_name="STS-B", optimizer="lamb", learning_rate=1e-2, warmup_step=2),
}
# The eval loop's recording: step -> (eval_accuracy, eval_loss) of scripted results.
LOOP_RESULTS = {0: (0.5, 0.7), 1: (0.6, 0.69), 2: (0.55, 0.68), 3: (0.7, 0.6), 4: (0.65, 0.61),
                5: (0.6, 0.62)}
LOOP_FILES = ("index", "data-00000-of-00001", "meta")
COMMON = dict(train_step=3, save_checkpoints_steps=1, train_batch_size=4, eval_batch_size=4,
              predict_batch_size=4, max_seq_length=MAX_SEQ_LENGTH)

# -- the GLUE root -------------------------------------------------------------------------
SENTENCES = [
    "The cat sat on the mat.",
    "A  dog   barked   at the   mailman!",
    "Café owners in Zürich said the naïve résumé was fine.",
    "SHE PAID 1,000,000, EUROS FOR IT, OR SO THEY SAY.",
    "In 1990, 37,5 people came; in 1991, 1,013 did.",
    "Ångström units are tiny.",
    "He said \"no\" and left (quietly).",
    "The quick brown fox jumps over the lazy dog near the river bank while the farmer watches "
    "from a distance, holding a cup of coffee that has long gone cold.",
    "It is raining.",
    "Über coöperate façade São Paulo Kraków.",
    "Nobody knows why the committee postponed the vote again, but the rumours are many.",
    "Prices rose by 3.5 percent – the highest since 2008.",
    "I like it.",
    "They moved to a bigger house last spring.",
    "Is this the right way to the station?",
    "The results, however, were not what anyone had expected.",
]


def sentence(i):
    return SENTENCES[i % len(SENTENCES)]


def write_tsv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        for row in ([header] if header else []) + rows:
            f.write("\t".join(str(x) for x in row) + "\n")


def write_glue():
    """Every task's train/dev/test files (see the module docstring)."""
    shutil.rmtree(GLUE, ignore_errors=True)
    # MRPC: the fine-tuned pair task. Train 10 rows (3 batches of 4 wrap around), dev 6, test 5.
    mrpc = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    labels = ["1", "0", "1", "1", "0", "0", "1", " 0", "1", "0", "1", "0", "1", "1", "0", "0"]
    for split, start, count in (("train", 0, 10), ("dev", 10, 6)):
        write_tsv(f"{GLUE}/MRPC/{split}.tsv", mrpc, [
            [labels[(start + i) % 16], 1000 + start + i, 2000 + start + i, sentence(start + i),
             "" if start + i == 3 else sentence(start + 2 * i + 1)] for i in range(count)])
    write_tsv(f"{GLUE}/MRPC/test.tsv", ["index"] + mrpc[1:], [
        [f"{i}", 3000 + i, 4000 + i, sentence(i + 5), sentence(3 * i + 2)] for i in range(5)])
    # STS-B: the fine-tuned regression task.
    stsb = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
            "sentence1", "sentence2", "score"]
    scores = ["5.000", "0.750", "3.2", "1.0", "4.8", "2.500", "0.000", "3.75", "1.6", "4.0",
              "2.2", "0.4"]
    for split, start, count in (("train", 0, 10), ("dev", 10, 6)):
        write_tsv(f"{GLUE}/STS-B/{split}.tsv", stsb, [
            [f" {start + i}", "main-news", "2012", "x", f"{i:04d}", "none", "none",
             sentence(start + i), sentence(start + 3 * i + 1), scores[(start + i) % 12]]
            for i in range(count)])
    write_tsv(f"{GLUE}/STS-B/test.tsv", stsb[:-1], [
        [f"{i}", "main-forum", "2015", "y", f"{i:04d}", "none", "none", sentence(i + 2),
         sentence(i + 7)] for i in range(5)])
    # CoLA: no header in train/dev.
    for split, start in (("train", 0), ("dev", 4)):
        write_tsv(f"{GLUE}/CoLA/{split}.tsv", None, [
            ["gj04", "1" if i % 3 else "0", "" if i % 3 else "*", sentence(start + i)]
            for i in range(4)])
    write_tsv(f"{GLUE}/CoLA/test.tsv", ["index", "sentence"],
              [[f"{i}", sentence(i + 9)] for i in range(3)])
    # SST-2.
    write_tsv(f"{GLUE}/SST-2/train.tsv", ["sentence", "label"],
              [[sentence(i), str(i % 2)] for i in range(4)])
    write_tsv(f"{GLUE}/SST-2/dev.tsv", ["sentence", "label"],
              [[sentence(i + 6), str((i + 1) % 2)] for i in range(3)])
    write_tsv(f"{GLUE}/SST-2/test.tsv", ["index", "sentence"],
              [[f" {i} ", sentence(i + 2)] for i in range(3)])
    # MNLI: train 12 columns, dev 16, test 10; guids through preprocess_text.
    nli = ["contradiction", "entailment", "neutral", "Neutral"]
    head = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
            "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
            "sentence2"]
    write_tsv(f"{GLUE}/MNLI/train.tsv", head + ["label1", "gold_label"], [
        [f"{i}", 100 + i, f"{100 + i}e", "fiction", "(", "(", "(", "(", sentence(i),
         sentence(i + 3), "x", nli[i % 4]] for i in range(4)])
    for name, genre in (("dev_matched", "slate"), ("dev_mismatched", "letters")):
        write_tsv(f"{GLUE}/MNLI/{name}.tsv", head + [f"label{k}" for k in range(1, 6)] + [
            "gold_label"], [[f"  {i}  x", 200 + i, f"{200 + i}n", genre, "(", "(", "(", "(",
                             sentence(i + 5), sentence(i + 1), "a", "b", "c", "d", "e",
                             nli[(i + 1) % 3]] for i in range(3)])
    for name in ("test_matched", "test_mismatched"):
        write_tsv(f"{GLUE}/MNLI/{name}.tsv", head, [
            [f"{i}", 300 + i, f"{300 + i}c", "travel", "(", "(", "(", "(", sentence(i + 8),
             sentence(i + 11)] for i in range(2)])
    # QQP: train and dev have rows with missing columns (skipped by the original).
    qqp = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    write_tsv(f"{GLUE}/QQP/train.tsv", qqp, [
        [f"{i}", 10 + i, 20 + i, sentence(i + 4), sentence(i + 13), str(i % 2)] for i in range(4)]
        + [["99", "1", "2", "a question broken"]])
    write_tsv(f"{GLUE}/QQP/dev.tsv", qqp, [["98", "3"]] + [
        [f"{i}", 30 + i, 40 + i, sentence(i + 1), sentence(i + 2), str((i + 1) % 2)]
        for i in range(3)])
    write_tsv(f"{GLUE}/QQP/test.tsv", ["id", "question1", "question2"],
              [[f"{i}", sentence(i), sentence(i + 5)] for i in range(2)])
    # QNLI, RTE, WNLI: index, two texts, label.
    for task, task_labels in (("QNLI", ["entailment", "not_entailment"]),
                              ("RTE", ["entailment", "not_entailment "]),
                              ("WNLI", ["0", "1"])):
        header = ["index", "question" if task == "QNLI" else "sentence1",
                  "sentence" if task == "QNLI" else "sentence2", "label"]
        for split, start in (("train", 0), ("dev", 5)):
            write_tsv(f"{GLUE}/{task}/{split}.tsv", header, [
                [f"{start + i}", sentence(start + i), sentence(start + i + 7),
                 task_labels[i % 2]] for i in range(3)])
        write_tsv(f"{GLUE}/{task}/test.tsv", header[:-1],
                  [[f"{i}", sentence(i + 3), sentence(i + 9)] for i in range(2)])


# -- the model -----------------------------------------------------------------------------
def write_model(modeling):
    """model/albert_config.json and model/model.ckpt (the original's AlbertModel, seeded)."""
    shutil.rmtree(MODEL, ignore_errors=True)
    os.makedirs(MODEL)
    with open(os.path.join(MODEL, "albert_config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    config = modeling.AlbertConfig.from_json_file(os.path.join(MODEL, "albert_config.json"))
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(MODEL_SEED)
        ids = v1.placeholder(tf.int32, [2, MAX_SEQ_LENGTH])
        modeling.AlbertModel(config, is_training=False, input_ids=ids)
        saver = v1.train.Saver(v1.global_variables())
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            saver.save(session, os.path.join(MODEL, "model.ckpt"), write_meta_graph=False,
                       write_state=False)


def write_heads():
    rng = np.random.RandomState(HEAD_SEED)
    heads = {}
    for task, num_labels in (("mrpc", 2), ("sts-b", 1)):
        heads[f"{task}/output_weights"] = (
            rng.standard_normal((num_labels, CONFIG["hidden_size"])) * 0.2).astype(np.float32)
        heads[f"{task}/output_bias"] = (rng.standard_normal(num_labels) * 0.1).astype(np.float32)
    np.savez(os.path.join(HERE, "heads.npz"), **heads)


def write_init_checkpoint(task, prefix):
    """model.ckpt plus the task's head of heads.npz, as a checkpoint at `prefix`."""
    reader = tf.train.load_checkpoint(os.path.join(MODEL, "model.ckpt"))
    heads = np.load(os.path.join(HERE, "heads.npz"))
    values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    values.update({name: heads[f"{task}/{name}"] for name in ("output_weights", "output_bias")})
    graph = tf.Graph()
    with graph.as_default():
        variables = [v1.Variable(value, name=name) for name, value in sorted(values.items())]
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            v1.train.Saver(variables).save(session, prefix, write_meta_graph=False,
                                           write_state=False)
    return prefix


# -- examples and records -------------------------------------------------------------------
def record_examples_and_records(cu, tokenization):
    """examples.json and records/ (see the module docstring)."""
    tokenizer = tokenization.FullTokenizer(vocab_file=None, do_lower_case=True,
                                           spm_model_file=SPM)
    out = {}
    shutil.rmtree(os.path.join(HERE, "records"), ignore_errors=True)
    os.makedirs(os.path.join(HERE, "records"))
    processors = {"cola": cu.ColaProcessor, "mnli": cu.MnliProcessor,
                  "mismnli": cu.MisMnliProcessor, "mrpc": cu.MrpcProcessor,
                  "rte": cu.RteProcessor, "sst-2": cu.Sst2Processor, "sts-b": cu.StsbProcessor,
                  "qqp": cu.QqpProcessor, "qnli": cu.QnliProcessor, "wnli": cu.WnliProcessor}
    for task, cls in processors.items():
        for lower in (True, False):
            if not lower and task not in ("mrpc", "sst-2"):
                continue
            processor = cls(use_spm=True, do_lower_case=lower)
            key = task if lower else f"{task}/cased"
            out[key] = {}
            for split in ("train", "dev", "test"):
                examples = getattr(processor, f"get_{split}_examples")(GLUE)
                out[key][split] = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
                if lower:
                    cu.file_based_convert_examples_to_features(
                        examples, processor.get_labels(), MAX_SEQ_LENGTH, tokenizer,
                        os.path.join(HERE, "records", f"{task}_{split}.tf_record"), task)
    with open(os.path.join(HERE, "examples.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


# -- the Estimator's stand-ins -------------------------------------------------------------
class _NoDropout:
    """tf.nn with dropout the identity (see the module docstring)."""

    def __init__(self, nn):
        self._nn = nn

    def __getattr__(self, name):
        return getattr(self._nn, name)

    @staticmethod
    def dropout(x, *args, **kwargs):
        del args, kwargs
        return x


def _metric_variable(name, shape=(), validate_shape=True):
    return v1.get_local_variable(name, shape=shape, dtype=tf.float32,
                                 initializer=v1.zeros_initializer(),
                                 validate_shape=validate_shape)


def streaming_concat(values):
    """contrib.metrics.streaming_concat: the values of every batch, concatenated on axis 0."""
    with v1.variable_scope(None, default_name="streaming_concat"):
        array = v1.Variable(tf.zeros([0], tf.float32), shape=tf.TensorShape([None]),
                            trainable=False, collections=[v1.GraphKeys.LOCAL_VARIABLES],
                            name="array")
        update = array.assign(tf.concat([array, tf.reshape(values, [-1])], 0))
    return array.read_value(), update


def streaming_covariance(predictions, labels, weights):
    """contrib.metrics.streaming_covariance: co-moments updated batch by batch (float32);
    comoment / (count - 1), NaN while count <= 1."""
    with v1.variable_scope(None, default_name="covariance"):
        count = _metric_variable("count")
        mean_prediction = _metric_variable("mean_prediction")
        mean_label = _metric_variable("mean_label")
        comoment = _metric_variable("comoment")
        weights = tf.cast(weights, tf.float32) * tf.ones_like(labels)
        batch_count = tf.reduce_sum(weights)
        update_count = v1.assign_add(count, batch_count)
        prev_count = update_count - batch_count

        def safe_div(a, b):
            return tf.where(b > 0, a / tf.where(b > 0, b, tf.ones_like(b)), tf.zeros_like(a))

        batch_mean_prediction = safe_div(tf.reduce_sum(predictions * weights), batch_count)
        delta_mean_prediction = safe_div((batch_mean_prediction - mean_prediction) * batch_count,
                                         update_count)
        update_mean_prediction = v1.assign_add(mean_prediction, delta_mean_prediction)
        prev_mean_prediction = update_mean_prediction - delta_mean_prediction
        batch_mean_label = safe_div(tf.reduce_sum(labels * weights), batch_count)
        delta_mean_label = safe_div((batch_mean_label - mean_label) * batch_count, update_count)
        update_mean_label = v1.assign_add(mean_label, delta_mean_label)
        prev_mean_label = update_mean_label - delta_mean_label
        batch_comoment = tf.reduce_sum(
            (predictions - batch_mean_prediction) * (labels - batch_mean_label) * weights)
        delta_comoment = batch_comoment + (prev_mean_prediction - batch_mean_prediction) * (
            prev_mean_label - batch_mean_label) * (prev_count * batch_count / update_count)
        update_comoment = v1.assign_add(comoment, delta_comoment)

        def value():
            return tf.where(count <= 1.0, float("nan"), comoment / (count - 1.0))

        covariance = value()
        with tf.control_dependencies([update_comoment]):
            update = value()
    return covariance, update


def streaming_pearson_correlation(predictions, labels, weights=None):
    """contrib.metrics.streaming_pearson_correlation: cov / (sqrt(var_p) sqrt(var_l))."""
    with v1.variable_scope(None, default_name="pearson_r"):
        cov, update_cov = streaming_covariance(predictions, labels, weights)
        var_p, update_var_p = streaming_covariance(predictions, predictions, weights)
        var_l, update_var_l = streaming_covariance(labels, labels, weights)
        value = cov / (tf.sqrt(var_p) * tf.sqrt(var_l))
        update = update_cov / (tf.sqrt(update_var_p) * tf.sqrt(update_var_l))
    return value, update


class TPUEstimator:
    """TPUEstimator(use_tpu=False), as far as main() uses it (module docstring)."""

    # Filled by main() of this script: the training record of the run.
    record = {}

    def __init__(self, use_tpu, model_fn, config, train_batch_size, eval_batch_size,
                 predict_batch_size, export_to_tpu=False):
        assert not use_tpu
        del export_to_tpu
        self.model_fn = model_fn
        self.config = config
        self.batch_sizes = {"train": train_batch_size, "eval": eval_batch_size,
                            "infer": predict_batch_size}

    def _graph(self, mode, input_fn):
        graph = tf.Graph()
        with graph.as_default():
            global_step = v1.train.get_or_create_global_step()
            params = {"batch_size": self.batch_sizes[mode]}
            if mode == "train":
                with patched(dataset_ops.DatasetV1, "shuffle", lambda d, *a, **k: d):
                    dataset = input_fn(params)
            else:
                dataset = input_fn(params)
            features = v1.data.make_one_shot_iterator(dataset).get_next()
            if mode == "train":
                with patched(self._tf1, "nn", _NoDropout(self._tf1.nn)):
                    spec = self.model_fn(features, None, mode, params)
            else:
                spec = self.model_fn(features, None, mode, params)
        return graph, global_step, spec

    def train(self, input_fn, max_steps):
        captured = {}
        classes = (self._optimization.AdamWeightDecayOptimizer,
                   self._optimization.lamb_optimizer.LAMBOptimizer)
        inits = [c.__init__ for c in classes]

        def recording(original_init):
            def init(opt, learning_rate, **kwargs):
                captured["learning_rate"] = learning_rate
                original_init(opt, learning_rate, **kwargs)
            return init

        for c, original_init in zip(classes, inits):
            c.__init__ = recording(original_init)
        try:
            graph, global_step, spec = self._graph("train", input_fn)
        finally:
            for c, original_init in zip(classes, inits):
                c.__init__ = original_init
        prefix = os.path.join(self.config.model_dir, "model.ckpt")
        assert not tf.io.gfile.glob(prefix + "-*"), "the stand-in starts from scratch only"
        steps = []
        with graph.as_default():
            saver = v1.train.Saver(max_to_keep=None, sharded=True, save_relative_paths=True)
            init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
            session = v1.Session(graph=graph)
            session.run(init)
            step = int(session.run(global_step))
            saver.save(session, prefix, global_step=step)
            saved = step
            learning_rate = captured["learning_rate"]
            while step < max_steps:
                rate = session.run(learning_rate)
                _, loss = session.run((spec["train_op"], spec["loss"]), {learning_rate: rate})
                steps.append({"step": step, "loss": float(loss), "learning_rate": float(rate)})
                step = int(session.run(global_step))
                if step % self.config.save_checkpoints_steps == 0:
                    saver.save(session, prefix, global_step=step)
                    saved = step
            if saved != step:
                saver.save(session, prefix, global_step=step)
            TPUEstimator.record["steps"] = steps
            TPUEstimator.record["variables"] = {
                v.op.name: session.run(v) for v in v1.global_variables()}
            session.close()

    def evaluate(self, input_fn, steps, checkpoint_path):
        assert steps is None
        graph, global_step, spec = self._graph("eval", input_fn)
        with graph.as_default():
            metric_fn, tensors = spec["eval_metrics"]
            metrics = metric_fn(*tensors)
            metrics["loss"] = v1.metrics.mean(spec["loss"])
            saver = v1.train.Saver()
            session = v1.Session(graph=graph)
            session.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            saver.restore(session, checkpoint_path)
            updates = {k: update for k, (_, update) in metrics.items()}
            while True:
                try:
                    session.run(updates)
                except tf.errors.OutOfRangeError:
                    break
            results = session.run({k: value for k, (value, _) in metrics.items()})
            results["global_step"] = session.run(global_step)
            session.close()
        return results

    def predict(self, input_fn, checkpoint_path):
        graph, _, spec = self._graph("infer", input_fn)
        with graph.as_default():
            saver = v1.train.Saver()
            session = v1.Session(graph=graph)
            saver.restore(session, checkpoint_path)
            while True:
                try:
                    batch = session.run(spec["predictions"])
                except tf.errors.OutOfRangeError:
                    break
                for i in range(len(next(iter(batch.values())))):
                    yield {k: v[i] for k, v in batch.items()}
            session.close()


from tensorflow.python.data.ops import dataset_ops  # noqa: E402  (the stand-in's shuffle)


def run_original(task, original_repo):
    """The original's main() on `task` (module docstring); writes runs/<task>/."""
    v1.logging.set_verbosity(v1.logging.ERROR)
    rc = load_albert_module(original_repo, "run_classifier")
    cu = rc.classifier_utils
    tpu = rc.contrib_tpu
    tpu.RunConfig = RunConfig
    tpu.TPUConfig = lambda **kwargs: kwargs
    tpu.InputPipelineConfig = types.SimpleNamespace(PER_HOST_V2=2)
    tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
    tpu.TPUEstimator = TPUEstimator
    TPUEstimator._tf1 = cu.tf
    TPUEstimator._optimization = cu.optimization
    cu.contrib_metrics.streaming_concat = streaming_concat
    cu.contrib_metrics.streaming_pearson_correlation = streaming_pearson_correlation
    run = dict(RUNS[task], **COMMON)
    out_dir = os.path.join(HERE, "runs", task)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        init = write_init_checkpoint(task, os.path.join(tmp, "init", "model.ckpt"))
        output_dir = os.path.join(tmp, "output")
        argv = ["run_classifier", f"--data_dir={GLUE}", f"--spm_model_file={SPM}",
                f"--albert_config_file={os.path.join(MODEL, 'albert_config.json')}",
                f"--init_checkpoint={init}", f"--output_dir={output_dir}", "--do_train",
                "--do_eval", "--do_predict"] + [f"--{k}={v}" for k, v in run.items()]
        rc.FLAGS(argv)
        rc.main(None)
        for name in ("eval_results.txt", "best_trial.txt", "test_results.tsv",
                     "submit_results.tsv"):
            shutil.copy(os.path.join(output_dir, name), os.path.join(out_dir, name))
        left = sorted(os.listdir(output_dir))
    record = TPUEstimator.record
    variables = record.pop("variables")
    np.savez_compressed(os.path.join(out_dir, "after_3_steps.npz"), **variables)
    expected = dict(flags=run, steps=record["steps"], files=left)
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(task, [s["loss"] for s in record["steps"]], left)


class ScriptedEstimator(TPUEstimator):
    """An Estimator whose evaluate returns LOOP_RESULTS[step of the checkpoint] (no model)."""

    def evaluate(self, input_fn, steps, checkpoint_path):
        del input_fn, steps
        step = int(checkpoint_path.rsplit("-", 1)[1])
        accuracy, loss = LOOP_RESULTS[step]
        return {"eval_accuracy": np.float32(accuracy), "eval_loss": np.float32(loss),
                "loss": np.float32(loss), "global_step": np.int64(step)}


def run_loop(original_repo):
    """main()'s eval loop alone (--do_eval) on LOOP_RESULTS: checkpoint files of no content
    model.ckpt-0 .. -5 (.index, .data-00000-of-00001, .meta) and the scripted results; writes
    runs/loop/ (eval_results.txt, best_trial.txt, expected.json: the files left)."""
    v1.logging.set_verbosity(v1.logging.ERROR)
    rc = load_albert_module(original_repo, "run_classifier")
    tpu = rc.contrib_tpu
    tpu.RunConfig = RunConfig
    tpu.TPUConfig = lambda **kwargs: kwargs
    tpu.InputPipelineConfig = types.SimpleNamespace(PER_HOST_V2=2)
    tpu.TPUEstimator = ScriptedEstimator
    out_dir = os.path.join(HERE, "runs", "loop")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with tempfile.TemporaryDirectory() as output_dir:
        for step in LOOP_RESULTS:
            for ext in LOOP_FILES:
                with open(os.path.join(output_dir, f"model.ckpt-{step}.{ext}"), "w") as f:
                    f.write(f"{step}.{ext}")
        argv = ["run_classifier", f"--data_dir={GLUE}", f"--spm_model_file={SPM}",
                f"--albert_config_file={os.path.join(MODEL, 'albert_config.json')}",
                f"--output_dir={output_dir}", "--task_name=MRPC", "--do_eval",
                f"--train_step={max(LOOP_RESULTS)}", f"--max_seq_length={MAX_SEQ_LENGTH}"]
        rc.FLAGS(argv)
        rc.main(None)
        for name in ("eval_results.txt", "best_trial.txt"):
            shutil.copy(os.path.join(output_dir, name), os.path.join(out_dir, name))
        left = {name: open(os.path.join(output_dir, name)).read()
                for name in sorted(os.listdir(output_dir)) if name.startswith("model.ckpt")}
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"results": LOOP_RESULTS, "files": left}, f, indent=1)
        f.write("\n")
    print("loop", sorted(left))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--run", choices=sorted(RUNS) + ["loop"], default=None)
    args = parser.parse_args()
    if args.run == "loop":
        run_loop(args.original_repo)
        return
    if args.run:
        run_original(args.run, args.original_repo)
        return
    v1.logging.set_verbosity(v1.logging.ERROR)
    cu = load_albert_module(args.original_repo, "classifier_utils")
    write_glue()
    write_model(cu.modeling)
    write_heads()
    record_examples_and_records(cu, cu.tokenization)
    for task in list(RUNS) + ["loop"]:
        subprocess.run([sys.executable, os.path.abspath(__file__),
                        f"--original_repo={args.original_repo}", f"--run={task}"], check=True)
    print("wrote", HERE)


if __name__ == "__main__":
    main()
