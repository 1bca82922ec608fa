"""What every benchmark does the same way: the header naming the machine, the matmul peak and
BERT's FLOP counts, timing training steps (ours and the original's graph), and the examples of
real length distributions (../shared/lengths.json) the fine-tuning benchmarks run on. Importing
it does not import TensorFlow (the data benchmarks avoid it)."""

import importlib.metadata
import itertools
import json
import os
import sys
import time
from typing import NamedTuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)  # measure this checkout's bert_tf, installed or not

from bert_tf.training import cpu_features  # noqa: E402

BERT_BASE = dict(
    vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    initializer_range=0.02,
)


def matmul_peak_gflops(dtype="float32", sizes=(1024, 2048, 4096), seconds=3.0):
    """Best GFLOP/s of n x n x n matmuls in `dtype`, through TensorFlow, over ~`seconds` per
    size. Several sizes, because none is always the fastest here: measured on this shared
    machine, the 4096^3 float32 matmul ran at 204-232 GFLOP/s and the 2048^3 one at 201-218
    across runs, and in bfloat16 1024^3 reached 1080 GFLOP/s against 488 for 4096^3 (its
    operands leave the caches). The best over sizes is the least disturbed estimate of the peak."""
    import tensorflow as tf

    best = 0.0
    for n in sizes:
        a = tf.cast(tf.random.normal([n, n], dtype=tf.float32), dtype)
        b = tf.cast(tf.random.normal([n, n], dtype=tf.float32), dtype)
        matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)[:1, :1]))
        matmul(a, b).numpy()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            t0 = time.perf_counter()
            matmul(a, b).numpy()
            best = max(best, 2.0 * n**3 / (time.perf_counter() - t0) / 1e9)
    return best


def machine_header():
    """The lines every benchmark prints first, so that each table names what it was measured
    on: the CPU model and the flags that decide TensorFlow's kernels (a leading '-' marks an
    absent one), whether bf16/fp16 are native, the TensorFlow version, the oneDNN setting and
    the load average (the machine may be shared)."""
    info = cpu_features.read_cpu_info()
    words = {True: "yes", False: "no", None: "unknown"}
    native = ", ".join(f"{kind} {words[info.native(kind)]}" for kind in cpu_features.NATIVE_FLAGS)
    try:
        tf_version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        tf_version = "not installed"
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    onednn = ("on (TensorFlow's default on x86; TF_ENABLE_ONEDNN_OPTS unset)" if onednn is None
              else f"TF_ENABLE_ONEDNN_OPTS={onednn}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join([
        f"CPU: {info.describe()}; {os.cpu_count()} logical CPU(s)",
        f"native 16-bit arithmetic: {native}",
        f"TensorFlow {tf_version}; oneDNN {onednn}",
        f"load average (1, 5, 15 min) at start: {load}",
    ])


def print_machine_header():
    print(machine_header(), flush=True)
    print()


def encoder_forward_flops(config, seq_length):
    """Matmul FLOPs of one sequence through the encoder and pooler (forward only)."""
    h, i, s = config["hidden_size"], config["intermediate_size"], seq_length
    per_layer = 2 * s * h * h * 4 + 2 * s * s * h * 2 + 2 * s * h * i * 2
    return config["num_hidden_layers"] * per_layer + 2 * h * h


def pretraining_forward_flops(config, seq_length, max_predictions_per_seq):
    """Matmul FLOPs of one sequence through the encoder and both pretraining heads."""
    h, v, p = config["hidden_size"], config["vocab_size"], max_predictions_per_seq
    return encoder_forward_flops(config, seq_length) + p * (2 * h * h + 2 * h * v) + 2 * h * 2


def pretraining_step_flops(config, seq_length, max_predictions_per_seq):
    """A training step costs the forward pass and about twice it again for the gradients."""
    return 3 * pretraining_forward_flops(config, seq_length, max_predictions_per_seq)


def print_table(headers, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))


