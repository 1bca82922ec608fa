"""Records what google-research/albert's run_race.py (with race_utils.py) does
(tests/test_albert_race_data.py, tests/test_albert_run_race.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_race/make_expected.py --original_repo=/tmp/orig_albert

It writes, beside this file:
  RACE/<split>/<level>/all.txt   a small RACE root as the original reads it (one JSON document
                         per line: article, questions, options, answers, id), with what its
                         reader and features act on: questions with one or two "_" and without,
                         accents, runs of spaces, upper case, '' quotes, digits with commas, an
                         article longer than the sequence, options longer than max_qa_length;
  examples.json          settings -> split -> [example_id, context, [4 endings], label] of the
                         examples the original's RaceProcessor reads (lower case or not; middle
                         only, high only);
  records/<setting>_<split>.tf_record  the original's file_based_convert_examples_to_features
                         of them at each SETTINGS' max_seq_length / max_qa_length (the
                         SentencePiece model of tests/data/albert_spm);
  model/                 the tiny ALBERT the runs fine-tune: albert_config.json (4 layers over 2
                         groups of 2 inner blocks, E 8, H 16, the SentencePiece model's 2000
                         pieces, dropout 0) and model.ckpt: the original's AlbertModel at a
                         seeded initialisation, its biases and LayerNorm betas seeded draws
                         (not zeros), plus a RACE head (output_weights [1, 16], output_bias
                         [1]) of seeded draws;
  runs/train_eval/       the original's main() --do_train --do_eval from model.ckpt: 3 steps of 4
                         examples (AdamW, 1 warmup step), a checkpoint after every step,
                         max_seq_length 48, max_qa_length 10, eval batches of 4 (the last one
                         partial); its eval_results.txt, the records it wrote (train.tf_record,
                         eval.tf_record), and expected.json (the flags, per step the loss and
                         learning rate, the files left in output_dir); after_3_steps.npz: every
                         variable of the training graph after the 3 steps (weights, adam_m,
                         adam_v, global_step);
  runs/predict/          main() --do_predict on that output_dir: it fails on CPU (predict_steps
                         is only set with --use_tpu); its error, the predict.tf_record it wrote
                         before failing, and predict_results.txt as its do_predict block would
                         write it with predict_steps None (the CPU value of eval_steps): the
                         original's estimator.evaluate of model.ckpt-best on the test records
                         (predict_batch_size 2, the last batch partial), the lines main() writes,
                         `best` the best eval_accuracy of the eval loop;
  runs/loop/             main()'s eval loop alone (--do_eval) on checkpoint files of no content
                         model.ckpt-0 .. -5 and model.ckpt-best with scripted results
                         (LOOP_RESULTS; the stand-in evaluate returns them by the checkpoint):
                         eval_results.txt and the files left.

TF 2.21 has no Estimator and no tf.contrib: main() runs unmodified with stand-ins for what
tools.original leaves empty (`contrib_tpu.RunConfig`, `TPUConfig`, `InputPipelineConfig`,
`TPUEstimator`, `TPUEstimatorSpec`), written here after TF 1.15's: the Estimator builds
model_fn's graph on input_fn's batches; train saves model.ckpt-<step> when its session starts,
every save_checkpoints_steps steps and at the end (all kept, as the RunConfig's
keep_checkpoint_max=0), with .meta files; evaluate restores the checkpoint given, streams
metric_fn's metrics plus `loss` (mean of the batches' losses) over the input once and adds
`global_step`. race_utils.create_model reads `output_layer.shape[-1].value` (a TF1 Dimension):
this process runs with `tf.compat.v1.disable_v2_tensorshape()`. One thing differs from a run
of the original on TF 1.15, so that ours can be compared step for step: the training input is
read in file order (its shuffle(100) is the identity while input_fn builds the dataset; ours:
--shuffle_buffer_size=0); the runs use --dropout_prob=0 and a config without dropout.
create_optimizer's `global_step + 1` is unordered with the update: the learning rate of each
step is computed before it and fed.

`--run=<name>` runs one of the runs (one original script per process: absl flags).
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
RACE = os.path.join(HERE, "RACE")
MODEL = os.path.join(HERE, "model")
SPM = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
MODEL_SEED = 20261126
HEAD_SEED = 7
CONFIG = {
    "attention_probs_dropout_prob": 0.0, "embedding_size": 8, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0, "hidden_size": 16, "initializer_range": 0.2,
    "inner_group_num": 2, "intermediate_size": 24, "max_position_embeddings": 64,
    "num_attention_heads": 2, "num_hidden_groups": 2, "num_hidden_layers": 4,
    "type_vocab_size": 2, "vocab_size": 2000,
}
# Record settings: name -> (max_seq_length, max_qa_length, do_lower_case, high_only,
# middle_only).
SETTINGS = {
    "s48_q10": (48, 10, True, False, False),
    "s32_q24": (32, 24, True, False, False),
    "s64_q128": (64, 128, True, False, False),
    "cased_s48_q10": (48, 10, False, False, False),
    "high_s40_q16": (40, 16, True, True, False),
    "middle_s40_q16": (40, 16, True, False, True),
}
# The fine-tuning run's flags besides the data, model and output files.
RUN = dict(max_seq_length=48, max_qa_length=10, train_step=3, warmup_step=1,
           save_checkpoints_steps=1, train_batch_size=4, eval_batch_size=4,
           predict_batch_size=2, learning_rate=1e-3, dropout_prob=0.0)
# The eval loop's recording: checkpoint -> (global_step, eval_accuracy, eval_loss).
LOOP_RESULTS = {"best": (1, 0.55, 0.69), "0": (0, 0.5, 0.7), "1": (1, 0.55, 0.69),
                "2": (2, 0.5, 0.68), "3": (3, 0.7, 0.6), "4": (4, 0.7, 0.61),
                "5": (5, 0.6, 0.62)}
LOOP_FILES = ("index", "data-00000-of-00001", "meta")
LOOP_TRAIN_STEP = 5

# -- the RACE root -------------------------------------------------------------------------
LONG_ARTICLE = (
    "Tom lives in a small town near the river. Every morning he walks his dog, Max, along the "
    "bank before school. One day in April, 1,250 people came to the town for the spring "
    "festival, and Tom's mother opened a café that sold cakes, tea and coffee. Max ran away "
    "during the parade, and Tom looked for him for three hours. At last he found the dog "
    "sleeping under a table in the café, next to a plate of cakes that nobody had paid for.")
DOCS = {
    # Short articles and distinct options: the 4 sequences of an example share little, so
    # their gradients do not nearly cancel (a multiple-choice gradient is a difference of the
    # choices' gradients) and the 3 training steps stay well conditioned.
    ("train", "middle"): [
        {"id": "middle1.txt",
         "article": "The cat sat.   It  was  SUNNY.",
         "questions": ["The cat sat on _ .", "Who sat?"],
         "options": [["the mat", "a chair in the kitchen", "the roof of the tall house", "it"],
                     ["nobody at all, since the room was empty", "the cat",
                      "a big brown dog from the farm", "my grandmother's old friend Tom"]],
         "answers": ["A", "B"]},
        {"id": "middle2.txt", "article": "Tom found Max.",
         "questions": ["Where?"],
         "options": [["At school, before the lessons began.", "In the river.",
                      "Under a table in the café.", "Home."]],
         "answers": ["C"]},
    ],
    ("train", "high"): [
        {"id": "high1.txt",
         "article": "Café owners in Zürich said ''no''.",
         "questions": ["The owners were in _ , and prices rose by _ .", "Who?"],
         "options": [["Zürich", "Paris, the capital of France", "Kraków", "São Paulo in Brazil"],
                     ["The owners of the café", "He", "NOBODY, 1,000,000, EUROS",
                      "The résumé"]],
         "answers": ["A", "A"]},
    ],
    ("dev", "middle"): [
        {"id": "middle3.txt", "article": LONG_ARTICLE,
         "questions": ["How many people came to the festival?", "Max is Tom's _ .",
                       "What did Tom's mother open?"],
         "options": [["1,250", "125", "12,500", "1,025"], ["cat", "dog", "friend", "brother"],
                     ["A school.", "A shop.", "A café.", "A bank."]],
         "answers": ["A", "B", "C"]},
    ],
    ("dev", "high"): [
        {"id": "high2.txt",
         "article": "The quick brown fox jumps over the lazy dog near the river bank while "
                    "the farmer watches from a distance, holding a cup of coffee.",
         "questions": ["The fox jumps over the _ dog.", "What does the farmer hold?",
                       "Where is the dog?"],
         "options": [["lazy", "quick", "brown", "old"],
                     ["A dog.", "A fox.", "A cup of coffee.", "A river."],
                     ["In the house.", "Near the river bank.", "On the farm.",
                      "Far away in the mountains beyond the old forest and the lake."]],
         "answers": ["A", "C", "B"]},
    ],
    ("test", "middle"): [
        {"id": "middle4.txt",
         "article": "It is raining. They moved to a bigger house last spring.",
         "questions": ["When did they move?", "The weather is _ ."],
         "options": [["Last spring.", "Last winter.", "Today.", "Never."],
                     ["sunny", "raining", "windy", "cold"]],
         "answers": ["A", "B"]},
    ],
    ("test", "high"): [
        {"id": "high3.txt",
         "article": "Is this the right way to the station? The results, however, were not "
                    "what anyone had expected.",
         "questions": ["The results were _ ."],
         "options": [["expected", "not expected", "good", "bad"]],
         "answers": ["B"]},
    ],
}


def write_race():
    shutil.rmtree(RACE, ignore_errors=True)
    for (split, level), docs in DOCS.items():
        directory = os.path.join(RACE, split, level)
        os.makedirs(directory)
        with open(os.path.join(directory, "all.txt"), "w", encoding="utf-8") as f:
            for doc in docs:
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")


# -- the model -----------------------------------------------------------------------------
def write_model(modeling):
    """model/albert_config.json and model/model.ckpt (the original's AlbertModel, seeded, and a
    RACE head of seeded draws)."""
    shutil.rmtree(MODEL, ignore_errors=True)
    os.makedirs(MODEL)
    with open(os.path.join(MODEL, "albert_config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    config = modeling.AlbertConfig.from_json_file(os.path.join(MODEL, "albert_config.json"))
    rng = np.random.RandomState(HEAD_SEED)
    head = {"output_weights": (rng.standard_normal((1, CONFIG["hidden_size"])) * 1.0
                               ).astype(np.float32),
            "output_bias": (rng.standard_normal(1) * 0.1).astype(np.float32)}
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(MODEL_SEED)
        ids = v1.placeholder(tf.int32, [2, 16])
        modeling.AlbertModel(config, is_training=False, input_ids=ids)
        for name, value in head.items():
            v1.Variable(value, name=name)
        saver = v1.train.Saver(v1.global_variables())
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            # Biases and LayerNorm betas as a pretrained model has them, not the initial zeros:
            # a weight compared after 3 Adam steps then has a scale beyond the steps' moves.
            for variable in v1.global_variables():
                if variable.op.name.endswith(("/bias", "/beta")):
                    shape = variable.shape.as_list()
                    session.run(variable.assign(
                        (rng.standard_normal(shape) * 0.2).astype(np.float32)))
            saver.save(session, os.path.join(MODEL, "model.ckpt"), write_meta_graph=False,
                       write_state=False)


# -- examples and records -------------------------------------------------------------------
def record_examples_and_records(race_utils, tokenization):
    """examples.json and records/ (see the module docstring)."""
    out = {}
    shutil.rmtree(os.path.join(HERE, "records"), ignore_errors=True)
    os.makedirs(os.path.join(HERE, "records"))
    for name, (length, qa_length, lower, high_only, middle_only) in SETTINGS.items():
        tokenizer = tokenization.FullTokenizer(vocab_file=None, do_lower_case=lower,
                                               spm_model_file=SPM)
        processor = race_utils.RaceProcessor(use_spm=True, do_lower_case=lower,
                                             high_only=high_only, middle_only=middle_only)
        out[name] = {}
        for split in ("train", "dev", "test"):
            examples = getattr(processor, f"get_{split}_examples")(HERE)
            out[name][split] = [[e.example_id, e.context_sentence, e.endings, e.label]
                                for e in examples]
            race_utils.file_based_convert_examples_to_features(
                examples, processor.get_labels(), length, tokenizer,
                os.path.join(HERE, "records", f"{name}_{split}.tf_record"), qa_length)
    with open(os.path.join(HERE, "examples.json"), "w", encoding="utf-8") as f:
        json.dump({"settings": SETTINGS, "examples": out}, f, indent=1, ensure_ascii=False)
        f.write("\n")


# -- the Estimator's stand-ins -------------------------------------------------------------
class TPUEstimator:
    """TPUEstimator(use_tpu=False), as far as run_race's main() uses it (module docstring)."""

    # Filled by train(): the training record of the run.
    record = {}
    # The original's optimization module (its AdamWeightDecayOptimizer's learning rate is fed).
    optimization = None

    def __init__(self, use_tpu, model_fn, config, train_batch_size, eval_batch_size,
                 predict_batch_size):
        assert not use_tpu
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
            spec = self.model_fn(features, None, mode, params)
        return graph, global_step, spec

    def train(self, input_fn, max_steps):
        captured = {}
        cls = self.optimization.AdamWeightDecayOptimizer
        original_init = cls.__init__

        def init(opt, learning_rate, **kwargs):
            captured["learning_rate"] = learning_rate
            original_init(opt, learning_rate, **kwargs)

        with patched(cls, "__init__", init):
            graph, global_step, spec = self._graph("train", input_fn)
        prefix = os.path.join(self.config.model_dir, "model.ckpt")
        assert not tf.io.gfile.glob(prefix + "-*"), "the stand-in starts from scratch only"
        steps = []
        with graph.as_default():
            saver = v1.train.Saver(max_to_keep=None, sharded=True, save_relative_paths=True)
            session = v1.Session(graph=graph)
            session.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
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


