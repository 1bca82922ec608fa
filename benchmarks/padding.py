"""Dynamic padding on real length distributions: ours against the original, in one run.

    python3 benchmarks/padding.py --original_repo=/tmp/orig_bert          # BERT-Base, ~1 hour
    python3 benchmarks/padding.py --original_repo=/tmp/orig_bert --layers=2 --steps=8 \
        --predict_examples=256 --extract_lines=64 --serve_seconds=3           # minutes

Data: lengths drawn (seeded) from the WordPiece length histograms of ../shared/lengths.json —
GLUE MRPC train pairs for the classifier, CoNLL-2003 train sentences for tagging, SQuAD 2.0 dev
question+context windows for SQuAD (capped at max_seq_length, as its windows are) — and text of
those lengths made of words that are one piece each in the uncased vocab of ../shared/data, so
tokenizing it gives the histogram's lengths. Records are written in the original's fixed-length
format. The model is BERT-Base-shaped (H=768, A=12, I=3072, the real vocab; --layers L, default
12) with random weights, float32.

Rows, each the same examples for every implementation, timed end to end (the sum over batches,
not a median step; the machine's load falls on all rows of a table alike only if it is steady):

  training      --steps optimizer steps of batch 32 at seq 128 (classifier, tagging) and of
                batch 8 at seq 384 (SQuAD), through the Trainer's input stream and train step:
                ours default (dynamic padding), --group_by_length, --dynamic_padding=false; the
                original's graph (run_classifier.create_model / run_squad.create_model + its
                loss, modeling.BertModel + a token softmax for tagging; create_optimizer) fed
                the same padded batches; KerasHub's BertClassifier (same sizes, fit on the
                same padded batches) when keras_hub is importable.
  prediction    --predict_examples examples at batch 32 (SQuAD 8): one Trainer.predict pass
                (records in length order, batches cut, outputs in input order) default and
                --dynamic_padding=false (SQuAD: its default keeps max_seq_length, for the
                original's n-best; --predict_dynamic_padding cuts), against the original's
                forward graph on padded batches; both timed cold (tracing / the first
                session.run and each new shape's kernels included), the model built before. Model outputs only: SQuAD's
                post-processing is timed by benchmarks/squad.py.
  extract_features  --extract_lines MRPC-like lines through extract_features (ours default,
                --dynamic_padding=false, the original's main), each in its own process,
                from reading the input to the closed output (benchmarks/extract_features.py).
  export        the classifier SavedModel (strings in, labels out): batch-1 latency on a
                12-piece sentence and batch-32 throughput on MRPC-like pairs, exported with
                and without --dynamic_padding; the baseline is the original's forward graph
                on the same requests already tokenized and padded to 128 (it has no export).

The speed-up column is the original's seconds over the row's. Goals (issue 19): training
>= 1.4x at the default, >= 2x with --group_by_length; prediction and extract_features >= 2x;
SQuAD prediction >= 3x; export batch-1 latency >= 5x.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import (  # noqa: E402
    BERT_BASE, REPO, SHARED, SQUAD_QUERY_LENGTH, OnePieceText, batches_of, call_timings,
    cut_positions, machine_header, original_session, print_table, sample_lengths,
    session_steps, speed_up, timed, trainer_prediction, trainer_steps)

import numpy as np  # noqa: E402

VOCAB_FILE = os.path.join(SHARED, "data", "uncased_vocab.txt")
LEARNING_RATE = 5e-5
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
# task -> (lengths.json set, max_seq_length, train batch, predict batch)
TASKS = {
    "classifier": ("glue_mrpc_train", 128, 32, 32),
    "tagging": ("conll2003_train_sentences", 128, 32, 32),
    "squad": ("squad_v2_dev_5_articles", 384, 8, 8),
}
PARTS = ("training", "prediction", "extract_features", "export")


# --- data -----------------------------------------------------------------------------------------

class Words(OnePieceText):
    """Words of the uncased vocab that are one word piece each (letters only)."""

    def __init__(self):
        from bert_tf.bert.tokenization import FullTokenizer

        self.tokenizer = FullTokenizer(VOCAB_FILE, do_lower_case=True)
        super().__init__([w for w in self.tokenizer.vocab
                          if w.isalpha() and w.isascii() and len(w) > 1
                          and self.tokenizer.tokenize(w) == [w]][:20000])


def _record(features):
    import tensorflow as tf

    def feature(value):
        value = np.atleast_1d(value)
        if value.dtype.kind == "f":
            return tf.train.Feature(float_list=tf.train.FloatList(value=value.tolist()))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value.tolist()))

    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in features.items()})).SerializeToString()


def make_records(task, lengths, max_seq_length, vocab_size, seed):
    """Numpy features of every example (the original's fixed-length layout) for `task`."""
    rng = np.random.RandomState(seed)
    n, s = len(lengths), max_seq_length
    positions = np.arange(s)[None, :]
    mask = (positions < lengths[:, None]).astype(np.int64)
    ids = rng.randint(1000, vocab_size, (n, s)) * mask
    ids[:, 0] = 101
    ids[np.arange(n), lengths - 1] = 102
    features = {"input_ids": ids, "input_mask": mask}
    if task == "classifier":
        first = np.maximum(lengths // 2, 2)
        features["segment_ids"] = ((positions >= first[:, None]) & (mask > 0)).astype(np.int64)
        features["label_ids"] = rng.randint(0, 2, n)
        features["is_real_example"] = np.ones(n, np.int64)
    elif task == "tagging":
        features["segment_ids"] = np.zeros((n, s), np.int64)
        features["label_ids"] = rng.randint(0, len(TAGS), (n, s)) * mask
        features["word_ids"] = np.where(mask > 0, positions - 1, -1)
        features["label_weights"] = mask.astype(np.float32)
        features["label_weights"][:, 0] = 0
        features["label_weights"][np.arange(n), lengths - 1] = 0
        features["sentence_index"] = np.arange(n)
        features["window_index"] = np.zeros(n, np.int64)
    else:
        query = SQUAD_QUERY_LENGTH + 2
        features["segment_ids"] = ((positions >= query) & (mask > 0)).astype(np.int64)
        features["unique_ids"] = 1000000000 + np.arange(n)
        start = np.minimum(query + rng.randint(0, 20, n), lengths - 2)
        features["start_positions"] = start
        features["end_positions"] = np.minimum(start + rng.randint(0, 5, n), lengths - 2)
        features["is_impossible"] = np.zeros(n, np.int64)
    return features


def write_records(path, features):
    import tensorflow as tf

    count = len(features["input_ids"])
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(count):
            writer.write(_record({k: v[i] for k, v in features.items()}))
    return path


# --- ours -----------------------------------------------------------------------------------------

def our_task(task, max_seq_length, predict_dynamic_padding=False):
    from bert_tf.tasks.classification import ClassificationTask
    from bert_tf.tasks.squad import SquadTask
    from bert_tf.tasks.tagging import TaggingTask

    if task == "classifier":
        return ClassificationTask("bench", ["0", "1"], max_seq_length)
    if task == "tagging":
        return TaggingTask(TAGS, max_seq_length)
    return SquadTask(max_seq_length, predict_dynamic_padding=predict_dynamic_padding)


def our_trainer(config, task, max_seq_length, batch_size, predict_dynamic_padding=False,
                **options):
    from bert_tf.training.trainer import Trainer, TrainerOptions

    task = our_task(task, max_seq_length, predict_dynamic_padding)
    return Trainer(config, task, TrainerOptions(
        output_dir="/nonexistent", train_batch_size=batch_size, eval_batch_size=batch_size,
        num_train_steps=10**6, num_warmup_steps=100, learning_rate=LEARNING_RATE,
        shuffle_buffer_size=0, **options))


def time_our_training(config, task, record_file, max_seq_length, batch_size, steps, **options):
    """Seconds of `steps` training steps (input stream + train step) on `record_file`, which
    holds `steps` batches: a first pass traces each shape and builds its kernels, the second,
    timed, runs the same batches again (in file order: no shuffle)."""
    trainer = our_trainer(config, task, max_seq_length, batch_size, **options)
    step = trainer_steps(trainer, record_file, batch_size, steps)
    return timed(lambda: [step() for _ in range(steps)])[1].wall


def time_our_prediction(config, task, record_file, max_seq_length, batch_size, **options):
    """Seconds of one Trainer.predict pass over `record_file` (the model built before), its
    tracing and the kernels of each new shape included, as in a run of the script."""
    trainer = our_trainer(config, task, max_seq_length, batch_size, **options)
    count, timing = trainer_prediction(trainer, record_file, batch_size)
    return timing.wall, count


# --- the original ---------------------------------------------------------------------------------

_ORIGINAL_MODULES = {}


def original_graph(repo, task, config_dict, batch_size, max_seq_length, is_training):
    """(session, placeholders, fetch) of the original's graph for `task`: the training op and
    loss, or the forward outputs."""
    import tensorflow as tf

    from tools.original import load_original_module

    name = "run_squad" if task == "squad" else "run_classifier"
    if name not in _ORIGINAL_MODULES:
        from absl import flags

        before = set(flags.FLAGS)
        _ORIGINAL_MODULES[name] = load_original_module(repo, name)
        for flag in set(flags.FLAGS) - before:  # both scripts define --bert_config_file, ...
            delattr(flags.FLAGS, flag)
    module = _ORIGINAL_MODULES[name]
    modeling, optimization = module.modeling, module.optimization
    tf1 = tf.compat.v1

    def build():
        shape = [batch_size, max_seq_length]
        names = ["input_ids", "input_mask", "segment_ids"]
        if task == "classifier":
            names.append("label_ids")
        elif task == "tagging":
            names += ["label_ids", "label_weights"]
        elif is_training:
            names += ["start_positions", "end_positions"]
        spec = {"input_ids": (tf.int32, shape), "input_mask": (tf.int32, shape),
                "segment_ids": (tf.int32, shape), "label_weights": (tf.float32, shape),
                "label_ids": (tf.int32, shape if task == "tagging" else [batch_size]),
                "start_positions": (tf.int32, [batch_size]),
                "end_positions": (tf.int32, [batch_size])}
        inputs = {n: tf1.placeholder(spec[n][0], spec[n][1], name=n) for n in names}
        config = modeling.BertConfig.from_dict(config_dict)
        if task == "classifier":
            loss, _, _, probabilities = module.create_model(
                config, is_training, inputs["input_ids"], inputs["input_mask"],
                inputs["segment_ids"], inputs["label_ids"], 2, False)
            outputs = probabilities
        elif task == "squad":
            start_logits, end_logits = module.create_model(
                config, is_training, inputs["input_ids"], inputs["input_mask"],
                inputs["segment_ids"], False)
            outputs = [start_logits, end_logits]
            if is_training:
                def position_loss(logits, positions):
                    one_hot = tf1.one_hot(positions, depth=max_seq_length)
                    log_probs = tf1.nn.log_softmax(logits, axis=-1)
                    return -tf1.reduce_mean(tf1.reduce_sum(one_hot * log_probs, axis=-1))

                loss = (position_loss(start_logits, inputs["start_positions"])
                        + position_loss(end_logits, inputs["end_positions"])) / 2.0
        else:  # tagging: the original has no script; its encoder and a token softmax
            model = modeling.BertModel(config, is_training, inputs["input_ids"],
                                       inputs["input_mask"], inputs["segment_ids"])
            hidden = model.get_sequence_output()
            if is_training:
                hidden = tf1.nn.dropout(hidden, keep_prob=0.9)
            weights = tf1.get_variable(
                "output_weights", [len(TAGS), config.hidden_size],
                initializer=tf1.truncated_normal_initializer(stddev=0.02))
            bias = tf1.get_variable("output_bias", [len(TAGS)],
                                    initializer=tf1.zeros_initializer())
            logits = tf1.einsum("bsh,ch->bsc", hidden, weights) + bias
            outputs = logits
            if is_training:
                log_probs = tf1.nn.log_softmax(logits, axis=-1)
                one_hot = tf1.one_hot(inputs["label_ids"], depth=len(TAGS))
                per_token = -tf1.reduce_sum(one_hot * log_probs, axis=-1)
                weights = inputs["label_weights"]
                loss = tf1.reduce_sum(per_token * weights) / tf1.maximum(
                    tf1.reduce_sum(weights), 1.0)
        fetch = ([optimization.create_optimizer(loss, LEARNING_RATE, 10**6, 100, False),
                  loss] if is_training else outputs)
        return inputs, fetch

    session, (inputs, fetch) = original_session(build)
    return session, inputs, fetch


def time_original(repo, task, config_dict, batches, max_seq_length, is_training):
    """Seconds of the original's graph over `batches` (each padded to max_seq_length), the
    graph built before: training after one untimed step (as ours, whose first pass traces),
    prediction from its first batch on (as ours, timed with its tracing)."""
    session, inputs, fetch = original_graph(repo, task, config_dict, len(
        batches[0]["input_ids"]), max_seq_length, is_training)
    step = session_steps(session, inputs, fetch, batches, warmup_steps=int(is_training))
    _, timing = timed(lambda: [step() for _ in batches])
    session.close()
    return timing.wall


def time_keras_hub(config_dict, batches, max_seq_length):
    """Seconds of KerasHub's BertClassifier training on `batches` (padded), or None."""
    try:
        import keras
        import keras_hub
    except ImportError:
        return None
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config_dict["vocab_size"], num_layers=config_dict["num_hidden_layers"],
        num_heads=config_dict["num_attention_heads"], hidden_dim=config_dict["hidden_size"],
        intermediate_dim=config_dict["intermediate_size"], max_sequence_length=512)
    classifier = keras_hub.models.BertClassifier(backbone, num_classes=2, preprocessor=None)
    classifier.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def step(batch):
        x = {"token_ids": batch["input_ids"], "padding_mask": batch["input_mask"],
             "segment_ids": batch["segment_ids"]}
        classifier.train_on_batch(x, batch["label_ids"])

    step(batches[0])
    return timed(lambda: [step(batch) for batch in batches])[1].wall


# --- extract_features and the export --------------------------------------------------------------

def extract_features_rows(args, words, config_file, checkpoint):
    """[(name, seconds)] of extract_features on MRPC-like lines, each side in its own process
    (benchmarks/extract_features.py's runner)."""
    rng = random.Random(3)
    lengths = sample_lengths("glue_mrpc_train", args.extract_lines, 128, seed=3)
    input_file = os.path.join(args.work_dir, "extract_lines.txt")
    with open(input_file, "w", encoding="utf-8") as f:
        for length in lengths:
            a, b = words.pair(rng, int(length))
            f.write(f"{a} ||| {b}\n")
    rows = []
    runs = [("ours (default)", "ours", {}), ("ours --dynamic_padding=false", "ours",
                                             {"dynamic_padding": False})]
    if args.original_repo:
        runs.append(("original", "original", {}))
    for name, side, extra in runs:
        flags = dict(input_file=input_file, output_file=os.path.join(args.work_dir,
                                                                    f"extract_{side}.jsonl"),
                     vocab_file=VOCAB_FILE, bert_config_file=config_file,
                     init_checkpoint=checkpoint, max_seq_length=128,
                     layers=",".join(str(-i) for i in range(1, min(4, args.layers) + 1)),
                     batch_size=32, do_lower_case=True, **extra)
        env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}
        command = [sys.executable, os.path.join(HERE, "extract_features.py"), f"--side={side}",
                   f"--flags={json.dumps(flags)}"]
        if args.original_repo:
            command.append(f"--original_repo={args.original_repo}")
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode:
            sys.exit(f"extract_features {name} failed:\n{result.stderr[-3000:]}")
        rows.append((name, json.loads(result.stdout.strip().splitlines()[-1])["seconds"]))
    return rows, f"{args.extract_lines} lines, mean {lengths.mean():.0f} pieces"


