"""Records what google-research/albert's run_squad_v2.py computes (tests/test_albert_squad_v2*.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_squad_v2/make_expected.py --original_repo=/tmp/orig_albert

The original's `squad_utils` (with `modeling`, `optimization`, `tokenization`,
`fine_tuning_utils`), loaded unmodified through `tools.original.load_albert_module`, does each
step as its run_squad_v2.py `main` does (its TPUEstimator is replaced by TF1 sessions over
the same model_fn and create_v2_model graphs):

  1. train.json / predict.json (written here): SQuAD 2.0 files in the words of
     tests/data/albert_spm/albert.model, with impossible questions, contexts of several windows,
     a question longer than --max_query_length and, in predict.json, a paragraph whose
     SentencePiece pieces fail the original's alignment (its question gets no window);
  2. train.tf_record: `read_squad_examples(train.json, is_training=True)`, the Random(12345)
     shuffle, `convert_examples_to_features` through `FeatureWriter` (FLAGS below);
     predict.tf_record and features.json (the predict features the post-processing reads:
     unique_id, example_index, tokens, tok_start/end_to_orig_index, token_is_max_context; and
     the examples' qas_id, paragraph_text);
  3. init.ckpt: the weights of the model of albert_config.json (tiny, dropout 0) and its
     SQuAD 2.0 head, from the original's initializers (graph seed SEED) with every bias,
     LayerNorm gamma and beta moved by N(0, 0.1);
  4. forward.npz, at init.ckpt: `create_v2_model(is_training=False)` on all predict records
     (start_top_log_probs, start_top_index, end_top_log_probs, end_top_index, cls_logits) and
     `create_v2_model(is_training=True)` on the first training batch (start_log_probs,
     end_log_probs, cls_logits), with the fed records;
  5. three optimizer steps of `v2_model_fn_builder`'s TRAIN graph (AdamW of
     `optimization.create_optimizer`, learning rate LEARNING_RATE over NUM_TRAIN_STEPS, no
     warmup: what main computes for train.json's 12 questions with --train_batch_size=4
     --num_train_epochs=1) on the training records in file order, 4 per batch, the learning
     rate fed with the value create_optimizer computes from global_step before the step (its
     unordered `global_step + 1`): expected.json `steps` (loss, learning rate),
     after_3_steps.npz (every variable: weights, adam_m, adam_v, global_step), `variables`
     (name, shape, dtype of every variable of that graph), `model_variables` (name, shape of
     the inference graph's);
  6. at the weights after the 3 steps, the inference graph on the predict records
     (results.npz: the RawResultV2 fields in record order), then `accumulate_predictions_v2`
     and `evaluate_v2` (the threshold chosen on predict.json's answers) as get_result does:
     original/{predictions,nbest_predictions,null_odds}.json and expected.json `eval`; and
     the same on the same results with --n_best_size=3 --max_answer_length=4:
     original_small/ and `eval_small`; and on the results made to hold the gold answers
     (`with_gold_answers`: results_answers.npz), original_answers/ and `eval_answers`;
  7. the original's prediction loop: its run_squad_v2 `main()` with --do_predict (and
     --train_file, for the last step the loop waits for) on an output_dir holding what its
     Estimator leaves after the 3 steps with --save_checkpoints_steps=3: model.ckpt-0 (the
     starting weights, saved when the training session starts) and model.ckpt-3, each with its
     .meta, saved from the session of 5 by a Saver as the Estimator's. Its TPUEstimator (absent
     from TF 2.21) is `PredictingEstimator`: model_fn's PREDICT graph on input_fn's batches
     with the checkpoint's weights restored. original_loop/: the eval_results.txt it writes and
     the prediction files it leaves (model.ckpt-best's); expected.json `loop`: its
     output_dir (the paths in eval_results.txt), flags and the checkpoint files left.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import types
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import RunConfig, load_albert_module  # noqa: E402

v1 = tf.compat.v1

SPM_MODEL = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
SEED = 4321
CONFIG = dict(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=2,
              num_hidden_groups=1, inner_group_num=1, num_attention_heads=2,
              intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, max_position_embeddings=64, type_vocab_size=2,
              initializer_range=0.1)
FLAGS = dict(max_seq_length=64, doc_stride=16, max_query_length=16, do_lower_case=True,
             start_n_top=5, end_n_top=5, n_best_size=20, max_answer_length=30,
             train_batch_size=4, num_train_epochs=1.0, warmup_proportion=0.1,
             learning_rate=1e-3, dropout_prob=0.0)
SMALL = dict(n_best_size=3, max_answer_length=4)
STEPS = 3
# The prediction loop's run (7): a checkpoint when training starts and every 3 steps.
LOOP_FLAGS = dict(save_checkpoints_steps=STEPS, predict_batch_size=8)

P_RAIN = ("The rain had only ceased with the gray streaks of morning at Blazing Star, and the "
          "settlement awoke to a moral sense of cleanliness, and the finding of forgotten knives, "
          "tin cups, and smaller camp utensils. Indeed, it was recorded in Blazing Star that a "
          "fortunate early riser had once picked up on the highway a solid chunk of gold quartz "
          "which the rain had freed from its incumbering soil.")
P_CASS = ("\"Cass\" Beard had risen early that morning, but not with a view to discovery. A leak "
          "in his cabin roof had roused him at 4 A. M., with a flooded \"bunk\" and wet "
          "blankets. The chips from his wood pile refused to kindle a fire to dry his "
          "bed-clothes.")
P_SAGE = ("The fountain of classic wisdom, Hypatia herself. From my youth I felt in me a soul "
          "above the matter-entangled herd. She revealed to me the glorious fact, that I am a "
          "spark of Divinity itself. Perhaps you will assist me by carrying this basket of "
          "fruit? And the little man jumped up, put his basket on Philammon's head, and trotted "
          "off up a neighbouring street.")
P_RING = ("Something glittered in the nearest red pool before him. Gold, surely! But, wonderful "
          "to relate, not an irregular, shapeless fragment of crude ore, but a bit of jeweler's "
          "handicraft in the form of a plain gold ring. Looking at it more attentively, he saw "
          "that it bore the inscription, \"May to Cass.\"")
# Whitespace runs the pieces do not keep: under 80% of the characters align, and the original
# drops the example ("MISMATCH DETECTED!").
P_SPACED = "gold" + " " * 30 + "ring" + " " * 30 + "star"

TRAIN = [
    (P_RAIN, [("What had ceased?", "The rain"),
              ("Where was the chunk of gold picked up?", "on the highway"),
              ("Who owned the cabin?", None),
              ("What did the rain free from its incumbering soil?",
               "a solid chunk of gold quartz")]),
    (P_CASS, [("Who had risen early that morning?", "\"Cass\" Beard"),
              ("When was he roused?", "at 4 A. M."),
              ("What did the neighbor say to Cass about the rain and the roof?", None),
              ("What refused to kindle a fire?", "The chips from his wood pile")]),
    (P_SAGE, [("Who is the fountain of classic wisdom?", "Hypatia"),
              ("When was the lecture?", None),
              ("What am I a spark of?", "Divinity"),
              ("What was put on Philammon's head?", "his basket")]),
]
PREDICT = [
    (P_RAIN, [("What did the settlement awake to?",
               ["a moral sense of cleanliness", "moral sense"]),
              ("What was found on the highway?", ["a solid chunk of gold quartz"]),
              ("Who was the sheriff of Blazing Star?", [])]),
    (P_RING, [("What glittered in the pool?", ["Something"]),
              ("What was the inscription on the plain gold ring that he found?",
               ["\"May to Cass.\"", "May to Cass"]),
              ("Who made the ring?", []),
              ("What was the ring made of?", ["gold"])]),
    (P_SAGE, [("Who trotted off up a neighbouring street?", ["the little man"]),
              ("Why did the sage study by day?", [])]),
    (P_SPACED, [("What is between gold and star?", ["ring"])]),
]


def squad_json(paragraphs, is_training):
    """A SQuAD 2.0 file of `paragraphs` [(context, questions)]; ids q0, q1, ... in order."""
    data, counter = [], 0
    for number, (context, questions) in enumerate(paragraphs):
        qas = []
        for question, answers in questions:
            qid = f"{'t' if is_training else 'p'}{counter}"
            counter += 1
            if is_training:
                answers = [] if answers is None else [answers]
            spans = []
            for text in answers:
                start = context.index(text)
                spans.append({"text": text, "answer_start": start})
            qas.append({"id": qid, "question": question, "answers": spans,
                        "is_impossible": not answers})
        data.append({"title": f"doc{number}", "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "v2.0", "data": data}


class Original:
    """The original's run_squad_v2 (`rs`), its squad_utils (`su`) and the graphs of its
    model_fn / create_v2_model."""

    def __init__(self, repo):
        self.rs = load_albert_module(repo, "run_squad_v2")
        self.su = self.rs.squad_utils
        # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
        self.su.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
        config_file = os.path.join(HERE, "albert_config.json")
        with open(config_file, "w") as f:
            json.dump(CONFIG, f, indent=2, sort_keys=True)
            f.write("\n")
        self.config = self.su.modeling.AlbertConfig.from_json_file(config_file)
        self.tokenizer = self.su.fine_tuning_utils.create_vocab(
            vocab_file=None, do_lower_case=FLAGS["do_lower_case"], spm_model_file=SPM_MODEL,
            hub_module=None)

    def convert(self, examples, is_training, output_fn):
        self.su.convert_examples_to_features(
            examples=examples, tokenizer=self.tokenizer,
            max_seq_length=FLAGS["max_seq_length"], doc_stride=FLAGS["doc_stride"],
            max_query_length=FLAGS["max_query_length"], is_training=is_training,
            output_fn=output_fn, do_lower_case=FLAGS["do_lower_case"])

    def placeholders(self, is_training):
        names = ["unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask"]
        if is_training:
            names += ["start_positions", "end_positions", "is_impossible"]
        return {name: v1.placeholder(tf.int32, [None, FLAGS["max_seq_length"]]
                                     if name in ("input_ids", "input_mask", "segment_ids",
                                                 "p_mask") else [None], name=name)
                for name in names}

    def model_graph(self, is_training):
        """(graph, placeholders, outputs of create_v2_model)."""
        graph = tf.Graph()
        with graph.as_default():
            ph = self.placeholders(is_training)
            outputs = self.su.create_v2_model(
                albert_config=self.config, is_training=is_training, input_ids=ph["input_ids"],
                input_mask=ph["input_mask"], segment_ids=ph["segment_ids"],
                use_one_hot_embeddings=False, features=ph,
                max_seq_length=FLAGS["max_seq_length"], start_n_top=FLAGS["start_n_top"],
                end_n_top=FLAGS["end_n_top"], dropout_prob=FLAGS["dropout_prob"],
                hub_module=None)
        return graph, ph, outputs

    def run_model(self, is_training, checkpoint, batch):
        graph, ph, outputs = self.model_graph(is_training)
        with graph.as_default(), v1.Session(graph=graph) as session:
            v1.train.Saver(v1.global_variables()).restore(session, checkpoint)
            values = session.run(outputs, {ph[k]: v for k, v in batch.items() if k in ph})
            variables = [[v.op.name, v.shape.as_list()] for v in v1.global_variables()]
        return values, variables


def train_graph(original):
    """The TRAIN graph of v2_model_fn_builder: (graph, placeholders, spec, learning rate)."""
    su = original.su
    captured = {}
    init = su.optimization.AdamWeightDecayOptimizer.__init__

    def recording(opt, learning_rate, **kwargs):
        captured["learning_rate"] = learning_rate
        init(opt, learning_rate, **kwargs)

    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(SEED)
        ph = original.placeholders(is_training=True)
        model_fn = su.v2_model_fn_builder(
            albert_config=original.config, init_checkpoint=None,
            learning_rate=FLAGS["learning_rate"], num_train_steps=num_train_steps(),
            num_warmup_steps=int(num_train_steps() * FLAGS["warmup_proportion"]),
            use_tpu=False, use_one_hot_embeddings=False,
            max_seq_length=FLAGS["max_seq_length"], start_n_top=FLAGS["start_n_top"],
            end_n_top=FLAGS["end_n_top"], dropout_prob=FLAGS["dropout_prob"], hub_module=None)
        su.optimization.AdamWeightDecayOptimizer.__init__ = recording
        try:
            spec = model_fn(ph, None, "train", {})
        finally:
            su.optimization.AdamWeightDecayOptimizer.__init__ = init
    return graph, ph, spec, captured["learning_rate"]


def num_train_steps():
    questions = sum(len(q) for _, q in TRAIN)
    return int(questions / FLAGS["train_batch_size"] * FLAGS["num_train_epochs"])


def read_records(path, is_training):
    names = {"unique_ids": [], "input_ids": [FLAGS["max_seq_length"]],
             "input_mask": [FLAGS["max_seq_length"]], "segment_ids": [FLAGS["max_seq_length"]],
             "p_mask": [FLAGS["max_seq_length"]]}
    if is_training:
        names.update(start_positions=[], end_positions=[], is_impossible=[])
    spec = {k: tf.io.FixedLenFeature(shape, tf.int64) for k, shape in names.items()}
    (batch,) = tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(100000)
    return {k: v.numpy().astype(np.int32) for k, v in batch.items()}


def write_features(examples, features, path):
    out = {
        "examples": [{"qas_id": e.qas_id, "question_text": e.question_text,
                      "paragraph_text": e.paragraph_text} for e in examples],
        "features": [{"unique_id": f.unique_id, "example_index": f.example_index,
                      "doc_span_index": f.doc_span_index, "tokens": f.tokens,
                      "tok_start_to_orig_index": f.tok_start_to_orig_index,
                      "tok_end_to_orig_index": f.tok_end_to_orig_index,
                      "token_is_max_context": {str(k): v for k, v in
                                               f.token_is_max_context.items()}}
                     for f in features],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")


def raw_results(su, records, outputs):
    """The RawResultV2 of each record, as run_squad_v2's get_result makes them."""
    results = []
    for i, unique_id in enumerate(records["unique_ids"]):
        results.append(su.RawResultV2(
            unique_id=int(unique_id),
            start_top_log_probs=[float(x) for x in outputs["start_top_log_probs"][i].flat],
            start_top_index=[int(x) for x in outputs["start_top_index"][i].flat],
            end_top_log_probs=[float(x) for x in outputs["end_top_log_probs"][i].flat],
            end_top_index=[int(x) for x in outputs["end_top_index"][i].flat],
            cls_logits=float(outputs["cls_logits"][i].flat[0])))
    return results