from tensorflow.python.data.ops import dataset_ops  # noqa: E402  (the stand-in's shuffle)


def load_run_race(original_repo, estimator_class):
    v1.disable_v2_tensorshape()
    v1.logging.set_verbosity(v1.logging.ERROR)
    rr = load_albert_module(original_repo, "run_race")
    tpu = rr.contrib_tpu
    tpu.RunConfig = RunConfig
    tpu.TPUConfig = lambda **kwargs: kwargs
    tpu.InputPipelineConfig = types.SimpleNamespace(PER_HOST_V2=2)
    tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
    tpu.TPUEstimator = estimator_class
    estimator_class.optimization = rr.race_utils.optimization
    # race_utils imports its own `contrib_tpu` name: the same stand-in module.
    assert rr.race_utils.contrib_tpu is tpu
    return rr


def model_argv(output_dir):
    return ["run_race", f"--data_dir={HERE}", f"--spm_model_file={SPM}",
            f"--albert_config_file={os.path.join(MODEL, 'albert_config.json')}",
            f"--init_checkpoint={os.path.join(MODEL, 'model.ckpt')}",
            f"--output_dir={output_dir}", f"--train_file={output_dir}/train.tf_record",
            f"--eval_file={output_dir}/eval.tf_record"]


def best_of(eval_results):
    """The best eval_accuracy of an eval_results.txt: main()'s best_perf after its loop (-1, or
    the np.float32 of the results, which `"{}".format` writes as a Python float; `str()` of a
    float32, as the results lines are written, reads back to the same float32)."""
    best = -1
    for line in eval_results.splitlines():
        if line.startswith("eval_accuracy = "):
            best = max(best, np.float32(line.split(" = ")[1]))
    return best


