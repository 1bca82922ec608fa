"""Records what google-research/electra's pretraining computes (tests/test_electra_model.py).

Run once, in one process, with a copy of google-research/electra:

    python3 tests/data/electra_model/make_expected.py --original_repo=/tmp/electra

The original's `PretrainingModel` and `optimization.create_optimizer` are built in a TF1 graph
(through `tools.original.load_electra_module`) on fed batches, for each case of CASES (tiny
configs: vocab 30, max_seq_length 16, mask_prob 0.25 so max_predictions_per_seq 4, H 16, L 2,
dropout 0, initializer_range 0.2). Its random draws are fixed: in its `pretrain_helpers`,
`tf.random.categorical` (the masked positions) and `tf.random.uniform` (the 85% [MASK] decision,
the Gumbel noise) return fed arrays, so its masking and sampling code runs as written on known
draws. Row 0's first two positions are the same position (a duplicate draw). The weights start
from the original's initializers (graph seed INIT_SEED), with every LayerNorm gamma/beta and bias
moved by N(0, 0.1) so none is trivially 1 or 0. The learning rate is fed with the value
create_optimizer computes from global_step before the step (its unordered `global_step + 1`,
as in tests/data/classifier_model/make_expected.py).

Outputs, per case, in <case>/:
  init.ckpt.*: the starting weights, under the original names (no optimizer slots);
  draws.npz: per step s (6 steps): input_ids, input_mask, segment_ids [6, B, S], positions,
    mask_uniform [6, B, N], gumbel_uniform [6, B, N, V] (the fed draws);
  forward.npz: step 0's tensors at the initial weights: masked_input_ids, masked_lm_positions,
    masked_lm_ids, masked_lm_weights, mlm_logits [B, N, V]; with the ELECTRA objective also
    sampled_ids [B, N], fake_input_ids, disc_labels, disc_logits [B, S];
  after_3_steps.npz: every variable after 3 steps (weights, adam_m, adam_v), by name;
  expected.json: the hparams, the original's model configs (discriminator, generator), the
    losses of step 0 at the initial weights, per step (3) the loss terms and learning rate,
    global_step, the eval metrics of metric_fn over batches 0 and 1 at the initial weights
    (updated twice, as Estimator.evaluate with 2 steps) and the variables of the training graph
    (name, shape, dtype);
and for CONTINUED_CASE also model.ckpt-3.* (the original's training checkpoint after 3 steps, all
its variables, as its Estimator's Saver writes them) and, in expected.json, the 3 steps it then
takes on batches 3-5 with after_6_steps.npz, and the steps it takes from bert_tf's checkpoint
after bert_tf's 3 steps (ours_then_original_steps; for every variable the largest difference
from after_6_steps.npz relative to the variable's largest magnitude,
ours_then_original_max_difference); and discriminator_forward.npz: the original's
`modeling.BertModel` (is_training False, its default scope `electra/`, init.ckpt's weights) on
the lines of extract_input.txt laid out as extract_features.py lays them out ([CLS] a [SEP]
(b [SEP]), padded to 16): `input_ids` [n, 16], `all_encoder_layers` [L, n, 16, H].
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_electra_module  # noqa: E402

v1 = tf.compat.v1

BATCH_SIZE = 3
SEQ_LENGTH = 16
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(5, 30)]
# Real lengths of the rows (row 0 full, rows 1 and 2 padded), and where the second segment starts.
LENGTHS = (16, 11, 7)
EXTRACT_LINES = ("w5 w6 w7 ||| w8 w9 w10", "w11 w12 w13 w14 w15", "w29 w28 ||| w27")
STEPS = 6
RECORDED_STEPS = 3
INIT_SEED = 20261125
DATA_SEED = 7
CONTINUED_CASE = "electra"

COMMON = dict(
    vocab_size=len(VOCAB), max_seq_length=SEQ_LENGTH, mask_prob=0.25, learning_rate=1e-3,
    num_train_steps=10, num_warmup_steps=2, weight_decay_rate=0.01, model_size="small",
    model_hparam_overrides=dict(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        max_position_embeddings=24, initializer_range=0.2),
)
CASES = {
    # both projections: electra/embeddings_project 8->16, generator/embeddings_project 8->12
    "electra": dict(embedding_size=8, generator_hidden_size=0.75),
    # no embedding_size: E = H = 16; generator H 8 with 1 layer, its projection 16->8
    "electra_no_embedding_size": dict(
        embedding_size=None, generator_hidden_size=0.5, generator_layers=0.5,
        lr_decay_power=0.5, temperature=0.7),
    "untied_disallow": dict(embedding_size=8, generator_hidden_size=0.5,
                            untied_generator_embeddings=True, disallow_correct=True),
    "uniform_generator": dict(embedding_size=None, uniform_generator=True, disc_weight=20.0),
    "masked_lm": dict(embedding_size=8, electra_objective=False),
    # the generator is the discriminator's network, every weight shared
    "tied_generator": dict(embedding_size=8, untied_generator=False),
}


def make_batches(rng, n_predictions):
    """STEPS batches of rows [CLS] a.. [SEP] b.. [SEP] [PAD].. and their draws."""
    vocab_size = len(VOCAB)
    out = {k: [] for k in ("input_ids", "input_mask", "segment_ids", "positions",
                           "mask_uniform", "gumbel_uniform")}
    for _ in range(STEPS):
        ids = np.zeros((BATCH_SIZE, SEQ_LENGTH), np.int32)
        mask = np.zeros_like(ids)
        segments = np.zeros_like(ids)
        positions = np.zeros((BATCH_SIZE, n_predictions), np.int32)
        for row, length in enumerate(LENGTHS):
            split = length // 2
            ids[row, :length] = rng.randint(5, vocab_size, length)
            ids[row, 0] = 2
            ids[row, split] = 3
            ids[row, length - 1] = 3
            mask[row, :length] = 1
            segments[row, split + 1:length] = 1
            candidates = [p for p in range(length) if ids[row, p] >= 5]
            positions[row] = rng.choice(candidates, n_predictions, replace=True)
        positions[0, 1] = positions[0, 0]  # a duplicate draw
        out["input_ids"].append(ids)
        out["input_mask"].append(mask)
        out["segment_ids"].append(segments)
        out["positions"].append(positions)
        out["mask_uniform"].append(rng.uniform(size=(BATCH_SIZE, n_predictions)))
        out["gumbel_uniform"].append(rng.uniform(size=(BATCH_SIZE, n_predictions, vocab_size)))
    return {k: np.asarray(v, np.float32 if "uniform" in k else np.int32) for k, v in out.items()}


class OriginalGraph:
    """The original's pretraining graph with fed features and fed random draws."""

    def __init__(self, rp, hparams, data_dir):
        self.graph = tf.Graph()
        self.config = rp.configure_pretraining.PretrainingConfig("m", data_dir, **hparams)
        n = self.config.max_predictions_per_seq
        vocab_size = self.config.vocab_size
        captured = {}
        helpers = rp.pretrain_helpers
        with self.graph.as_default():
            v1.set_random_seed(INIT_SEED)
            self.features = {k: v1.placeholder(tf.int32, [BATCH_SIZE, SEQ_LENGTH], name=k)
                             for k in ("input_ids", "input_mask", "segment_ids")}
            self.draws = {
                "positions": v1.placeholder(tf.int32, [BATCH_SIZE, n], name="positions"),
                "mask_uniform": v1.placeholder(tf.float32, [BATCH_SIZE, n], name="mask_uniform"),
                "gumbel_uniform": v1.placeholder(tf.float32, [BATCH_SIZE, n, vocab_size],
                                                 name="gumbel_uniform"),
            }

            def categorical(logits, num_samples, dtype=None):
                assert num_samples == n and dtype == tf.int32
                return self.draws["positions"]

            def uniform(shape, minval=0, maxval=1):
                assert minval == 0 and maxval == 1
                return self.draws["mask_uniform" if len(shape) == 2 else "gumbel_uniform"]

            fixed_tf = types.ModuleType("tensorflow")
            fixed_tf.__dict__.update(helpers.tf.__dict__)
            fixed_tf.random = types.SimpleNamespace(categorical=categorical, uniform=uniform)
            original_mask, original_fake = helpers.mask, rp.PretrainingModel._get_fake_data
            optimizer_class = rp.optimization.AdamWeightDecayOptimizer
            original_init = optimizer_class.__init__

            def mask(*args, **kwargs):
                captured["masked"] = original_mask(*args, **kwargs)
                return captured["masked"]

            def get_fake_data(model, inputs, mlm_logits):
                captured["fake"] = original_fake(model, inputs, mlm_logits)
                return captured["fake"]

            def recording_init(optimizer, learning_rate, **kwargs):
                captured["learning_rate"] = learning_rate
                original_init(optimizer, learning_rate, **kwargs)

            saved_tf = helpers.tf
            helpers.tf, helpers.mask = fixed_tf, mask
            rp.PretrainingModel._get_fake_data = get_fake_data
            optimizer_class.__init__ = recording_init
            try:
                model = rp.PretrainingModel(self.config, self.features, True)
                self.train_op = rp.optimization.create_optimizer(
                    model.total_loss, self.config.learning_rate, self.config.num_train_steps,
                    weight_decay_rate=self.config.weight_decay_rate, use_tpu=False,
                    warmup_steps=self.config.num_warmup_steps,
                    lr_decay_power=self.config.lr_decay_power)
            finally:
                helpers.tf, helpers.mask = saved_tf, original_mask
                rp.PretrainingModel._get_fake_data = original_fake
                optimizer_class.__init__ = original_init
            self.model = model
            self.bert_config = model._bert_config.to_dict()
            self.generator_config = (rp.get_generator_config(self.config, model._bert_config)
                                     .to_dict())
            self.learning_rate = captured["learning_rate"]
            self.global_step = v1.train.get_global_step()
            masked, self.electra = captured["masked"], self.config.electra_objective
            self.outputs = {
                "masked_input_ids": masked.input_ids,
                "masked_lm_positions": masked.masked_lm_positions,
                "masked_lm_ids": masked.masked_lm_ids,
                "masked_lm_weights": masked.masked_lm_weights,
                "mlm_logits": model.mlm_output.logits,
            }
            self.losses = {"total_loss": model.total_loss, "masked_lm_loss": model.mlm_output.loss}
            if self.electra:
                fake = captured["fake"]
                self.outputs.update(
                    sampled_ids=tf.argmax(fake.sampled_tokens, -1, output_type=tf.int32),
                    fake_input_ids=fake.inputs.input_ids,
                    disc_labels=fake.is_fake_tokens,
                    disc_logits=self.graph.get_tensor_by_name(
                        "discriminator_predictions/Squeeze:0"))
                self.losses["disc_loss"] = (model.total_loss - self.config.gen_weight
                                            * model.mlm_output.loss) / self.config.disc_weight
            metric_fn, metric_args = model.eval_metrics
            self.metrics = metric_fn(*metric_args)
            self.variables = v1.global_variables()
            self.trainable = v1.trainable_variables()
            init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
            self.saver = v1.train.Saver(self.variables)
            self.init_saver = v1.train.Saver({v.op.name: v for v in self.trainable})
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def perturb(self, rng):
        """Moves every LayerNorm gamma/beta and bias by N(0, 0.1)."""
        with self.graph.as_default():
            for var in self.trainable:
                if var.op.name.endswith(("gamma", "beta", "bias")):
                    value = self.session.run(var)
                    var.load(value + rng.normal(0, 0.1, value.shape).astype(np.float32),
                             self.session)

    def feed(self, batches, step):
        feed = {self.features[k]: batches[k][step] for k in self.features}
        feed.update({self.draws[k]: batches[k][step] for k in self.draws})
        return feed

    def forward(self, batches, step):
        return self.session.run((self.outputs, self.losses), self.feed(batches, step))

    def evaluate(self, batches, steps):
        """metric_fn's values after one update per batch (Estimator.evaluate), plus its mean
        loss and global_step."""
        losses = []
        for step in steps:
            updates = {k: update for k, (_, update) in self.metrics.items()}
            _, loss = self.session.run((updates, self.losses["total_loss"]),
                                       self.feed(batches, step))
            losses.append(loss)
        values = self.session.run({k: value for k, (value, _) in self.metrics.items()})
        values = {k: float(v) for k, v in values.items()}
        values["loss"] = float(np.mean(np.asarray(losses, np.float32)))
        values["global_step"] = int(self.session.run(self.global_step))
        return values

    def train(self, batches, steps):
        records = []
        for step in steps:
            feed = self.feed(batches, step)
            global_step, learning_rate = self.session.run((self.global_step, self.learning_rate))
            feed[self.learning_rate] = learning_rate
            _, losses = self.session.run((self.train_op, self.losses), feed)
            record = {k: float(v) for k, v in losses.items()}
            record.update(step=int(global_step), learning_rate=float(learning_rate))
            records.append(record)
        return records

    def state(self):
        values = self.session.run({v.op.name: v for v in self.variables})
        return {k: np.asarray(v, np.float32) for k, v in values.items() if k != "global_step"}