def cpu_description():
    """'<model name>; <n> logical CPUs; flags: <SIMD flags>' from /proc/cpuinfo (for headers)."""
    model, flags, count = "unknown CPU", [], 0
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name":
                    model, count = value, count + 1
                elif key == "flags" and not flags:
                    flags = value.split()
    except OSError:
        pass
    simd = [f for f in flags if f.startswith(("avx", "amx", "fma", "sse4"))]
    return f"{model}; {count} logical CPUs; flags: {' '.join(simd) or 'n/a'}"


# --- training steps: ours (the Trainer's) and the original's (a tf.compat.v1 graph) ------------

def call_timings(call, seconds):
    """Seconds per call of `call` (numpy array), for at least `seconds` of calls and 5 calls,
    after two warm-up calls."""
    import numpy as np

    call()
    call()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return np.array(times)


def time_interleaved(step_fns, steps, warmup_steps):
    """{name: (median, fastest) seconds per call} of the callables in `step_fns`, after
    `warmup_steps` calls of each, timed in turns (`timings_interleaved`)."""
    return {name: (t["median"], t["fastest"])
            for name, t in timings_interleaved(step_fns, steps, warmup_steps).items()}


def timings_interleaved(step_fns, steps, warmup_steps):
    """{name: {"median", "fastest", "cpu_median", "cpu_fastest", "total", "cpu_total"}}
    seconds per call and summed over the calls (wall time, and CPU time of this process: all
    its threads) of the callables in `step_fns`, after
    `warmup_steps` calls of each, timed in turns (one call of each per round, the order
    reversed every other round, so that none always runs right after the same other) so that a
    change of load on the shared cores falls on all of them alike. The CPU time is the steadier
    figure on a loaded machine when the callables run in this process (it does not count the
    waits for a core, but does count the work of threads that spin while they wait)."""
    import numpy as np

    for step in step_fns.values():
        for _ in range(warmup_steps):
            step()
    wall = {name: [] for name in step_fns}
    cpu = {name: [] for name in step_fns}
    for round_index in range(steps):
        order = list(step_fns.items())
        for name, step in order[::-1] if round_index % 2 else order:
            start, cpu_start = time.perf_counter(), time.process_time()
            step()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
    return {name: {"median": float(np.median(wall[name])), "fastest": min(wall[name]),
                   "cpu_median": float(np.median(cpu[name])), "cpu_fastest": min(cpu[name]),
                   "total": float(np.sum(wall[name])), "cpu_total": float(np.sum(cpu[name]))}
            for name in step_fns}


class SyntheticStream:
    """A fixed batch (dict of numpy arrays), repeated: the step's cost without the input
    pipeline's. Has the trainer's stream interface (`get_next`)."""

    def __init__(self, batch):
        import tensorflow as tf

        tensors = {k: tf.constant(v) for k, v in batch.items()}
        self.iterator = iter(tf.data.Dataset.from_tensors(tensors).repeat())

    def get_next(self):
        return next(self.iterator)


