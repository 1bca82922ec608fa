"""Benchmark: ALBERT on bert_tf against google-research/albert, measured in the same run.

A table per benchmark (`--rows` picks some of `ROWS`):

  data   create_pretraining_data on a corpus of real text (built by
         benchmarks/pretraining_corpus.py from what Debian installs unless --corpus is given),
         SentencePiece (--spm_model_file, default the tests' 2000-piece albert.model; pass the
         released 30k-clean.model for the real one), the original's default flags but
         --dupe_factor (default 2: the original's 40 takes it hours): the original's script,
         imported unmodified and run after `np.random.seed(--numpy_seed)` (it never seeds numpy
         itself), against `python -m bert_tf.albert.create_pretraining_data --numpy_seed=...`.
         Wall time of each process end to end (imports included), CPU time, records written,
         records/s; goal >= 3x. The outputs are compared record by record (the original's
         records re-serialized deterministically: its protobuf map order varies per process).

  step   ALBERT-Base v2's pretraining training step (`ALBERT_BASE`: E 128, H 768, L 12 (or
         --layers) sharing 1 group of 1 block, 12 heads, FFN 3072, V 30000, dropout 0),
         float32, seq 128 (--step_seq_length), 20 predictions (--max_predictions_per_seq), per
         batch size of --step_batch_sizes, on one fixed random batch: ours is
         `AlbertPretrainer`'s real step (forward, backward, global-norm clipping, LAMB,
         global_step: its make_train_function, one step per call); the original's is its
         run_pretraining's model_fn in TRAIN mode (its modeling, heads and create_optimizer with
         LAMB) run in a tf.compat.v1 session, both with the same schedule (lr 0.00176, 100
         warmup steps of 10**6). Both live in this process (run_pretraining is the one original
         script it loads: the fine-tuning rows load modules that define no flags) and are timed
         in alternating turns, one step each, so that the load of the shared cores falls on
         both alike: median and fastest s/step (wall time, and CPU time of the process, steadier
         on a loaded machine) and the ratios original / ours (goal >= 1.0 in wall time). Batch
         32 needs about 8 GB of memory (both models).

  classifier, squad_v2   fine-tuning (issue 29): ALBERT-Base v2 as in `step` (dropout 0 in the
         encoder, the heads' own dropout 0.1), float32, AdamW (the original's default), lr 5e-5,
         100 warmup steps of 10**6, random weights. Data: lengths drawn (seeded) from
         ../shared/lengths.json, GLUE MRPC train pairs for run_classifier (seq 128) and SQuAD 2.0
         dev question + context lengths for run_squad_v2 (a 12-piece question, the context the
         rest, cut into windows of 384 at doc_stride 128 by the original's features: long
         contexts give several windows), texts made of words that are one piece each in the
         SentencePiece model (so the records have those lengths), written by our record
         writers (`bert_tf.albert.classifier_data`, `squad_data`: the original's records; a
         third of the SQuAD questions impossible). Two parts each, on the same records:
           training  --finetune_steps steps of batch 32 (classifier) / 8 (squad_v2): ours is
                     the real task's step (`AlbertClassificationTask` on
                     `AlbertFineTuningTrainer`, `SquadV2Task` on `Trainer`) through the
                     trainer's input stream, default (dynamic padding: each batch cut to its
                     longest, exact for both tasks) and --dynamic_padding=false; the
                     original's is its model_fn in TRAIN mode (classifier_utils.model_fn_builder:
                     create_model + create_optimizer with adamw; squad_utils.v2_model_fn_builder:
                     create_v2_model, its loss and create_optimizer) fed the same batches padded
                     to max_seq_length. One untimed step each (tracing; ours traces its step
                     once for all shapes, the first use of each further shape, e.g. its
                     oneDNN kernels, is timed), then the three run the same batches, one step
                     of each in turn (the order reversed every other round, so that the load
                     of the shared cores falls on all alike), each step timed: the sums.
           prediction  --predict_examples records (classifier, batch 32) / --squad_predict_windows
                     windows (squad_v2, batch 8): one cold Trainer.predict pass (the model built
                     before; tracing and each shape's kernels included) default (length order,
                     cut batches) and --dynamic_padding=false, against the original's model_fn
                     in PREDICT mode on padded batches from its first session.run. Model outputs
                     only (no post-processing).
         Wall and CPU time (of the process: all threads), the original's / ours. Goals (issue
         29, as BERT's): training >= 1.4x, prediction >= 2x, both with the default.

  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert
  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert --rows=step --step_steps=20
  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert --rows=classifier,squad_v2
  python3 benchmarks/albert.py --original_repo=/tmp/orig_albert --rows=classifier,squad_v2 \
      --layers=1 --finetune_steps=2 --predict_examples=64 --squad_predict_windows=16  # minutes
"""