def discriminator_forward(rp, config, init_checkpoint, vocab_file):
    """The original discriminator's encoder on EXTRACT_LINES (see the module docstring)."""
    tokenizer = rp.pretrain_helpers.tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    rows = {"input_ids": [], "input_mask": [], "segment_ids": []}
    for line in EXTRACT_LINES:
        tokens, segments = ["[CLS]"], [0]
        for segment, text in enumerate(line.split(" ||| ")):
            words = tokenizer.tokenize(text) + ["[SEP]"]
            tokens += words
            segments += [segment] * len(words)
        pad = SEQ_LENGTH - len(tokens)
        rows["input_ids"].append(tokenizer.convert_tokens_to_ids(tokens) + [0] * pad)
        rows["input_mask"].append([1] * len(tokens) + [0] * pad)
        rows["segment_ids"].append(segments + [0] * pad)
    rows = {k: np.asarray(v, np.int32) for k, v in rows.items()}
    graph = tf.Graph()
    with graph.as_default():
        bert_config = rp.modeling.BertConfig.from_dict(rp.training_utils.get_bert_config(
            config).to_dict())
        model = rp.modeling.BertModel(
            bert_config=bert_config, is_training=False, input_ids=tf.constant(rows["input_ids"]),
            input_mask=tf.constant(rows["input_mask"]),
            token_type_ids=tf.constant(rows["segment_ids"]), use_one_hot_embeddings=False,
            embedding_size=config.embedding_size)
        saver = v1.train.Saver(v1.global_variables())
        with v1.Session(graph=graph) as session:
            saver.restore(session, init_checkpoint)
            layers = session.run(model.get_all_encoder_layers())
    return {"input_ids": rows["input_ids"], "all_encoder_layers": layers}