def pretraining_batch(batch_size, seq_length, max_predictions, vocab_size, seed=0):
    """One random pretraining batch in the records' layout ({name: numpy array}, int32 but
    masked_lm_weights float32): random tokens, no padding, segment B the second half,
    `max_predictions` distinct sorted positions (never 0, the [CLS]) of weight 1, random
    sentence labels."""
    import numpy as np

    rng = np.random.RandomState(seed)
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq_length), max_predictions,
                                             replace=False)) for _ in range(batch_size)])
    batch = {
        "input_ids": rng.randint(0, vocab_size, (batch_size, seq_length)),
        "input_mask": np.ones((batch_size, seq_length)),
        "segment_ids": (np.arange(seq_length)[None, :] >= seq_length // 2).repeat(batch_size, 0),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.randint(0, vocab_size, (batch_size, max_predictions)),
        "masked_lm_weights": np.ones((batch_size, max_predictions)),
        "next_sentence_labels": rng.randint(0, 2, (batch_size, 1)),
    }
    return {k: np.asarray(v, np.float32 if k == "masked_lm_weights" else np.int32)
            for k, v in batch.items()}


def train_function_step(trainer, batch):
    """A callable running one step of `trainer` (a `Trainer` or subclass: its real step,
    whatever its optimizer; no checkpoint writes) on the fixed `batch`, one step per call (so
    the fastest step can be told from steps slowed down by other work on the shared cores)."""
    import numpy as np
    import tensorflow as tf

    train = trainer.make_train_function(SyntheticStream(batch))

    def step():
        loss = train(tf.constant(1, tf.int32))["total_loss"].numpy()
        assert np.all(np.isfinite(loss))

    return step


def trainer_step(config, task, batch, mixed_precision="none", learning_rate=5e-5):
    """A callable running one real training step of `Trainer` with `task` (forward, backward,
    clipping, AdamWeightDecay, global_step; no checkpoint writes) on the fixed `batch`, with
    10**6 training steps and 100 warmup steps."""
    from bert_tf.training.trainer import Trainer, TrainerOptions

    options = TrainerOptions(
        output_dir="/nonexistent", train_batch_size=len(batch["input_ids"]),
        mixed_precision=mixed_precision, num_train_steps=10**6, num_warmup_steps=100,
        learning_rate=learning_rate)
    return train_function_step(Trainer(config, task, options), batch)


def original_session(build):
    """(session, what `build()` returned): a tf.compat.v1 session, its variables initialized,
    on a new graph in which `build()` built an original script's model (the original reads
    `shape[-1].value`, a TF1 TensorShape: TF1 shapes while it builds)."""
    import tensorflow as tf

    graph = tf.Graph()
    tf.compat.v1.disable_v2_tensorshape()
    try:
        with graph.as_default():
            built = build()
            init = tf.compat.v1.global_variables_initializer()
    finally:
        tf.compat.v1.enable_v2_tensorshape()
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    return session, built


def original_step(build_train_op, batch):
    """A callable running one float32 training step of an original script's graph, in a
    tf.compat.v1 session that stays open: `build_train_op(features)` (features: `batch` as
    constants) builds its model and optimizer (`optimization.create_optimizer` with
    use_tpu=False and trainer_step's schedule: 10**6 steps, 100 warmup) and returns
    (loss, train_op)."""
    import numpy as np
    import tensorflow as tf

    session, (loss, train_op) = original_session(
        lambda: build_train_op({k: tf.constant(v) for k, v in batch.items()}))

    def step():
        _, value = session.run([train_op, loss])
        assert np.isfinite(value)

    return step


# --- fine-tuning on real length distributions (benchmarks/padding.py, benchmarks/albert.py) ---

SHARED = os.path.join(os.path.dirname(REPO), "shared")
LENGTHS_FILE = os.path.join(SHARED, "lengths.json")
# Question pieces of a generated SQuAD window (+ [CLS] and two [SEP]).
SQUAD_QUERY_LENGTH = 12


def sample_lengths(set_name, count, max_seq_length, seed):
    """`count` lengths (numpy int) drawn (seeded) from the histogram `set_name` of
    lengths.json, capped at `max_seq_length` (None: uncapped)."""
    import numpy as np

    with open(LENGTHS_FILE, encoding="utf-8") as f:
        histogram = json.load(f)["sets"][set_name]
    values = np.array([int(k) for k in histogram])
    weights = np.array(list(histogram.values()), np.float64)
    lengths = np.random.RandomState(seed).choice(values, size=count, p=weights / weights.sum())
    return lengths if max_seq_length is None else np.minimum(lengths, max_seq_length)


def cut_positions(lengths, batch_size, max_seq_length, sort=True):
    """Mean positions computed per example when batches of `batch_size` are cut to their
    longest, rounded up to padding.DEFAULT_WIDTH: prediction (`sort`) sorts `lengths` within
    windows of input_pipeline.SORT_WINDOW_BATCHES batches first (what Trainer.predict does on
    one replica); training (not `sort`) cuts the batches in file order."""
    import numpy as np

    from bert_tf.training import input_pipeline, padding

    lengths = np.asarray(lengths)
    window = input_pipeline.SORT_WINDOW_BATCHES * batch_size if sort else len(lengths)
    total = 0
    for begin in range(0, len(lengths), window):
        part = lengths[begin:begin + window]
        ordered = np.sort(part)[::-1] if sort else part
        for start in range(0, len(ordered), batch_size):
            # A short last batch is padded to batch_size (prediction's pad_final_batch).
            longest = int(ordered[start:start + batch_size].max())
            total += batch_size * padding.padded_length(longest, max_seq_length)
    return total / len(lengths)


class OnePieceText:
    """Text of a given number of pieces, made of `words` (list of str) that the tokenizer makes
    one piece each, so that tokenizing it gives the lengths drawn (`rng`: a random.Random)."""

    def __init__(self, words):
        self.words = words

    def text(self, rng, pieces):
        return " ".join(rng.choice(self.words) for _ in range(pieces))

    def pair(self, rng, length):
        """Two texts a, b of `length` pieces with [CLS] a [SEP] b [SEP] (at least 5)."""
        inner = max(length - 3, 2)
        first = max(1, inner // 2 + rng.randint(-inner // 4, inner // 4))
        return self.text(rng, first), self.text(rng, max(inner - first, 1))


def batches_of(features, batch_size, count):
    """The first `count` batches of `batch_size` examples, in file order (numpy dicts)."""
    return [{k: v[b * batch_size:(b + 1) * batch_size] for k, v in features.items()}
            for b in range(count)]


def record_arrays(path, spec):
    """{name: numpy int32 / float32 array [N, ...]} of every record of the TFRecord file
    `path`, parsed with feature spec `spec`, in file order (the original's padded batches)."""
    import numpy as np
    import tensorflow as tf

    batches = tf.data.TFRecordDataset(path).batch(1024).map(
        lambda records: tf.io.parse_example(records, spec))
    arrays = {k: np.concatenate([b[k].numpy() for b in batches]) for k in spec}
    return {k: v.astype(np.float32 if v.dtype.kind == "f" else np.int32)
            for k, v in arrays.items()}


class Timing(NamedTuple):
    """Seconds of a timed piece of work: wall time and CPU time of this process (all its
    threads; steadier than the wall time on shared cores, but blind to waits for a core)."""

    wall: float
    cpu: float


def timed(call):
    """(call()'s result, its `Timing`)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    result = call()
    return result, Timing(time.perf_counter() - start, time.process_time() - cpu_start)


def trainer_steps(trainer, record_file, batch_size, steps, warmup_steps=None):
    """A callable running the next training step of `trainer` (a Trainer: its input stream
    over `record_file`, which its options must read in file order, shuffle_buffer_size=0, and
    repeat; and its train step), one step per call, after `warmup_steps` (default `steps`: a
    first pass) untimed steps that trace the step and build each shape's kernels (one step
    does when the batches are not cut). With `record_file` holding `steps` batches, `steps`
    calls run those batches (from where the warm-up left the stream)."""
    import numpy as np
    import tensorflow as tf

    train = trainer.make_train_function(trainer.input_stream([record_file], batch_size, True))
    one = tf.constant(1, tf.int32)
    for _ in range(steps if warmup_steps is None else warmup_steps):
        train(one)

    def step():
        loss = train(one)["total_loss"].numpy()
        assert np.all(np.isfinite(loss))

    return step


def trainer_prediction(trainer, record_file, batch_size):
    """(examples predicted, Timing) of one Trainer.predict pass over `record_file` (the model
    built before), its tracing and the kernels of each new shape included, as in a run of a
    script."""
    def predict():
        return sum(len(next(iter(b.values()))) for b in trainer.predict([record_file],
                                                                         batch_size))

    return timed(predict)


def session_steps(session, inputs, fetch, batches, warmup_steps=0):
    """A callable running `fetch` in `session` on the next of `batches` (numpy dicts, fed to
    the placeholders `inputs` {name: placeholder}; cycling through them), one batch per call,
    after `warmup_steps` untimed calls on the first batches that do not advance the cycle."""
    feeds = [{inputs[k]: batch[k] for k in inputs} for batch in batches]
    for feed in feeds[:warmup_steps]:
        session.run(fetch, feed)
    cycle = itertools.cycle(feeds)
    return lambda: session.run(fetch, next(cycle))


def speed_up(baseline, seconds):
    """'<baseline / seconds>x', or '-' without both."""
    return f"{baseline / seconds:.2f}x" if baseline and seconds else "-"
