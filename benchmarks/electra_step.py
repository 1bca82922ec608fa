"""ELECTRA-Small's pretraining step, bert_tf against google-research/electra in the same run
(the `step` row of benchmarks/electra.py; also runnable alone).

Both train ELECTRA-Small as configure_pretraining.py defines it (discriminator H256 L12 with
embeddings of 128, generator H64, vocab 30522, seq 128, 19 predictions per sequence, dropout
0.1, float32) on one fixed synthetic batch of full-length rows, with their own random masking
and sampling: ours is the real training step of `ElectraPretrainer` (masking, generator, Gumbel
sampling, discriminator, both losses, gradients, global-norm clipping, AdamWeightDecay,
global_step); the original is its `PretrainingModel` + `optimization.create_optimizer` graph
through a tf.compat.v1 session (`tools.original.load_electra_module`). After warm-up steps,
the two alternate in blocks of --steps single-step calls for --rounds rounds, so that both see
the same machine (the cores may be shared); each row reports the median and fastest step and
the sum over all timed steps.

    python3 benchmarks/electra_step.py --original_repo=/tmp/electra --batch_sizes=8,32
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


ELECTRA_SMALL = dict(model_size="small", max_seq_length=128)
SPECIAL = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
VOCAB_SIZE = 30522


def write_vocab(path):
    tokens = [f"[unused{i}]" for i in range(VOCAB_SIZE)]
    for token, index in SPECIAL.items():
        tokens[index] = token
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")


def synthetic_batch(batch_size, seq_length, seed=0):
    """Full-length rows [CLS] a.. [SEP] b.. [SEP] (the builder packs sequences to the length)."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(1000, VOCAB_SIZE, (batch_size, seq_length)).astype(np.int32)
    split = seq_length // 2
    ids[:, 0], ids[:, split], ids[:, -1] = 101, 102, 102
    segments = np.zeros_like(ids)
    segments[:, split + 1:] = 1
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segments}


class Ours:
    """Our training step (the trainer's train function, one step per call)."""

    def __init__(self, hparams, batch, data_dir):
        import tensorflow as tf
        from bert_tf.electra.config import discriminator_config, generator_config
        from bert_tf.electra.hparams import PretrainingHparams
        from bert_tf.electra.pretraining_task import (
            ElectraOptions, ElectraPretrainer, ElectraPretrainingTask, objective_from_hparams)

        hp = PretrainingHparams("bench", data_dir, **hparams)
        task = ElectraPretrainingTask(objective_from_hparams(hp, SPECIAL), generator_config(hp),
                                      hp.max_seq_length)
        options = ElectraOptions(
            output_dir="/nonexistent", input_files=[], train_batch_size=len(batch["input_ids"]),
            learning_rate=hp.learning_rate, num_train_steps=hp.num_train_steps,
            num_warmup_steps=hp.num_warmup_steps, max_seq_length=hp.max_seq_length)
        self.trainer = ElectraPretrainer(discriminator_config(hp), task, options)
        data = {k: tf.constant(v) for k, v in batch.items()}
        iterator = iter(tf.data.Dataset.from_tensors(data).repeat())
        stream = type("Stream", (), {"get_next": staticmethod(lambda: next(iterator))})
        self.train = self.trainer.make_train_function(stream)
        self.tf = tf

    def step(self):
        losses = self.train(self.tf.constant(1, self.tf.int32))["total_loss"].numpy()
        assert np.all(np.isfinite(losses))


class Original:
    """The original's training graph (model_fn's TRAIN branch) in a tf.compat.v1 session."""

    def __init__(self, repo, hparams, batch, data_dir):
        import tensorflow as tf
        from tools.original import load_electra_module

        rp = load_electra_module(repo)
        v1 = tf.compat.v1
        config = rp.configure_pretraining.PretrainingConfig("bench", data_dir, **hparams)
        self.graph = tf.Graph()
        with self.graph.as_default():
            features = {k: tf.constant(v) for k, v in batch.items()}
            model = rp.PretrainingModel(config, features, True)
            self.loss = model.total_loss
            self.train_op = rp.optimization.create_optimizer(
                model.total_loss, config.learning_rate, config.num_train_steps,
                weight_decay_rate=config.weight_decay_rate, use_tpu=False,
                warmup_steps=config.num_warmup_steps, lr_decay_power=config.lr_decay_power)
            init = v1.global_variables_initializer()
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def step(self):
        _, loss = self.session.run((self.train_op, self.loss))
        assert np.isfinite(loss)


def measure_step_rows(repo, batch_sizes, steps, warmup, rounds):
    """[(batch_size, {"ours": [seconds per step], "original": [...]})]; no original without
    `repo`."""
    rows = []
    data_dir = tempfile.mkdtemp()
    write_vocab(os.path.join(data_dir, "vocab.txt"))
    for batch_size in batch_sizes:
        hparams = dict(ELECTRA_SMALL, train_batch_size=batch_size)
        batch = synthetic_batch(batch_size, 128)
        runners = {"ours": Ours(hparams, batch, data_dir)}
        if repo:
            runners["original"] = Original(repo, hparams, batch, data_dir)
        times = {k: [] for k in runners}
        for runner in runners.values():
            for _ in range(warmup):
                runner.step()
        # Alternating blocks, so both see the same machine (the cores are shared).
        for _ in range(rounds):
            for name, runner in runners.items():
                for _ in range(steps):
                    start = time.perf_counter()
                    runner.step()
                    times[name].append(time.perf_counter() - start)
        rows.append((batch_size, times))
    return rows


def summarize(times):
    return {name: (float(np.median(t)), min(t), sum(t)) for name, t in times.items()}


def step_row_cells(batch_size, times):
    """The cells of benchmarks/electra.py's table for one batch size."""
    stats = summarize(times)
    ours = stats["ours"]
    cells = [f"ELECTRA-Small pretraining step, seq 128, batch {batch_size}, float32",
             f"{ours[0]:.3f} s/step median, {ours[1]:.3f} best"]
    if "original" in stats:
        orig = stats["original"]
        cells += [f"{orig[0]:.3f} s/step median, {orig[1]:.3f} best",
                  f"{orig[0] / ours[0]:.2f}x", ">= 1.0x",
                  f"sum of {len(times['ours'])} steps each: {ours[2]:.1f} s vs {orig[2]:.1f} s "
                  f"({orig[2] / ours[2]:.2f}x); best step {orig[1] / ours[1]:.2f}x"]
    else:
        cells += ["-", "-", ">= 1.0x", "no --original_repo"]
    return tuple(cells)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", default=None,
                        help="a copy of google-research/electra (else ours only)")
    parser.add_argument("--batch_sizes", default="8")
    parser.add_argument("--steps", type=int, default=1, help="timed steps per block")
    parser.add_argument("--rounds", type=int, default=15, help="alternating blocks per side")
    parser.add_argument("--warmup_steps", type=int, default=2)
    args = parser.parse_args(argv)
    from common import print_machine_header

    print_machine_header()
    rows = measure_step_rows(args.original_repo, [int(b) for b in args.batch_sizes.split(",")],
                             args.steps, args.warmup_steps, args.rounds)
    print(f"1-minute load average at the end: {os.getloadavg()[0]:.2f}")
    print("| benchmark | bert_tf | original | speed-up | goal | notes |")
    print("|---|---|---|---:|---|---|")
    for batch_size, times in rows:
        print("| " + " | ".join(step_row_cells(batch_size, times)) + " |")


if __name__ == "__main__":
    sys.exit(main())