import argparse
import logging
import os
import random
import sys
import tempfile
from pathlib import Path

import pretraining_corpus  # sibling scripts: this folder is first on sys.path
from common import (BERT_BASE, SQUAD_QUERY_LENGTH, OnePieceText, batches_of, cut_positions,
                    print_machine_header, print_table, sample_lengths, speed_up)
from pretraining_data import measure, read_records

REPO = Path(__file__).resolve().parents[1]
SPM_MODEL = REPO / "tests" / "data" / "albert_spm" / "albert.model"
# albert_base v2's albert_config.json (its keys no code reads left out).
ALBERT_BASE = dict(BERT_BASE, vocab_size=30000, embedding_size=128, num_hidden_groups=1,
                   inner_group_num=1, hidden_dropout_prob=0, attention_probs_dropout_prob=0)
# The schedule both steps run (the original's --learning_rate default).
STEP_SCHEDULE = dict(learning_rate=0.00176, num_train_steps=10**6, num_warmup_steps=100)
# Fine-tuning: the original run_classifier's and run_squad_v2's --learning_rate default.
FINETUNE_SCHEDULE = dict(learning_rate=5e-5, num_train_steps=10**6, num_warmup_steps=100)
# row -> (lengths.json set, max_seq_length, train batch, predict batch)
FINETUNE_TASKS = {
    "classifier": ("glue_mrpc_train", 128, 32, 32),
    "squad_v2": ("squad_v2_dev_5_articles", 384, 8, 8),
}
# The original run_squad_v2's defaults.
SQUAD_V2_FLAGS = dict(doc_stride=128, max_query_length=64, start_n_top=5, end_n_top=5,
                      dropout_prob=0.1)


def albert_config_dict(args):
    """ALBERT-Base v2's config, with --layers layers (one shared block whatever their number)."""
    return dict(ALBERT_BASE, num_hidden_layers=args.layers)

_DATA_RUNNER = """\
import sys
import numpy as np
repo, root, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
del sys.argv[1:4]
sys.path.insert(0, root)
from tools.original import load_albert_module
module = load_albert_module(repo, "create_pretraining_data")
module.FLAGS(sys.argv)
np.random.seed(seed)  # the original never seeds numpy; this is the run --numpy_seed reproduces
module.main(None)
"""


def _deterministic(records):
    from tensorflow.core.example import example_pb2  # pylint: disable=import-outside-toplevel

    return [example_pb2.Example.FromString(r).SerializeToString(deterministic=True)
            for r in records]