def _request_timings(call, seconds):
    return float(np.median(call_timings(call, seconds)))


def original_features(tokenizer, texts_a, texts_b, max_seq_length):
    """The original's classifier features of the pairs (texts_a[i], texts_b[i]; an empty
    text_b: a single text), tokenized by `tokenizer` (a FullTokenizer) and padded to
    `max_seq_length`: {input_ids, input_mask, segment_ids: int32 [N, max_seq_length],
    label_ids: int32 [N] (zeros)}."""
    from bert_tf.data.pairs import pad_to, pair_tokens

    features = {"input_ids": [], "input_mask": [], "segment_ids": [],
                "label_ids": [0] * len(texts_a)}
    for text_a, text_b in zip(texts_a, texts_b):
        tokens, segments = pair_tokens(tokenizer.tokenize(text_a),
                                       tokenizer.tokenize(text_b) or None, max_seq_length)
        ids = tokenizer.convert_tokens_to_ids(tokens)
        features["input_ids"].append(pad_to(ids, max_seq_length))
        features["input_mask"].append(pad_to([1] * len(ids), max_seq_length))
        features["segment_ids"].append(pad_to(segments, max_seq_length))
    return {k: np.array(v, np.int32) for k, v in features.items()}


def export_rows(args, words, config, config_dict, checkpoint):
    """[(name, batch, seconds per request)] of the classifier export, dynamic and static, and
    of the original's forward graph on the same requests tokenized and padded to 128."""
    import tensorflow as tf

    from bert_tf.bert.fast_tokenization import TokenizerModule
    from bert_tf.serving import export

    rng = random.Random(5)
    short = words.text(rng, 10)  # [CLS] + 10 + [SEP] = 12 pieces
    pairs = [words.pair(rng, int(n)) for n in sample_lengths("glue_mrpc_train", 32, 128, 5)]
    requests = {1: ([short], [""]), 32: ([a for a, _ in pairs], [b for _, b in pairs])}
    tokenizer = TokenizerModule(words.tokenizer.vocab, do_lower_case=True)
    served = {}
    for dynamic in (True, False):
        module, info = export.build_export("classifier", config, checkpoint, VOCAB_FILE, True,
                                           128, ["0", "1"], tokenizer=tokenizer,
                                           dynamic_padding=dynamic)
        path = os.path.join(args.work_dir, f"export_{dynamic}")
        export.save_export(module, info, path)
        served[dynamic] = tf.saved_model.load(path).signatures["serving_default"]
    rows = []
    for batch, (texts_a, texts_b) in requests.items():
        a, b = tf.constant(texts_a), tf.constant(texts_b)
        for dynamic, name in ((True, "ours (default)"), (False, "ours --dynamic_padding=false")):
            serve = served[dynamic]
            rows.append((name, batch, _request_timings(
                lambda serve=serve: serve(text_a=a, text_b=b)["probabilities"].numpy(),
                args.serve_seconds)))
        if args.original_repo:
            features = original_features(words.tokenizer, texts_a, texts_b, 128)
            session, inputs, fetch = original_graph(args.original_repo, "classifier",
                                                     config_dict, batch, 128, False)
            feed = {inputs[k]: features[k] for k in inputs}
            rows.append(("original (forward only, pre-tokenized)", batch, _request_timings(
                lambda: session.run(fetch, feed), args.serve_seconds)))
            session.close()
    return rows