def with_gold_answers(examples, features, prediction_json, outputs):
    """`outputs` (the trained model's) where a model would have learned something, so that
    the threshold search has answers to weigh: in each window holding the first gold answer
    of its question, beam (0, 0) is that answer's pieces with log-probs -0.1, and beam (1, 0)
    the same span again (the original averages a span found twice); every window's cls_logits
    is drawn from N(0, 1)."""
    answers = {}
    for article in prediction_json:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["answers"]:
                    answer = qa["answers"][0]
                    answers[qa["id"]] = (answer["answer_start"],
                                         answer["answer_start"] + len(answer["text"]) - 1)
    out = {k: np.array(v) for k, v in outputs.items()}
    rng = np.random.default_rng(SEED)
    out["cls_logits"] = rng.normal(0, 1, out["cls_logits"].shape).astype(np.float32)
    for row, feature in enumerate(features):
        span = answers.get(examples[feature.example_index].qas_id)
        if span is None:
            continue
        starts, ends = feature.tok_start_to_orig_index, feature.tok_end_to_orig_index
        first = [i for i in range(len(starts)) if ends[i] >= span[0]]
        last = [i for i in range(len(starts)) if starts[i] <= span[1]]
        if not first or not last or first[0] > last[-1] or starts[first[0]] > span[1]:
            continue
        offset = feature.tokens.index("[SEP]") + 1
        start, end = first[0] + offset, last[-1] + offset
        end_n_top = FLAGS["end_n_top"]
        for beam in (0, 1):
            out["start_top_index"][row, beam] = start
            out["start_top_log_probs"][row, beam] = -0.1
            out["end_top_index"][row, beam * end_n_top] = end
            out["end_top_log_probs"][row, beam * end_n_top] = -0.1
    return out


