"""Entity F1 of run_tagging.py against a reference tagger on the original BertModel (issue 22).

Both taggers train the same small BERT from the same weights on the same data with the same
recipe, over several seeds, in one run; the table gives each one's entity F1 (conlleval) per
seed, the mean and the spread. The goal: ours' mean >= the reference's mean minus half its
spread (the sample standard deviation over the seeds).

Data: benchmarks/tagging_corpus.py's synthetic CoNLL-2003-shaped corpus in document order
(2,000 training sentences in 91 documents, 1,000 dev sentences; lengths from
../shared/lengths.json), and its vocab (the uncased vocab's pieces that the corpus uses).

Model: L=2, H=128, A=2, I=512 BERT, max_seq_length 64, randomly initialised once (seed 0) and
saved as an original-format checkpoint that both taggers load (the task's head starts from
each tagger's own seeded initialisation).

Recipe (the issue's): the first word piece of each word labelled, the others ignored; a dense
layer (truncated normal 0.02, zero bias) on the sequence output with dropout 0.1; the loss the
mean cross-entropy over the labelled words of the batch; the original optimizer
(optimization.create_optimizer: AdamWeightDecay, clipping at 1.0, warmup 10% then linear decay);
batch 16, 3 epochs; a fresh permutation of the training sentences each epoch.

- reference: the original's modeling.py and optimization.py (through tools.original, TF1
  graph mode); sentences longer than 62 pieces are truncated (the words cut off are tagged O
  in eval, as a truncating tagger must); steps = int(sentences / batch * epochs).
- ours: bert_tf.tasks.tagging.run (what run_tagging.py runs) with its defaults (windows, a
  permutation per epoch); `--variants` adds ours with other settings, e.g. the old input order
  (`ours_buffer100`: --shuffle_buffer_size=100).

Usage (a copy of google-research/bert at --original_repo; about 1-2 minutes per run on 2 cores):

    python3 benchmarks/tagging_quality.py --original_repo=/tmp/orig_bert --seeds=5
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import REPO, machine_header  # noqa: E402

import numpy as np  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO), "shared")
MODEL = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=512, hidden_act="gelu", hidden_dropout_prob=0.1,
             attention_probs_dropout_prob=0.1, max_position_embeddings=128, type_vocab_size=2,
             initializer_range=0.02)

# Variants of ours: name -> TaggingOptions overrides.
OUR_VARIANTS = {
    "ours": {},
    "ours_buffer100": {"shuffle_buffer_size": 100},
    "ours_buffer100000": {"shuffle_buffer_size": 100000},
    "ours_in_order": {"shuffle_buffer_size": 0},
}


def write_random_checkpoint(config_dict, path, seed=0):
    """An encoder of `config_dict` with our seeded initialisation, saved in the original
    names (bert/...): the weights both taggers start from."""
    import keras

    from bert_tf import BertConfig, BertModel
    from bert_tf.checkpoints import save_original_checkpoint

    keras.utils.set_random_seed(seed)
    model = BertModel(BertConfig.from_dict(config_dict))
    ids = np.ones([1, 8], np.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids})
    return save_original_checkpoint(model, path)


def run_ours(args, data_dir, config_dict, init_checkpoint, seed, overrides, work_dir):
    from bert_tf import BertConfig
    from bert_tf.data import conll
    from bert_tf.tasks.tagging import TaggingOptions, run

    output_dir = os.path.join(work_dir, f"ours-{seed}")
    shutil.rmtree(output_dir, ignore_errors=True)
    options = TaggingOptions(
        data_dir=data_dir, vocab_file=os.path.join(data_dir, "vocab.txt"),
        output_dir=output_dir, init_checkpoint=init_checkpoint,
        max_seq_length=args.max_seq_length, train_batch_size=args.batch_size,
        eval_batch_size=32, learning_rate=args.learning_rate,
        num_train_epochs=args.epochs, warmup_proportion=0.1, seed=seed,
        save_checkpoints_steps=10**6, iterations_per_loop=200, keep_checkpoint_max=1)
    options = type(options)(**{**options.__dict__, **overrides})
    out = run(BertConfig.from_dict(config_dict), options, do_train=True, do_eval=True)
    # eval_predictions.txt is dev.txt with the predicted tag appended: read as a CoNLL file,
    # its "tags" are the predictions.
    predicted = [s.tags for s in conll.read_conll(out["eval_predictions"])]
    shutil.rmtree(output_dir, ignore_errors=True)
    return predicted


class ReferenceTagger:
    """The recipe on the original's modeling.BertModel and create_optimizer, in a TF1 graph.

    Features: each word's pieces from the original's FullTokenizer; `[CLS] pieces [SEP]`
    truncated to max_seq_length; label and weight 1 at each word's first piece."""

    def __init__(self, repo, config_dict, vocab_file, labels, max_seq_length, head_dropout=0.1):
        from tools.original import load_original_module

        self.modeling = load_original_module(repo, "modeling")
        self.optimization = load_original_module(repo, "optimization")
        tokenization = load_original_module(repo, "tokenization")
        self.tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
        self.config_dict = config_dict
        self.labels = list(labels)
        self.max_seq_length = max_seq_length
        self.head_dropout = head_dropout

    def features(self, sentences):
        """Arrays [N, S] of ids, mask, label ids, label weights; and per sentence the
        (position, word) pairs of its labelled pieces."""
        n, s = len(sentences), self.max_seq_length
        ids, mask = np.zeros([n, s], np.int32), np.zeros([n, s], np.int32)
        label_ids, weights = np.zeros([n, s], np.int32), np.zeros([n, s], np.float32)
        firsts = []
        label_index = {label: i for i, label in enumerate(self.labels)}
        for i, sentence in enumerate(sentences):
            pieces, first = ["[CLS]"], []
            for w, word in enumerate(sentence.words):
                word_pieces = self.tokenizer.tokenize(word)
                if word_pieces and len(pieces) + 1 < s:
                    first.append((len(pieces), w))
                pieces += word_pieces
            pieces = pieces[: s - 1] + ["[SEP]"]
            ids[i, : len(pieces)] = self.tokenizer.convert_tokens_to_ids(pieces)
            mask[i, : len(pieces)] = 1
            for position, w in first:
                label_ids[i, position] = label_index[sentence.tags[w]]
                weights[i, position] = 1.0
            firsts.append(first)
        return {"input_ids": ids, "input_mask": mask, "label_ids": label_ids,
                "label_weights": weights}, firsts

    def _logits(self, features, is_training):
        v1 = self._v1
        config = self.modeling.BertConfig.from_dict(self.config_dict)
        model = self.modeling.BertModel(
            config=config, is_training=is_training, input_ids=features["input_ids"],
            input_mask=features["input_mask"],
            token_type_ids=tf_zeros_like(features["input_ids"]), use_one_hot_embeddings=False,
            scope="bert")
        sequence = model.get_sequence_output()
        hidden = sequence.shape[-1]
        # Our head's names, so that a checkpoint holding a head (--paired) starts both alike.
        weights = v1.get_variable("bert_tf/tagging/output_weights", [len(self.labels), hidden],
                                  initializer=v1.truncated_normal_initializer(stddev=0.02))
        bias = v1.get_variable("bert_tf/tagging/output_bias", [len(self.labels)],
                               initializer=v1.zeros_initializer())
        if is_training and self.head_dropout:
            sequence = v1.nn.dropout(sequence, rate=self.head_dropout)
        return v1.einsum("bsh,nh->bsn", sequence, weights) + bias

    def train_and_evaluate(self, train, dev, init_checkpoint, seed, batch_size, epochs,
                           learning_rate, permute=True):
        """Trains (each epoch a fresh permutation of `train`, or its order when not
        `permute`) and returns the predicted tags of `dev`, one list per sentence."""
        import tensorflow as tf

        v1 = self._v1 = tf.compat.v1
        train_features, _ = self.features(train)
        dev_features, dev_firsts = self.features(dev)
        num_steps = int(len(train) / batch_size * epochs)
        graph = tf.Graph()
        with graph.as_default():
            v1.set_random_seed(seed)
            placeholders = {k: v1.placeholder(v.dtype, [None, self.max_seq_length], name=k)
                            for k, v in train_features.items()}
            logits = self._logits(placeholders, is_training=True)
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            per_piece = -tf.reduce_sum(
                tf.one_hot(placeholders["label_ids"], len(self.labels)) * log_probs, axis=-1)
            weights = placeholders["label_weights"]
            loss = tf.reduce_sum(weights * per_piece) / tf.maximum(tf.reduce_sum(weights), 1.0)
            train_op = self.optimization.create_optimizer(
                loss, learning_rate, num_steps, int(num_steps * 0.1), False)
            with v1.variable_scope(v1.get_variable_scope(), reuse=True):
                predictions = tf.argmax(self._logits(placeholders, is_training=False), -1)
            tvars = v1.trainable_variables()
            assignment, _ = self.modeling.get_assignment_map_from_checkpoint(
                tvars, init_checkpoint)
            v1.train.init_from_checkpoint(init_checkpoint, assignment)
            init = v1.global_variables_initializer()
        rng = np.random.RandomState(seed)
        order = np.concatenate([rng.permutation(len(train)) if permute else np.arange(len(train))
                                for _ in range(int(np.ceil(epochs)) + 1)])
        with v1.Session(graph=graph) as session:
            session.run(init)
            for step in range(num_steps):
                batch = order[step * batch_size:(step + 1) * batch_size]
                session.run(train_op, {placeholders[k]: v[batch]
                                       for k, v in train_features.items()})
            predicted = np.concatenate([
                session.run(predictions, {placeholders[k]: v[i:i + 64]
                                          for k, v in dev_features.items()})
                for i in range(0, len(dev), 64)])
        tags = []
        for sentence, first, row in zip(dev, dev_firsts, predicted):
            words = ["O"] * len(sentence.words)  # words cut off by truncation stay "O"
            for position, w in first:
                words[w] = self.labels[int(row[position])]
            tags.append(words)
        return tags