# --- main -----------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", default=None,
                        help="a copy of google-research/bert (the baseline rows)")
    parser.add_argument("--layers", type=int, default=BERT_BASE["num_hidden_layers"],
                        help="encoder layers (BERT-Base: 12); fewer to shrink the run")
    parser.add_argument("--steps", type=int, default=50,
                        help="training steps per row (50 = one --group_by_length window)")
    parser.add_argument("--predict_examples", type=int, default=1024,
                        help="examples predicted per row")
    parser.add_argument("--extract_lines", type=int, default=256,
                        help="extract_features lines (BERT-Base writes ~2 MB per line)")
    parser.add_argument("--serve_seconds", type=float, default=10.0,
                        help="seconds of requests per export row (median reported)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="training/prediction tasks")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--work_dir", default=None, help="default: a temporary directory")
    args = parser.parse_args()
    tasks, parts = args.tasks.split(","), args.parts.split(",")
    for value, known, flag in ((tasks, TASKS, "--tasks"), (parts, PARTS, "--parts")):
        unknown = [x for x in value if x not in known]
        if unknown:
            parser.error(f"{flag}: {', '.join(unknown)} not among {', '.join(known)}")
    work = tempfile.TemporaryDirectory() if args.work_dir is None else None
    args.work_dir = args.work_dir or work.name
    os.makedirs(args.work_dir, exist_ok=True)

    from bert_tf.checkpoints import save_original_checkpoint
    from bert_tf.bert.config import BertConfig

    config_dict = dict(BERT_BASE, num_hidden_layers=args.layers)
    config = BertConfig.from_dict(config_dict)
    print(machine_header())
    print(f"BERT L={args.layers} H={config.hidden_size} A={config.num_attention_heads} "
          f"I={config.intermediate_size} V={config.vocab_size}, float32, random weights; "
          f"{args.steps} training steps, {args.predict_examples} predicted examples, "
          f"{args.extract_lines} extract_features lines", flush=True)
    print()
    words = Words()
    results = []  # (part, task, batch, implementation, seconds, note)

    for task in tasks:
        set_name, max_seq_length, train_batch, predict_batch = TASKS[task]
        count = max(args.steps * train_batch, args.predict_examples)
        lengths = sample_lengths(set_name, count, max_seq_length, seed=len(task))
        features = make_records(task, lengths, max_seq_length, config.vocab_size, seed=1)
        if "training" in parts:
            train_count = args.steps * train_batch
            record_file = write_records(os.path.join(args.work_dir, f"{task}.tf_record"),
                                        {k: v[:train_count] for k, v in features.items()})
            note = f"mean length {lengths[:train_count].mean():.0f} of {max_seq_length}"
            batches = batches_of(features, train_batch, args.steps)
            rows = [("ours (default)", {}), ("ours --group_by_length", {"group_by_length": True}),
                    ("ours --dynamic_padding=false", {"dynamic_padding": False})]
            for name, options in rows:
                seconds = time_our_training(config, task, record_file, max_seq_length,
                                            train_batch, args.steps, **options)
                results.append(("training", task, train_batch, name, seconds, note))
                print(results[-1], flush=True)
            if args.original_repo:
                seconds = time_original(args.original_repo, task, config_dict, batches,
                                        max_seq_length, True)
                results.append(("training", task, train_batch, "original", seconds, note))
                print(results[-1], flush=True)
            if task == "classifier":
                seconds = time_keras_hub(config_dict, batches, max_seq_length)
                if seconds is not None:
                    results.append(("training", task, train_batch, "KerasHub BertClassifier",
                                    seconds, note))
                    print(results[-1], flush=True)
        if "prediction" in parts:
            predict_file = write_records(
                os.path.join(args.work_dir, f"{task}_predict.tf_record"),
                {k: v[:args.predict_examples] for k, v in features.items()})
            p_lengths = lengths[:args.predict_examples]
            p_note = (f"mean length {p_lengths.mean():.0f} of {max_seq_length}; cut batches "
                      f"compute {cut_positions(p_lengths, predict_batch, max_seq_length):.0f}")
            rows = [("ours (default)", {}),
                    ("ours --dynamic_padding=false", {"dynamic_padding": False})]
            if task == "squad":  # its default keeps max_seq_length: the original's n-best
                rows.insert(1, ("ours --predict_dynamic_padding",
                                {"predict_dynamic_padding": True}))
            for name, options in rows:
                seconds, _ = time_our_prediction(config, task, predict_file, max_seq_length,
                                                 predict_batch, **options)
                results.append(("prediction", task, predict_batch, name, seconds, p_note))
                print(results[-1], flush=True)
            if args.original_repo:
                batches = batches_of({k: v[:args.predict_examples] for k, v in features.items()},
                                     predict_batch, args.predict_examples // predict_batch)
                seconds = time_original(args.original_repo, task, config_dict, batches,
                                        max_seq_length, False)
                results.append(("prediction", task, predict_batch, "original", seconds, p_note))
                print(results[-1], flush=True)

    checkpoint = None
    if "extract_features" in parts or "export" in parts:
        from bert_tf.layers.heads import ClassifierHead
        from bert_tf.models import BertTaskModel

        model = BertTaskModel(config, ClassifierHead(2, config.hidden_size))
        checkpoint = save_original_checkpoint(model, os.path.join(args.work_dir, "model",
                                                                  "bert_model.ckpt"))
        config_file = os.path.join(args.work_dir, "model", "bert_config.json")
        config.to_json_file(config_file)
        del model
    if "extract_features" in parts:
        rows, note = extract_features_rows(args, words, config_file, checkpoint)
        for name, seconds in rows:
            results.append(("extract_features", "-", 32, name, seconds, note))
            print(results[-1], flush=True)
    if "export" in parts:
        for name, batch, seconds in export_rows(args, words, config, config_dict, checkpoint):
            note = "a 12-piece sentence" if batch == 1 else "32 MRPC-like pairs"
            results.append(("export (per request)", "classifier", batch, name, seconds, note))
            print(results[-1], flush=True)

    baselines = {(p, t, b): s for p, t, b, n, s, _ in results if n.startswith("original")}
    table = [[p, t, b, n, f"{s:.2f}" if s >= 1 else f"{s * 1e3:.1f} ms",
              speed_up(baselines.get((p, t, b)), s), note]
             for p, t, b, n, s, note in results]
    print()
    print(f"load average (1, 5, 15 min) at the end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print_table(["part", "task", "batch", "implementation",
                 "seconds (sum; export: per request)", "speed-up vs original", "data"], table)
    if work is not None:
        work.cleanup()


if __name__ == "__main__":
    main()