def bench_data(args, workdir, env):
    """The `data` row(s): [(name, wall s, CPU s, records, note)]."""
    corpus = args.corpus or str(workdir / "corpus.txt")
    if not os.path.exists(corpus):
        size, docs = pretraining_corpus.build_corpus(corpus, args.corpus_mb)
        print(f"built corpus {corpus}: {size / 1e6:.1f} MB, {docs} documents")
    vocab = str(Path(args.spm_model_file).with_suffix(".vocab"))
    common = [f"--input_file={corpus}", f"--vocab_file={vocab}",
              f"--spm_model_file={args.spm_model_file}", f"--dupe_factor={args.dupe_factor}",
              f"--max_seq_length={args.max_seq_length}"]
    print(f"data: corpus {corpus} ({os.path.getsize(corpus) / 1e6:.1f} MB), "
          f"{' '.join(common[1:])}, numpy seed {args.numpy_seed}", flush=True)
    rows = []
    original_out = None
    if args.original_repo:
        runner = workdir / "run_original.py"
        runner.write_text(_DATA_RUNNER)
        original_out = workdir / "original.tfrecord"
        wall, _, _, cpu = measure(
            [sys.executable, str(runner), args.original_repo, str(REPO), str(args.numpy_seed),
             f"--output_file={original_out}", *common], workdir / "original.log", env)
        count = sum(1 for _ in read_records(original_out))
        rows.append(("data: original", wall, cpu, count, ""))
        print(f"  original done in {wall:.1f} s", flush=True)
    ours_out = workdir / "ours.tfrecord"
    wall, _, _, cpu = measure(
        [sys.executable, "-m", "bert_tf.albert.create_pretraining_data",
         f"--output_file={ours_out}", f"--numpy_seed={args.numpy_seed}", *common],
        workdir / "ours.log", env)
    ours = list(read_records(ours_out))
    note = ""
    if original_out:
        theirs = _deterministic(list(read_records(original_out)))
        same = sum(a == b for a, b in zip(ours, theirs))
        identical = same == len(ours) == len(theirs)
        note = (f"{same:,}/{len(theirs):,} records equal the original's -> "
                f"{'IDENTICAL' if identical else 'DIFFERENT'}")
    rows.append(("data: bert_tf", wall, cpu, len(ours), note))
    return rows


def print_data_table(rows):
    print("| run | wall s | CPU s | records | records/s | note |")
    print("|---|---:|---:|---:|---:|---|")
    for name, wall, cpu, count, note in rows:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {count:,} | {count / wall:,.1f} | {note} |")
    by_name = {r[0]: r for r in rows}
    if "data: original" in by_name:
        print(f"\ndata: bert_tf vs original: "
              f"{by_name['data: original'][1] / by_name['data: bert_tf'][1]:.2f}x faster "
              "in records/s, wall time (goal >= 3x)")


def our_albert_step(config_dict, batch, seq_length, max_predictions):
    """bert_tf's step: `AlbertPretrainer` (LAMB, the default --optimizer) on `batch`."""
    from common import train_function_step  # pylint: disable=import-outside-toplevel

    from bert_tf.albert.config import AlbertConfig  # pylint: disable=import-outside-toplevel
    from bert_tf.albert.pretraining_task import (  # pylint: disable=import-outside-toplevel
        AlbertPretrainer, AlbertPretrainingOptions)

    options = AlbertPretrainingOptions(
        input_files=[], output_dir="/nonexistent", max_seq_length=seq_length,
        max_predictions_per_seq=max_predictions, train_batch_size=len(batch["input_ids"]),
        optimizer="lamb", **STEP_SCHEDULE)
    trainer = AlbertPretrainer(AlbertConfig.from_dict(config_dict), options)
    return train_function_step(trainer, batch)


def original_albert_step(run_pretraining, config_dict, batch):
    """The original's float32 step on `batch`: its run_pretraining's model_fn in TRAIN mode
    (`run_pretraining`: the module as tools.original.load_albert_module loads it)."""
    from common import original_step  # pylint: disable=import-outside-toplevel

    rp = run_pretraining
    # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
    rp.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs

    def build_train_op(features):
        model_fn = rp.model_fn_builder(
            rp.modeling.AlbertConfig.from_dict(config_dict), None,
            STEP_SCHEDULE["learning_rate"], STEP_SCHEDULE["num_train_steps"],
            STEP_SCHEDULE["num_warmup_steps"], use_tpu=False, use_one_hot_embeddings=False,
            optimizer="lamb", poly_power=1.0, start_warmup_step=0)
        spec = model_fn(features, None, rp.tf_estimator.ModeKeys.TRAIN, {})
        return spec["loss"], spec["train_op"]

    return original_step(build_train_op, batch)