def postprocess(su, examples, features, results, prediction_json, out_dir, n_best_size,
                max_answer_length):
    os.makedirs(out_dir, exist_ok=True)
    result_dict, cls_dict = {}, {}
    su.accumulate_predictions_v2(result_dict, cls_dict, examples, features, results,
                                 n_best_size, max_answer_length, FLAGS["start_n_top"],
                                 FLAGS["end_n_top"])
    return su.evaluate_v2(
        result_dict, cls_dict, prediction_json, examples, features, results, n_best_size,
        max_answer_length, os.path.join(out_dir, "predictions.json"),
        os.path.join(out_dir, "nbest_predictions.json"), os.path.join(out_dir, "null_odds.json"))


class PredictingEstimator:
    """TPUEstimator(use_tpu=False) as run_squad_v2's main() uses it with --do_predict alone:
    `predict` builds model_fn's PREDICT graph on input_fn's batches, restores the checkpoint
    given (all the graph's variables, as the Estimator's Saver) and yields each example's
    predictions."""

    def __init__(self, use_tpu, model_fn, config, train_batch_size, predict_batch_size):
        assert not use_tpu
        del config, train_batch_size
        self.model_fn, self.params = model_fn, {"batch_size": predict_batch_size}

    def predict(self, input_fn, yield_single_examples, checkpoint_path):
        assert yield_single_examples
        graph = tf.Graph()
        with graph.as_default():
            v1.train.get_or_create_global_step()
            features = v1.data.make_one_shot_iterator(input_fn(self.params)).get_next()
            predictions = self.model_fn(features, None, "infer", self.params)["predictions"]
            saver = v1.train.Saver()
            with v1.Session(graph=graph) as session:
                saver.restore(session, checkpoint_path)
                while True:
                    try:
                        batch = session.run(predictions)
                    except tf.errors.OutOfRangeError:
                        return
                    for i in range(len(batch["unique_ids"])):
                        yield {key: value[i] for key, value in batch.items()}