# -- bert_tf's side, shared with tests/test_electra_model.py -------------------------------------
def fixed_draws_class():
    """`FixedDraws`: bert_tf's `RandomDraws` returning the recording's draws of one step, held
    in variables so that a traced step reads the ones assigned before it (`set_step`)."""
    from bert_tf.electra import masking

    class FixedDraws(masking.RandomDraws):
        def __init__(self, draws, **kwargs):
            super().__init__(**kwargs)
            self.all = draws
            self.positions = tf.Variable(draws["positions"][0], trainable=False)
            self.mask_uniform = tf.Variable(draws["mask_uniform"][0], trainable=False)
            self.gumbel_uniform = tf.Variable(draws["gumbel_uniform"][0], trainable=False)

        def set_step(self, step):
            for name in ("positions", "mask_uniform", "gumbel_uniform"):
                getattr(self, name).assign(self.all[name][step])

        def categorical(self, logits, num_samples):
            assert num_samples == self.positions.shape[1]
            return tf.identity(self.positions)

        def uniform(self, shape):
            rank = shape.shape[0] if isinstance(shape, tf.Tensor) else len(shape)
            return tf.identity(self.mask_uniform if rank == 2 else self.gumbel_uniform)

    return FixedDraws


def our_trainer(hparams, data_dir, output_dir, draws, init_checkpoint=None):
    """bert_tf's `ElectraPretrainer` of `hparams` with `draws`, as the recording trains: batch
    3, a step per call, no checkpoint pruning."""
    from bert_tf.electra.config import discriminator_config, generator_config
    from bert_tf.electra.hparams import PretrainingHparams
    from bert_tf.electra.pretraining_task import (
        ElectraOptions, ElectraPretrainer, ElectraPretrainingTask, objective_from_hparams)

    hp = PretrainingHparams("m", str(data_dir), **hparams)
    objective = objective_from_hparams(hp, {token: i for i, token in enumerate(VOCAB)})
    task = ElectraPretrainingTask(objective, generator_config(hp), hp.max_seq_length, draws=draws)
    options = ElectraOptions(
        output_dir=str(output_dir), input_files=[], init_checkpoint=init_checkpoint,
        train_batch_size=BATCH_SIZE, learning_rate=hp.learning_rate,
        num_train_steps=hp.num_train_steps, num_warmup_steps=hp.num_warmup_steps,
        lr_decay_power=hp.lr_decay_power, weight_decay_rate=hp.weight_decay_rate,
        max_seq_length=hp.max_seq_length, save_checkpoints_steps=1000, iterations_per_loop=1,
        keep_checkpoint_max=0)
    return ElectraPretrainer(discriminator_config(hp), task, options)