def bench_step(args, workdir, env):
    """The `step` rows: [(batch size, {"bert_tf"/"original": timings_interleaved's})]."""
    del workdir, env  # both steps run in this process
    from common import (  # pylint: disable=import-outside-toplevel
        pretraining_batch, timings_interleaved)

    run_pretraining = None
    if args.original_repo:
        from tools.original import load_albert_module  # pylint: disable=import-outside-toplevel

        run_pretraining = load_albert_module(args.original_repo, "run_pretraining")
    config = albert_config_dict(args)
    print(f"step: ALBERT-Base v2 (E {config['embedding_size']}, H "
          f"{config['hidden_size']}, L {config['num_hidden_layers']}, 1 group of 1 "
          f"block, V {config['vocab_size']}, dropout 0), float32, LAMB, seq "
          f"{args.step_seq_length}, {args.max_predictions_per_seq} predictions, "
          f"{args.step_warmup_steps} warm-up + {args.step_steps} timed steps each, alternating",
          flush=True)
    rows = []
    for batch_size in (int(b) for b in args.step_batch_sizes.split(",")):
        batch = pretraining_batch(batch_size, args.step_seq_length, args.max_predictions_per_seq,
                                  ALBERT_BASE["vocab_size"])
        steps = {"bert_tf": our_albert_step(config, batch, args.step_seq_length,
                                            args.max_predictions_per_seq)}
        if run_pretraining is not None:
            steps["original"] = original_albert_step(run_pretraining, config, batch)
        times = timings_interleaved(steps, args.step_steps, args.step_warmup_steps)
        rows.append((batch_size, times))
        print(f"  batch {batch_size}: " + ", ".join(
            f"{name} {t['median']:.3f} / {t['fastest']:.3f} s/step, CPU {t['cpu_median']:.3f} / "
            f"{t['cpu_fastest']:.3f} s" for name, t in times.items()), flush=True)
    return rows


def print_step_table(rows, seq_length):
    def pair(t, kind=""):
        return f"{t[kind + 'median']:.3f} / {t[kind + 'fastest']:.3f}"

    def ratio(theirs, ours, kind=""):
        return (f"{theirs[kind + 'median'] / ours[kind + 'median']:.2f}x / "
                f"{theirs[kind + 'fastest'] / ours[kind + 'fastest']:.2f}x")

    table = []
    for batch_size, times in rows:
        ours, theirs = times["bert_tf"], times.get("original")
        table.append([seq_length, batch_size, pair(ours), pair(theirs) if theirs else "-",
                      ratio(theirs, ours) if theirs else "-", pair(ours, "cpu_"),
                      pair(theirs, "cpu_") if theirs else "-",
                      ratio(theirs, ours, "cpu_") if theirs else "-"])
    print_table(["seq", "batch", "bert_tf s/step", "original s/step",
                 "original / bert_tf (goal >= 1.0)", "bert_tf CPU s/step",
                 "original CPU s/step", "original / bert_tf CPU"], table)
    print("(each cell: median / fastest of the timed steps; a ratio above 1: bert_tf faster)")


# --- fine-tuning: run_classifier and run_squad_v2 (issue 29) ------------------------------------

class SentencePieceWords(OnePieceText):
    """Words the SentencePiece model `spm_model_file` makes one piece each (lower-case ASCII
    letters, at least 2), with ALBERT's tokenizer (`self.tokenizer`) as the commands use it."""

    def __init__(self, spm_model_file):
        from bert_tf.albert.tokenization import (  # pylint: disable=import-outside-toplevel
            FullTokenizer)

        self.tokenizer = FullTokenizer(None, do_lower_case=True, spm_model_file=spm_model_file)
        sp_model = self.tokenizer.sp_model
        words = []
        for index in range(sp_model.GetPieceSize()):
            piece = sp_model.IdToPiece(index)
            word = piece[1:]
            if (piece.startswith("\u2581") and len(word) > 1 and word.isascii() and word.isalpha()
                    and word.islower() and self.tokenizer.tokenize(word) == [piece]):
                words.append(word)
        if not words:
            sys.exit(f"--spm_model_file={spm_model_file}: no piece is a whole lower-case word")
        super().__init__(words)