def prediction_loop(original, output_dir):
    """7 (module docstring): the original's main() --do_predict on `output_dir`; writes
    original_loop/ and returns expected.json's `loop`."""
    rs = original.rs
    tpu = rs.contrib_tpu
    assert tpu is original.su.contrib_tpu  # one stand-in module: TPUEstimatorSpec is set
    tpu.RunConfig = RunConfig
    tpu.TPUConfig = lambda **kwargs: kwargs
    tpu.InputPipelineConfig = types.SimpleNamespace(PER_HOST_V2=2)
    tpu.TPUEstimator = PredictingEstimator
    rs.FLAGS([
        "run_squad_v2", f"--albert_config_file={os.path.join(HERE, 'albert_config.json')}",
        f"--spm_model_file={SPM_MODEL}", f"--output_dir={output_dir}",
        f"--init_checkpoint={os.path.join(HERE, 'init.ckpt')}",
        f"--train_file={os.path.join(HERE, 'train.json')}", "--do_predict",
        f"--predict_file={os.path.join(HERE, 'predict.json')}",
        f"--predict_feature_file={os.path.join(output_dir, 'predict.tf_record')}",
        f"--predict_feature_left_file={os.path.join(output_dir, 'predict_left.pkl')}",
        *(f"--{k}={v}" for k, v in {**FLAGS, **LOOP_FLAGS}.items())])
    # What `python -m albert.run_squad_v2` has, for its pickle of the features: the package
    # albert and its squad_utils.
    package = types.ModuleType("albert")
    package.squad_utils = original.su
    with mock.patch.dict(sys.modules, {"albert": package, "albert.squad_utils": original.su}):
        rs.main(None)
    v1.logging.set_verbosity(v1.logging.ERROR)
    out_dir = os.path.join(HERE, "original_loop")
    os.makedirs(out_dir, exist_ok=True)
    for name in ("eval_results.txt", "predictions.json", "nbest_predictions.json",
                 "null_odds.json"):
        shutil.copy(os.path.join(output_dir, name), os.path.join(out_dir, name))
    return {"output_dir": output_dir, "flags": LOOP_FLAGS,
            "files": sorted(name for name in os.listdir(output_dir)
                            if name.startswith("model.ckpt"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    v1.logging.set_verbosity(v1.logging.ERROR)
    original = Original(args.original_repo)
    su = original.su
    expected = {"flags": FLAGS, "num_train_steps": num_train_steps()}

    # 1-2: the files and the features.
    for name, paragraphs, is_training in (("train.json", TRAIN, True),
                                          ("predict.json", PREDICT, False)):
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            json.dump(squad_json(paragraphs, is_training), f, indent=1)
            f.write("\n")
    train_examples = su.read_squad_examples(os.path.join(HERE, "train.json"), is_training=True)
    random.Random(12345).shuffle(train_examples)
    writer = su.FeatureWriter(os.path.join(HERE, "train.tf_record"), is_training=True)
    original.convert(train_examples, True, writer.process_feature)
    writer.close()
    predict_examples = su.read_squad_examples(os.path.join(HERE, "predict.json"),
                                              is_training=False)
    predict_features = []
    writer = su.FeatureWriter(os.path.join(HERE, "predict.tf_record"), is_training=False)

    def keep(feature):
        predict_features.append(feature)
        writer.process_feature(feature)

    original.convert(predict_examples, False, keep)
    writer.close()
    write_features(predict_examples, predict_features, os.path.join(HERE, "features.json"))
    train_records = read_records(os.path.join(HERE, "train.tf_record"), True)
    predict_records = read_records(os.path.join(HERE, "predict.tf_record"), False)
    expected["counts"] = {"train_features": int(len(train_records["unique_ids"])),
                          "predict_features": len(predict_features),
                          "predict_examples": len(predict_examples)}

    # 3, 5: initial weights and three steps.
    graph, ph, spec, learning_rate = train_graph(original)
    batch_size = FLAGS["train_batch_size"]
    batches = [{k: v[batch_size * t:batch_size * (t + 1)] for k, v in train_records.items()}
               for t in range(STEPS)]
    init_prefix = os.path.join(HERE, "init.ckpt")
    with graph.as_default(), v1.Session(graph=graph) as session:
        session.run(v1.global_variables_initializer())
        rng = np.random.default_rng(SEED)
        trainable = v1.trainable_variables()
        for var in trainable:
            if var.op.name.endswith(("gamma", "beta", "bias")):
                value = session.run(var)
                session.run(var.assign(value + rng.normal(0, 0.1, value.shape).astype(np.float32)))
        v1.train.Saver({v.op.name: v for v in trainable}).save(
            session, init_prefix, write_meta_graph=False, write_state=False)
        global_step = v1.train.get_or_create_global_step()
        # 7's checkpoints, as the Estimator's CheckpointSaverHook writes them.
        loop_dir = tempfile.mkdtemp()
        estimator_saver = v1.train.Saver(max_to_keep=None, sharded=True,
                                         save_relative_paths=True)
        estimator_saver.save(session, os.path.join(loop_dir, "model.ckpt"), global_step=0)
        steps = []
        for batch in batches:
            step, rate = session.run((global_step, learning_rate))
            feed = {ph[k]: v for k, v in batch.items()}
            feed[learning_rate] = rate
            _, loss = session.run((spec["train_op"], spec["loss"]), feed)
            steps.append({"step": int(step), "learning_rate": float(rate), "loss": float(loss)})
        variables = v1.global_variables()
        after = session.run({v.op.name: v for v in variables})
        expected["steps"] = steps
        expected["variables"] = [{"name": v.op.name, "shape": v.shape.as_list(),
                                  "dtype": v.dtype.base_dtype.name} for v in variables]
        estimator_saver.save(session, os.path.join(loop_dir, "model.ckpt"),
                             global_step=STEPS)
        temp = tempfile.mkdtemp()
        trained_prefix = os.path.join(temp, "trained.ckpt")
        v1.train.Saver([v for v in variables if v in trainable]).save(
            session, trained_prefix, write_meta_graph=False, write_state=False)
    np.savez_compressed(os.path.join(HERE, "after_3_steps.npz"),
                        **{k: np.asarray(v) for k, v in after.items()})

    # 4: the forward passes at init.ckpt.
    inference, model_variables = original.run_model(False, init_prefix, predict_records)
    training, _ = original.run_model(True, init_prefix, batches[0])
    expected["model_variables"] = model_variables
    np.savez_compressed(
        os.path.join(HERE, "forward.npz"),
        **{f"predict_{k}": v for k, v in predict_records.items()},
        **{f"train_{k}": v for k, v in batches[0].items()},
        **{f"inference_{k}": v for k, v in inference.items()},
        **{f"training_{k}": v for k, v in training.items()})

    # 6: predictions at the trained weights.
    trained, _ = original.run_model(False, trained_prefix, predict_records)
    shutil.rmtree(temp)
    np.savez_compressed(os.path.join(HERE, "results.npz"),
                        unique_ids=predict_records["unique_ids"], **trained)
    results = raw_results(su, predict_records, trained)
    with open(os.path.join(HERE, "predict.json")) as f:
        prediction_json = json.load(f)["data"]
    expected["eval"] = postprocess(su, predict_examples, predict_features, results,
                                   prediction_json, os.path.join(HERE, "original"),
                                   FLAGS["n_best_size"], FLAGS["max_answer_length"])
    expected["eval_small"] = postprocess(su, predict_examples, predict_features, results,
                                         prediction_json, os.path.join(HERE, "original_small"),
                                         **SMALL)
    expected["small"] = SMALL
    answers = with_gold_answers(predict_examples, predict_features, prediction_json, trained)
    np.savez_compressed(os.path.join(HERE, "results_answers.npz"),
                        unique_ids=predict_records["unique_ids"], **answers)
    expected["eval_answers"] = postprocess(
        su, predict_examples, predict_features, raw_results(su, predict_records, answers),
        prediction_json, os.path.join(HERE, "original_answers"), FLAGS["n_best_size"],
        FLAGS["max_answer_length"])

    # 7: the original's prediction loop over model.ckpt-0 and model.ckpt-3.
    expected["loop"] = prediction_loop(original, loop_dir)
    shutil.rmtree(loop_dir)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(json.dumps({k: expected[k] for k in ("counts", "steps", "eval", "eval_small", "loop")},
                     indent=1))


if __name__ == "__main__":
    main()