def our_steps(trainer, fixed, batches, steps):
    """Runs `steps` (recording step numbers) through the trainer's train function with the
    recording's batches and draws; returns each step's values (losses, learning_rate, ...)."""
    data = {k: batches[k][steps[0]:] for k in ("input_ids", "input_mask", "segment_ids")}
    iterator = iter(tf.data.Dataset.from_tensor_slices(data))
    stream = types.SimpleNamespace(get_next=lambda: next(iterator))
    train = trainer.make_train_function(stream)
    history = []
    for step in steps:
        fixed.set_step(step)
        values = train(tf.constant(1, tf.int32))
        history.append({k: float(v.numpy()[0]) for k, v in values.items()})
    return history


def ours_then_original(rp, hparams, data_dir, out_dir, batches):
    """bert_tf trains 3 steps from init.ckpt on the recording's draws and saves its checkpoint;
    the original's Saver restores it (it needs every variable of the original's training graph,
    Adam slots and global_step included, with its shape and dtype) and takes steps 4-6."""
    work = tempfile.mkdtemp()
    try:
        fixed = fixed_draws_class()(batches)
        trainer = our_trainer(hparams, data_dir, work, fixed,
                              init_checkpoint=os.path.join(out_dir, "init.ckpt"))
        trainer.restore()
        our_steps(trainer, fixed, batches, list(range(RECORDED_STEPS)))
        prefix = trainer.save()
        graph = OriginalGraph(rp, hparams, data_dir)
        with graph.graph.as_default():
            graph.saver.restore(graph.session, prefix)
        return graph.train(batches, range(RECORDED_STEPS, STEPS)), graph.state()
    finally:
        shutil.rmtree(work)