def tf_zeros_like(t):
    import tensorflow as tf

    return tf.zeros_like(t)


def run_reference(args, data_dir, config_dict, init_checkpoint, seed, permute=True,
                  epochs=None):
    from bert_tf.data import conll

    train = conll.read_conll(os.path.join(data_dir, "train.txt"))
    dev = conll.read_conll(os.path.join(data_dir, "dev.txt"))
    tagger = ReferenceTagger(args.original_repo, config_dict,
                             os.path.join(data_dir, "vocab.txt"), conll.label_list(train),
                             args.max_seq_length,
                             head_dropout=0.1 if args.dropout in ("all", "head") else 0.0)
    return tagger.train_and_evaluate(train, dev, init_checkpoint, seed, args.batch_size,
                                     epochs or args.epochs, args.learning_rate, permute)


def write_paired_run(data_dir, paired_dir, config_dict, encoder_checkpoint, seed, epochs):
    """The inputs of a --paired run: paired_dir/train.txt holding the training sentences in
    `epochs` seeded permutations one after another (read once, in order, by both taggers),
    dev.txt and vocab.txt copied, and a checkpoint of the encoder plus a head drawn by our
    initialiser (seed), which both load. Returns the checkpoint's prefix."""
    import keras

    from bert_tf import BertConfig
    from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
    from bert_tf.data import conll
    from bert_tf.tasks.tagging import TaggingTask

    os.makedirs(paired_dir, exist_ok=True)
    for name in ("dev.txt", "vocab.txt"):
        shutil.copy(os.path.join(data_dir, name), os.path.join(paired_dir, name))
    sentences = conll.read_conll(os.path.join(data_dir, "train.txt"))
    rng = np.random.RandomState(seed)
    with open(os.path.join(paired_dir, "train.txt"), "w") as f:
        for _ in range(int(epochs)):
            for i in rng.permutation(len(sentences)):
                f.write("\n".join(sentences[i].lines) + "\n\n")
    keras.utils.set_random_seed(seed)
    model = TaggingTask(conll.label_list(sentences), 8).build_model(
        BertConfig.from_dict(config_dict))
    load_original_checkpoint(model, encoder_checkpoint)
    return save_original_checkpoint(model, os.path.join(paired_dir, "init", "bert_model.ckpt"))