def write_classifier_records(words, path, lengths, max_seq_length, seed):
    """MRPC-like pairs of `lengths` pieces ([CLS] a [SEP] b [SEP]), random labels, written to
    `path` by run_classifier's record writer (the original's records)."""
    from bert_tf.albert import classifier_data  # pylint: disable=import-outside-toplevel

    rng = random.Random(seed)
    examples = [classifier_data.InputExample(f"bench-{i}", *words.pair(rng, int(length)),
                                             label=str(rng.randint(0, 1)))
                for i, length in enumerate(lengths)]
    classifier_data.write_records(examples, ["0", "1"], max_seq_length, words.tokenizer, path)


def write_squad_v2_records(words, path, lengths, count, is_training, max_seq_length, seed):
    """The first `count` windows of SQuAD 2.0-like questions (`lengths`: question + context +
    3 pieces, uncapped; a SQUAD_QUERY_LENGTH-piece question; in training a third impossible,
    the others a 1-5 word answer anywhere in the context), cut into windows by run_squad_v2's
    features (`bert_tf.albert.squad_data`: the original's) and written to `path` by its
    FeatureWriter. Needs len(lengths) >= count (a question gives at least one window)."""
    from bert_tf.albert import squad_data  # pylint: disable=import-outside-toplevel

    rng = random.Random(seed)
    examples = []
    for index, length in enumerate(lengths):
        context = [rng.choice(words.words)
                   for _ in range(max(int(length) - SQUAD_QUERY_LENGTH - 3, 1))]
        example = squad_data.SquadExample(f"bench-{index}", words.text(rng, SQUAD_QUERY_LENGTH),
                                          " ".join(context))
        if is_training and rng.random() < 1 / 3:
            example.orig_answer_text, example.start_position = "", -1
            example.is_impossible = True
        elif is_training:
            first = rng.randrange(len(context))
            example.orig_answer_text = " ".join(
                context[first:first + min(rng.randint(1, 5), len(context) - first)])
            example.start_position = sum(len(w) + 1 for w in context[:first])
        examples.append(example)
    features = []
    squad_data.convert_examples_to_features(
        examples, words.tokenizer, max_seq_length, SQUAD_V2_FLAGS["doc_stride"],
        SQUAD_V2_FLAGS["max_query_length"], is_training, features.append, do_lower_case=True)
    if len(features) < count:
        raise AssertionError(f"{len(features)} windows of {len(examples)} questions < {count}")
    with squad_data.FeatureWriter(path, is_training) as writer:
        for feature in features[:count]:
            writer.process_feature(feature)


def our_finetune_task(row, max_seq_length):
    """The task run_classifier (mrpc's) or run_squad_v2 gives the trainer."""
    # pylint: disable=import-outside-toplevel
    from bert_tf.albert.classifier_task import AlbertClassificationTask
    from bert_tf.albert.squad_v2_task import SquadV2Task

    if row == "classifier":
        return AlbertClassificationTask("mrpc", ["0", "1"], max_seq_length)
    return SquadV2Task(max_seq_length, SQUAD_V2_FLAGS["start_n_top"],
                       SQUAD_V2_FLAGS["end_n_top"], SQUAD_V2_FLAGS["dropout_prob"])