def record_case(rp, name, case, data_dir):
    out_dir = os.path.join(HERE, name)
    os.makedirs(out_dir, exist_ok=True)
    hparams = dict(COMMON, **case)
    graph = OriginalGraph(rp, hparams, data_dir)
    rng = np.random.RandomState(DATA_SEED)
    graph.perturb(rng)
    batches = make_batches(rng, graph.config.max_predictions_per_seq)
    np.savez_compressed(os.path.join(out_dir, "draws.npz"), **batches)
    with graph.graph.as_default():
        graph.init_saver.save(graph.session, os.path.join(out_dir, "init.ckpt"),
                              write_meta_graph=False, write_state=False)
    outputs, losses = graph.forward(batches, 0)
    np.savez_compressed(os.path.join(out_dir, "forward.npz"), **outputs)
    expected = {
        "hparams": hparams,
        "max_predictions_per_seq": graph.config.max_predictions_per_seq,
        "bert_config": graph.bert_config,
        "generator_config": graph.generator_config,
        "forward_losses": {k: float(v) for k, v in losses.items()},
        "eval": graph.evaluate(batches, (0, 1)),
        "steps": graph.train(batches, range(RECORDED_STEPS)),
        "global_step": int(graph.session.run(graph.global_step)),
        "variables": [{"name": v.op.name, "shape": v.shape.as_list(),
                       "dtype": v.dtype.base_dtype.name} for v in graph.variables],
    }
    np.savez_compressed(os.path.join(out_dir, "after_3_steps.npz"), **graph.state())
    if name == CONTINUED_CASE:
        with graph.graph.as_default():
            graph.saver.save(graph.session, os.path.join(out_dir, "model.ckpt"),
                             global_step=graph.global_step, write_meta_graph=False,
                             write_state=False)
        expected["continued_steps"] = graph.train(batches, range(RECORDED_STEPS, STEPS))
        expected["continued_global_step"] = int(graph.session.run(graph.global_step))
        np.savez_compressed(os.path.join(out_dir, "after_6_steps.npz"), **graph.state())
        steps, state = ours_then_original(rp, hparams, data_dir, out_dir, batches)
        expected["ours_then_original_steps"] = steps
        original = dict(np.load(os.path.join(out_dir, "after_6_steps.npz")))
        expected["ours_then_original_max_difference"] = {
            k: float(np.max(np.abs(state[k] - v)) / max(float(np.max(np.abs(v))), 1e-30))
            for k, v in original.items()}
        with open(os.path.join(HERE, "extract_input.txt"), "w") as f:
            f.write("\n".join(EXTRACT_LINES) + "\n")
        np.savez_compressed(os.path.join(out_dir, "discriminator_forward.npz"), **(
            discriminator_forward(rp, graph.config, os.path.join(out_dir, "init.ckpt"),
                                  os.path.join(data_dir, "vocab.txt"))))
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print("recorded", name, expected["forward_losses"], [s["total_loss"] for s in expected["steps"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    rp = load_electra_module(args.original_repo)
    with open(os.path.join(HERE, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    data_dir = tempfile.mkdtemp()
    try:
        shutil.copy(os.path.join(HERE, "vocab.txt"), os.path.join(data_dir, "vocab.txt"))
        for name in args.cases.split(","):
            record_case(rp, name, CASES[name], data_dir)
    finally:
        shutil.rmtree(data_dir)


if __name__ == "__main__":
    main()