def truncation_report(data_dir, max_seq_length):
    """What a window of max_seq_length cuts off the dev sentences: (the indexes of the
    sentences that fit, words beyond it, gold entities ending beyond it, all gold entities)."""
    from bert_tf.evaluation import tagging_metrics
    from bert_tf.data import conll
    from bert_tf.bert.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(data_dir, "vocab.txt"), do_lower_case=True)
    short, cut_words, cut_entities, entities = [], 0, 0, 0
    for index, sentence in enumerate(conll.read_conll(os.path.join(data_dir, "dev.txt"))):
        ends, total = [], 0
        for word in sentence.words:
            total += len(tokenizer.tokenize(word))
            ends.append(total)
        fits = [end <= max_seq_length - 2 for end in ends]
        if all(fits):
            short.append(index)
        cut_words += fits.count(False)
        chunks = tagging_metrics.get_chunks(sentence.tags)
        entities += len(chunks)
        cut_entities += sum(not fits[last] for _, _, last in chunks)
    return short, cut_words, cut_entities, entities


def summary(values):
    values = np.array(values) * 100
    spread = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return float(values.mean()), spread, float(values.min()), float(values.max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo",
                        default=os.environ.get("BERT_ORIGINAL_REPO", "/tmp/orig_bert"),
                        help="a copy of google-research/bert")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first_seed", type=int, default=1)
    parser.add_argument("--variants", default="reference,ours",
                        help="comma list of: reference, " + ", ".join(OUR_VARIANTS))
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--train_sentences", type=int, default=2000)
    parser.add_argument("--dev_sentences", type=int, default=1000)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--paired", action="store_true",
                        help="isolate the implementations: per seed, both taggers read the "
                             "same training file (the epochs' permutations written one after "
                             "another) in order, for one pass, from the same head")
    parser.add_argument("--dropout", choices=("all", "none", "head", "encoder"), default="all",
                        help="where dropout 0.1 is on, on both sides: everywhere, nowhere, only "
                             "the head's input, only the encoder")
    parser.add_argument("--no_dropout", action="store_true", help="the same as --dropout=none")
    args = parser.parse_args()
    if args.no_dropout:
        args.dropout = "none"
    variants = args.variants.split(",")
    for name in variants:
        if name != "reference" and name not in OUR_VARIANTS:
            parser.error(f"--variants: unknown {name!r}")
    if "reference" in variants and not os.path.isfile(
            os.path.join(args.original_repo, "modeling.py")):
        parser.error(f"--original_repo={args.original_repo}: no modeling.py (a copy of "
                     "google-research/bert is needed for the reference)")

    from tagging_corpus import make_corpus

    work_dir = args.work_dir or tempfile.mkdtemp(prefix="tagging_quality-")
    data_dir = os.path.join(work_dir, "data")
    stats = make_corpus(data_dir, os.path.join(SHARED, "data", "uncased_vocab.txt"),
                        os.path.join(SHARED, "lengths.json"), args.train_sentences,
                        args.dev_sentences)
    with open(os.path.join(data_dir, "vocab.txt")) as f:
        vocab_size = sum(1 for _ in f)
    config_dict = dict(MODEL, vocab_size=vocab_size)
    if args.dropout in ("none", "head"):
        config_dict.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    init_checkpoint = write_random_checkpoint(
        config_dict, os.path.join(work_dir, "init", "bert_model.ckpt"))

    print(machine_header())
    print(f"corpus: {stats}; vocab {vocab_size}")
    print(f"model: L={MODEL['num_hidden_layers']} H={MODEL['hidden_size']} "
          f"A={MODEL['num_attention_heads']} I={MODEL['intermediate_size']}, random init "
          f"(seed 0); max_seq_length {args.max_seq_length}, batch {args.batch_size}, "
          f"lr {args.learning_rate}, {args.epochs} epochs, warmup 10%, dropout: {args.dropout}",
          flush=True)
    from bert_tf.evaluation import tagging_metrics
    from bert_tf.data import conll

    gold = [s.tags for s in conll.read_conll(os.path.join(data_dir, "dev.txt"))]
    short, cut_words, cut_entities, entities = truncation_report(data_dir, args.max_seq_length)
    print(f"dev: {len(gold) - len(short)} sentences longer than {args.max_seq_length - 2} pieces; "
          f"{cut_words} words beyond the first window and {cut_entities} of {entities} gold "
          "entities ending there (ours tags them from later windows; the reference's truncation tags them O)")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results, results_short, seconds = {}, {}, {}
    for seed in seeds:
        for name in variants:
            start = time.time()
            run_data, run_init, overrides, paired = data_dir, init_checkpoint, {}, {}
            if args.dropout in ("none", "encoder"):
                overrides["tagging_dropout"] = 0.0
            if args.paired:
                run_data = os.path.join(work_dir, f"paired-{seed}")
                run_init = write_paired_run(data_dir, run_data, config_dict, init_checkpoint,
                                            seed, args.epochs)
                overrides.update(shuffle_buffer_size=0, num_train_epochs=1.0)
                paired = {"permute": False, "epochs": 1.0}
            if name == "reference":
                tags = run_reference(args, run_data, config_dict, run_init, seed, **paired)
            else:
                tags = run_ours(args, run_data, config_dict, run_init, seed,
                                {**OUR_VARIANTS[name], **overrides}, work_dir)
            seconds.setdefault(name, []).append(time.time() - start)
            f1 = tagging_metrics.entity_scores(gold, tags)["f1"]
            f1_short = tagging_metrics.entity_scores([gold[i] for i in short],
                                                     [tags[i] for i in short])["f1"]
            results.setdefault(name, []).append(f1)
            results_short.setdefault(name, []).append(f1_short)
            print(f"  seed {seed} {name}: entity F1 {100 * f1:.2f}, on the sentences that fit "
                  f"a window {100 * f1_short:.2f} ({seconds[name][-1]:.0f} s)", flush=True)
    print()
    print(f"| tagger | entity F1 per seed ({', '.join(map(str, seeds))}) | mean | spread "
          "(std) | min-max | mean F1 on the sentences that fit a window (std) | s/run |")
    print("|---|---|---|---|---|---|---|")
    for name in variants:
        mean, spread, low, high = summary(results[name])
        short_mean, short_spread, _, _ = summary(results_short[name])
        per_seed = " ".join(f"{100 * v:.2f}" for v in results[name])
        print(f"| {name} | {per_seed} | {mean:.2f} | {spread:.2f} | {low:.2f}-{high:.2f} | "
              f"{short_mean:.2f} ({short_spread:.2f}) | {np.mean(seconds[name]):.0f} |")
    collapsed = {name: sum(f1 == 0 for f1 in f1s) for name, f1s in results.items()}
    if any(collapsed.values()):
        print(f"runs that collapsed (F1 0: every word tagged O): {collapsed}")
    if "reference" in results and "ours" in results:
        ref_mean, ref_spread, _, _ = summary(results["reference"])
        ours_mean = summary(results["ours"])[0]
        goal = ref_mean - ref_spread / 2
        print(f"\ngoal: ours' mean {ours_mean:.2f} >= reference mean - spread/2 = {goal:.2f}: "
              f"{'met' if ours_mean >= goal else 'NOT met'}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