def run_train_eval_predict(original_repo):
    """runs/train_eval and runs/predict (module docstring)."""
    rr = load_run_race(original_repo, TPUEstimator)
    ru = rr.race_utils
    train_dir = os.path.join(HERE, "runs", "train_eval")
    predict_dir = os.path.join(HERE, "runs", "predict")
    for directory in (train_dir, predict_dir):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
    with tempfile.TemporaryDirectory() as tmp:
        output_dir = os.path.join(tmp, "output")
        rr.FLAGS(model_argv(output_dir) + ["--do_train", "--do_eval"] +
                 [f"--{k}={v}" for k, v in RUN.items()])
        rr.main(None)
        for name in ("eval_results.txt", "train.tf_record", "eval.tf_record"):
            shutil.copy(os.path.join(output_dir, name), os.path.join(train_dir, name))
        left = sorted(os.listdir(output_dir))
        record = TPUEstimator.record
        np.savez_compressed(os.path.join(train_dir, "after_3_steps.npz"),
                            **record.pop("variables"))
        with open(os.path.join(train_dir, "expected.json"), "w") as f:
            json.dump(dict(flags=RUN, steps=record["steps"], files=left,
                           output_dir=output_dir), f, indent=1)
            f.write("\n")
        print("train_eval", [s["loss"] for s in record["steps"]], left)

        # --do_predict: main() fails on CPU before evaluating.
        rr.FLAGS.do_train, rr.FLAGS.do_eval, rr.FLAGS.do_predict = False, False, True
        try:
            rr.main(None)
        except Exception as e:  # pylint: disable=broad-except
            error = f"{type(e).__name__}: {e}"
        else:
            raise AssertionError("the original's --do_predict ran on CPU")
        predict_file = os.path.join(output_dir, "predict.tf_record")
        shutil.copy(predict_file, os.path.join(predict_dir, "predict.tf_record"))
        # What its do_predict block does next, with predict_steps = None (as eval_steps off
        # TPU): evaluate model.ckpt-best on the test records, write predict_results.txt.
        flags = rr.FLAGS
        albert_config = ru.modeling.AlbertConfig.from_json_file(flags.albert_config_file)
        model_fn = ru.model_fn_builder(
            albert_config=albert_config, num_labels=4, init_checkpoint=flags.init_checkpoint,
            learning_rate=flags.learning_rate, num_train_steps=flags.train_step,
            num_warmup_steps=flags.warmup_step, use_tpu=False, use_one_hot_embeddings=False,
            max_seq_length=flags.max_seq_length, dropout_prob=flags.dropout_prob,
            hub_module=None)
        estimator = TPUEstimator(
            use_tpu=False, model_fn=model_fn, config=RunConfig(output_dir, 1, 0),
            train_batch_size=flags.train_batch_size, eval_batch_size=flags.eval_batch_size,
            predict_batch_size=flags.predict_batch_size)
        input_fn = ru.classifier_utils.file_based_input_fn_builder(
            input_file=predict_file, seq_length=flags.max_seq_length, is_training=False,
            drop_remainder=False, task_name="race", use_tpu=False,
            bsz=flags.predict_batch_size, multiple=4)
        result = estimator.evaluate(input_fn=input_fn, steps=None,
                                    checkpoint_path=os.path.join(output_dir, "model.ckpt-best"))
        with open(os.path.join(train_dir, "eval_results.txt")) as f:
            best_perf = best_of(f.read())
        lines = ["***** Predict results *****\n"]
        lines += ["%s = %s\n" % (key, str(result[key])) for key in sorted(result)]
        lines.append("best = {}\n".format(best_perf))
        with open(os.path.join(predict_dir, "predict_results.txt"), "w") as f:
            f.write("".join(lines))
        with open(os.path.join(predict_dir, "expected.json"), "w") as f:
            json.dump({"error": error, "output_dir": output_dir}, f, indent=1)
            f.write("\n")
        print("predict", error, "".join(lines))