def our_finetune_trainer(row, config, max_seq_length, batch_size, dynamic_padding):
    """The trainer run_classifier (`AlbertFineTuningTrainer`) or run_squad_v2 (`Trainer`)
    builds, AdamW, reading the records in file order (no shuffle), nothing written."""
    # pylint: disable=import-outside-toplevel
    from bert_tf.albert.finetuning import AlbertFineTuningTrainer
    from bert_tf.training.trainer import Trainer, TrainerOptions

    options = TrainerOptions(
        output_dir="/nonexistent", train_batch_size=batch_size, eval_batch_size=batch_size,
        shuffle_buffer_size=0, optimizer="adamw", dynamic_padding=dynamic_padding,
        **FINETUNE_SCHEDULE)
    trainer_class = AlbertFineTuningTrainer if row == "classifier" else Trainer
    return trainer_class(config, our_finetune_task(row, max_seq_length), options)


def original_finetune_graph(module, row, config_dict, batch_size, max_seq_length, is_training):
    """(session, placeholders, fetch) of the original's model_fn for `row` (`module`: its
    classifier_utils or squad_utils as tools.original loads it) in TRAIN mode ([train_op,
    loss]) or PREDICT mode (its predictions), on placeholders [batch_size, max_seq_length]."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common import original_session  # pylint: disable=import-outside-toplevel

    # The Estimator's spec (a stand-in module of tools.original): its arguments as a dict.
    module.contrib_tpu.TPUEstimatorSpec = lambda **kwargs: kwargs
    config = module.modeling.AlbertConfig.from_dict(config_dict)
    schedule = [FINETUNE_SCHEDULE[k] for k in
                ("learning_rate", "num_train_steps", "num_warmup_steps")]
    if row == "classifier":
        model_fn = module.model_fn_builder(
            config, 2, None, *schedule, use_tpu=False, use_one_hot_embeddings=False,
            task_name="mrpc", hub_module=None, optimizer="adamw")
        names = ["input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example"]
    else:
        flags = SQUAD_V2_FLAGS
        model_fn = module.v2_model_fn_builder(
            config, None, *schedule, use_tpu=False, use_one_hot_embeddings=False,
            max_seq_length=max_seq_length, start_n_top=flags["start_n_top"],
            end_n_top=flags["end_n_top"], dropout_prob=flags["dropout_prob"], hub_module=None)
        names = ["unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask"]
        if is_training:
            names += ["start_positions", "end_positions", "is_impossible"]
    sequence = ("input_ids", "input_mask", "segment_ids", "p_mask")
    modes = module.tf_estimator.ModeKeys

    def build():
        inputs = {name: tf.compat.v1.placeholder(
            tf.int32, [batch_size, max_seq_length] if name in sequence else [batch_size],
            name=name) for name in names}
        spec = model_fn(inputs, None, modes.TRAIN if is_training else modes.PREDICT, {})
        return inputs, [spec["train_op"], spec["loss"]] if is_training else spec["predictions"]

    session, (inputs, fetch) = original_session(build)
    return session, inputs, fetch


def _finetune_data(row, args, workdir, words, part):
    """(record file, {name: numpy array} of its records, lengths) of `row`'s `part`."""
    from common import record_arrays  # pylint: disable=import-outside-toplevel

    set_name, max_seq_length, train_batch, _ = FINETUNE_TASKS[row]
    is_training = part == "training"
    count = (args.finetune_steps * train_batch if is_training else
             args.predict_examples if row == "classifier" else args.squad_predict_windows)
    seed = {"classifier": 1, "squad_v2": 2}[row] * 10 + is_training
    path = str(workdir / f"{row}_{part}.tf_record")
    if row == "classifier":
        lengths = sample_lengths(set_name, count, max_seq_length, seed)
        write_classifier_records(words, path, lengths, max_seq_length, seed)
    else:
        lengths = sample_lengths(set_name, count, None, seed)
        write_squad_v2_records(words, path, lengths, count, is_training, max_seq_length, seed)
    arrays = record_arrays(path, our_finetune_task(row, max_seq_length).feature_spec(
        is_training))
    real = arrays["input_mask"].sum(axis=1)
    if row == "classifier" and (real != lengths).any():  # a word that is not one piece
        raise AssertionError(f"{(real != lengths).sum()} records of {path} are not of the "
                             "lengths drawn")
    return path, arrays, real