class ScriptedEstimator(TPUEstimator):
    """An Estimator whose evaluate returns LOOP_RESULTS[checkpoint] (no model)."""

    def evaluate(self, input_fn, steps, checkpoint_path):
        del input_fn, steps
        step, accuracy, loss = LOOP_RESULTS[checkpoint_path.rsplit("-", 1)[1]]
        return {"eval_accuracy": np.float32(accuracy), "eval_loss": np.float32(loss),
                "loss": np.float32(loss), "global_step": np.int64(step)}


def run_loop(original_repo):
    """runs/loop (module docstring)."""
    rr = load_run_race(original_repo, ScriptedEstimator)
    out_dir = os.path.join(HERE, "runs", "loop")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with tempfile.TemporaryDirectory() as output_dir:
        for name in LOOP_RESULTS:
            for ext in LOOP_FILES:
                with open(os.path.join(output_dir, f"model.ckpt-{name}.{ext}"), "w") as f:
                    f.write(f"{name}.{ext}")
        argv = model_argv(output_dir) + ["--do_train=false", "--do_eval",
                                         f"--train_step={LOOP_TRAIN_STEP}",
                                         f"--max_seq_length={RUN['max_seq_length']}",
                                         f"--max_qa_length={RUN['max_qa_length']}"]
        rr.FLAGS(argv)
        rr.main(None)
        shutil.copy(os.path.join(output_dir, "eval_results.txt"),
                    os.path.join(out_dir, "eval_results.txt"))
        left = {name: open(os.path.join(output_dir, name)).read()
                for name in sorted(os.listdir(output_dir)) if name.startswith("model.ckpt")}
        with open(os.path.join(out_dir, "expected.json"), "w") as f:
            json.dump({"results": LOOP_RESULTS, "train_step": LOOP_TRAIN_STEP, "files": left,
                       "output_dir": output_dir}, f, indent=1)
            f.write("\n")
    print("loop", sorted(left))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--run", choices=["data", "train_eval", "loop"], default=None)
    args = parser.parse_args()
    if args.run == "loop":
        run_loop(args.original_repo)
        return
    if args.run == "train_eval":
        run_train_eval_predict(args.original_repo)
        return
    if args.run == "data":
        v1.disable_v2_tensorshape()
        v1.logging.set_verbosity(v1.logging.ERROR)
        ru = load_albert_module(args.original_repo, "race_utils")
        write_race()
        write_model(ru.modeling)
        record_examples_and_records(ru, ru.tokenization)
        return
    for run in ("data", "train_eval", "loop"):
        subprocess.run([sys.executable, os.path.abspath(__file__),
                        f"--original_repo={args.original_repo}", f"--run={run}"], check=True)
    print("wrote", HERE)


if __name__ == "__main__":
    main()