def bench_finetune(row, args, workdir, env):
    """The `classifier` or `squad_v2` rows: [(part, row, batch, count, implementation,
    Timing, data note)]."""
    del env  # everything runs in this process
    # pylint: disable=import-outside-toplevel
    from common import (session_steps, timed, timings_interleaved, trainer_prediction,
                        trainer_steps, Timing)

    from bert_tf.albert.config import AlbertConfig

    _, max_seq_length, train_batch, predict_batch = FINETUNE_TASKS[row]
    config_dict = albert_config_dict(args)
    config = AlbertConfig.from_dict(config_dict)
    words = SentencePieceWords(args.spm_model_file)
    module = None
    if args.original_repo:
        from tools.original import load_albert_module

        module = load_albert_module(args.original_repo, {"classifier": "classifier_utils",
                                                         "squad_v2": "squad_utils"}[row])
    print(f"{row}: ALBERT (E {config.embedding_size}, H {config.hidden_size}, L "
          f"{config.num_hidden_layers}, 1 shared block, V {config.vocab_size}), float32, "
          f"AdamW, seq {max_seq_length}; {len(words.words)} one-piece words of "
          f"{args.spm_model_file}", flush=True)
    results = []
    steps = args.finetune_steps
    path, arrays, lengths = _finetune_data(row, args, workdir, words, "training")
    note = (f"mean length {lengths.mean():.0f} of {max_seq_length}; cut batches compute "
            f"{cut_positions(lengths, train_batch, max_seq_length, sort=False):.0f}")
    print(f"  training: {steps} steps of {train_batch} ({note})", flush=True)
    step_fns = {}
    for name, dynamic in (("bert_tf (default)", True), ("bert_tf --dynamic_padding=false", False)):
        trainer = our_finetune_trainer(row, config, max_seq_length, train_batch, dynamic)
        # One untimed step traces the step (once for every shape: no retracing per shape).
        step_fns[name] = trainer_steps(trainer, path, train_batch, steps, warmup_steps=1)
    session = None
    if module is not None:
        session, inputs, fetch = original_finetune_graph(module, row, config_dict, train_batch,
                                                         max_seq_length, True)
        step_fns["original"] = session_steps(session, inputs, fetch,
                                             batches_of(arrays, train_batch, steps), 1)
    for name, t in timings_interleaved(step_fns, steps, 0).items():
        results.append(("training", row, train_batch, steps, name,
                        Timing(t["total"], t["cpu_total"]), note))
        print(f"  {results[-1]}", flush=True)
    del step_fns, trainer
    if session is not None:
        session.close()

    path, arrays, lengths = _finetune_data(row, args, workdir, words, "prediction")
    count = len(lengths)
    note = (f"mean length {lengths.mean():.0f} of {max_seq_length}; cut batches compute "
            f"{cut_positions(lengths, predict_batch, max_seq_length):.0f}")
    print(f"  prediction: {count} {_UNITS[row]} ({note})", flush=True)
    for name, dynamic in (("bert_tf (default)", True), ("bert_tf --dynamic_padding=false", False)):
        trainer = our_finetune_trainer(row, config, max_seq_length, predict_batch, dynamic)
        predicted, timing = trainer_prediction(trainer, path, predict_batch)
        assert predicted == count, (predicted, count)
        results.append(("prediction", row, predict_batch, count, name, timing, note))
        print(f"  {results[-1]}", flush=True)
        del trainer
    if module is not None:
        session, inputs, fetch = original_finetune_graph(module, row, config_dict,
                                                         predict_batch, max_seq_length, False)
        batches = batches_of(arrays, predict_batch, count // predict_batch)
        step = session_steps(session, inputs, fetch, batches)
        _, timing = timed(lambda: [step() for _ in batches])
        session.close()
        results.append(("prediction", row, predict_batch, count, "original", timing, note))
        print(f"  {results[-1]}", flush=True)
    return results


# What a fine-tuning row predicts: a record per pair, a record per window of a question.
_UNITS = {"classifier": "records", "squad_v2": "windows"}


def print_finetune_table(rows):
    baselines = {(part, row): timing for part, row, _, _, name, timing, _ in rows
                 if name == "original"}
    table = []
    for part, row, batch, count, name, timing, note in rows:
        base = baselines.get((part, row))
        table.append([part, row, batch, f"{count} {'steps' if part == 'training' else _UNITS[row]}",
                      name, f"{timing.wall:.1f}", f"{timing.cpu:.1f}",
                      speed_up(base and base.wall, timing.wall),
                      speed_up(base and base.cpu, timing.cpu), note])
    print_table(["part", "task", "batch", "work", "implementation", "wall s (sum)", "CPU s",
                 "original / this, wall", "original / this, CPU", "data"], table)
    print("(goals, bert_tf default against the original in wall time: training >= 1.4x, "
          "prediction >= 2x)")


ROWS = {"data": bench_data, "step": bench_step,
        "classifier": lambda *a: bench_finetune("classifier", *a),
        "squad_v2": lambda *a: bench_finetune("squad_v2", *a)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", help="a copy of google-research/albert (baseline)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"some of {', '.join(ROWS)}")
    parser.add_argument("--corpus", help="input text; built from Debian's docs when absent")
    parser.add_argument("--corpus_mb", type=float, default=4)
    parser.add_argument("--spm_model_file", default=str(SPM_MODEL),
                        help="SentencePiece model (its .vocab beside it is the --vocab_file)")
    parser.add_argument("--dupe_factor", type=int, default=2)
    parser.add_argument("--max_seq_length", type=int, default=512)
    parser.add_argument("--numpy_seed", type=int, default=12345)
    parser.add_argument("--step_batch_sizes", default="8,32")
    parser.add_argument("--step_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--step_steps", type=int, default=10,
                        help="timed steps of each side per batch size")
    parser.add_argument("--step_warmup_steps", type=int, default=2)
    parser.add_argument("--layers", type=int, default=ALBERT_BASE["num_hidden_layers"],
                        help="ALBERT layers of the step and fine-tuning rows (all share one "
                             "block); fewer to shrink a run")
    parser.add_argument("--finetune_steps", type=int, default=16,
                        help="training steps of each implementation per fine-tuning task")
    parser.add_argument("--predict_examples", type=int, default=1024,
                        help="classifier records predicted (a multiple of 32)")
    parser.add_argument("--squad_predict_windows", type=int, default=512,
                        help="squad_v2 windows predicted (a multiple of 8)")
    parser.add_argument("--workdir", help="where outputs and logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    names = args.rows.split(",")
    for name in names:
        if name not in ROWS:
            parser.error(f"--rows: {name!r} is not one of {', '.join(ROWS)}")
    for flag, multiple in (("predict_examples", FINETUNE_TASKS["classifier"][3]),
                           ("squad_predict_windows", FINETUNE_TASKS["squad_v2"][3])):
        if getattr(args, flag) <= 0 or getattr(args, flag) % multiple:
            parser.error(f"--{flag} must be a positive multiple of {multiple} (the batch)")
    if args.layers <= 0 or args.finetune_steps <= 0:
        parser.error("--layers and --finetune_steps must be positive")
    print_machine_header()
    # The trainers' and the originals' INFO lines (rows running in this process) say nothing
    # the tables need.
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    logging.getLogger("absl").setLevel(logging.ERROR)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_albert_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    results = {name: ROWS[name](args, workdir, env) for name in names}
    print()
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f} (includes these runs; "
          "more than about 1-2 means other processes competed for the 2 cores)")
    if "data" in results:
        print_data_table(results["data"])
    if "step" in results:
        print()
        print_step_table(results["step"], args.step_seq_length)
    finetune = [r for name in ("classifier", "squad_v2") if name in results
                for r in results[name]]
    if finetune:
        print()
        print_finetune_table(finetune)
    print(f"outputs and logs: {workdir}")


if __name__ == "__main__":
    sys.exit(main())
