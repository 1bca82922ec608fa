"""Serving a BERT-Base classifier: the original's forward against our exports at every
`--precision` (bert_tf.training.precision.PRECISIONS), with each precision's floor, in one run.

  python3 benchmarks/serving.py --original_repo=/tmp/orig_bert                 # ~10 minutes
  python3 benchmarks/serving.py --original_repo=/tmp/orig_bert --layers=2 --rounds=10 \\
      --batch_rounds=2 --bandwidth_mb=256                                      # ~1 minute

Model: BERT-Base-shaped (H=768, A=12, I=3072, the real 30,522-entry uncased vocab of
../shared/data; --layers L, default 12) with random weights and a 2-label classifier head,
saved once as a checkpoint; every export is built from it (`build_export`, max_seq_length 128,
dynamic padding: the export's default), saved, and loaded back, and called through its
`serving_default` signature with strings in, as a server calls it.

Rows, all timed in turns (`common.timings_interleaved`: one call of each per round, the order
reversed every other round, so that the load of the shared cores falls on all alike):

  batch 1     one English request of 12 pieces with [CLS] and [SEP]
              (export_precision.REQUEST); --rounds calls of each.
  batch 32    32 MRPC-like pairs (lengths drawn from glue_mrpc_train of ../shared/lengths.json,
              seed 5, capped at 128, as benchmarks/padding.py draws them; text of one-piece
              words); --batch_rounds calls of each; sequences/s = 32 / median.
  original    google-research/bert's forward graph (run_classifier.create_model on
              modeling.BertModel, a tf.compat.v1 session, float32) on the same requests
              tokenized in Python beforehand and padded to 128 (as benchmarks/padding.py's
              export part, issue 19's baseline: its tokenization is not timed).

Each precision's floor at batch 1:
  bytes/bandwidth   the bytes of the export's variables a request reads (all of them but the
              embedding tables, of which it reads a few rows: counted as those rows) over the
              machine's memory bandwidth, measured here: the best of a multi-threaded
              tf.reduce_sum and NumPy sum/copy over arrays of --bandwidth_mb (far beyond the
              caches). Weights do not stay in the caches between requests (BERT-Base's
              float32 encoder is 340 MB), so no request can take less on this machine.
  matmuls alone     the encoder's 72 dense matmuls at the request's 16 positions (the export's
              dynamic padding rounds 12 up to 16) with the export's own kernels, timed in the
              same turns (request_floor.dense_matmuls); for kernels tf.matmul does not take
              (integer ones), the 72 Dense layers' own calls in the same order instead.
"""

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    BERT_BASE, machine_header, print_table, sample_lengths, timings_interleaved,
)
from export_precision import REQUEST, VOCAB_FILE  # noqa: E402
from padding import Words, original_features, original_graph  # noqa: E402
from request_floor import dense_kernels, dense_matmuls  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.fast_tokenization import TokenizerModule  # noqa: E402
from bert_tf.checkpoints import save_original_checkpoint  # noqa: E402
from bert_tf.layers.heads import ClassifierHead  # noqa: E402
from bert_tf.models import BertTaskModel  # noqa: E402
from bert_tf.serving import export  # noqa: E402
from bert_tf.training.precision import PRECISIONS  # noqa: E402

MAX_SEQ_LENGTH = 128
BATCH = 32
EMBEDDING_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings")


def memory_bandwidth(megabytes, seconds=1.5):
    """Best bytes/s of reading (a sum) and of copying (read + write, counted as both) a float32
    array of `megabytes`, through TensorFlow (all cores) and NumPy, over ~`seconds` each."""
    n = megabytes * 2**20 // 4
    a = np.random.RandomState(0).rand(n).astype(np.float32)
    b = np.empty_like(a)
    t = tf.constant(a)
    reduce = tf.function(lambda x: tf.reduce_sum(x))
    reduce(t).numpy()
    calls = {"tf.reduce_sum": (lambda: reduce(t).numpy(), a.nbytes),
             "numpy sum": (lambda: a.sum(), a.nbytes),
             "numpy copy": (lambda: np.copyto(b, a), 2 * a.nbytes)}
    best = {}
    for name, (call, nbytes) in calls.items():
        start, fastest = time.perf_counter(), float("inf")
        while time.perf_counter() - start < seconds:
            t0 = time.perf_counter()
            call()
            fastest = min(fastest, time.perf_counter() - t0)
        best[name] = nbytes / fastest
    return best


def bytes_read(variables, config, positions):
    """Bytes of `variables` (tf.Variables of an export's signature) that a request of
    `positions` positions reads: every variable whole, but of each embedding table only the
    rows it gathers (`positions` rows; one row of token types)."""
    total = 0
    for v in variables:
        name, size = v.name, v.dtype.size * int(np.prod(v.shape))
        if any(table in name for table in EMBEDDING_TABLES) and len(v.shape) == 2:
            rows = 1 if "token_type" in name else positions
            size = v.dtype.size * rows * int(v.shape[1])
        total += size
    return total


def encoder_dense_layers(encoder):
    """The 72 Dense layers of the encoder (whatever their class: an export may replace them),
    in request_floor.dense_kernels' order: query, key, value, attention output, intermediate,
    output of each layer."""
    layers = []
    for block in encoder.encoder.blocks:
        layers.extend([block.self_attention.query, block.self_attention.key,
                       block.self_attention.value, block.attention_output,
                       block.intermediate, block.output_dense])
    return layers


def matmul_floor(model, hidden, positions):
    """A callable of the 72 dense matmuls of `model`'s encoder on [positions, H]
    (request_floor's graph, the model's own kernels); when the layers have no floating `kernel`
    (an int8 export's layers), the 72 layers' own calls with the same dependencies instead
    (their quantization included, their bias too); and a note of which."""
    layers = encoder_dense_layers(model.bert)
    h = tf.random.normal([positions, hidden], stddev=0.1, seed=0)
    kernels = [getattr(layer, "kernel", None) for layer in layers]
    if all(k is not None and tf.as_dtype(k.dtype).is_floating for k in kernels):
        dtype = tf.as_dtype(kernels[0].dtype)
        h = tf.cast(h, dtype)
        matmuls = dense_matmuls([k.value for k in dense_kernels(model.bert)])
        return (lambda: matmuls(h).numpy()), f"{len(kernels)} tf.matmul, {dtype.name}"

    @tf.function
    def layer_calls(h):
        for i in range(0, len(layers), 6):
            query, key, value, attention_output, intermediate, output = layers[i:i + 6]
            context = tf.add_n([query(h), key(h), value(h)])
            h = output(intermediate(attention_output(context)))
        return h

    return (lambda: layer_calls(h).numpy()), (
        f"{len(layers)} calls of its {type(layers[0]).__name__} layers (bias and "
        "quantization included)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", default="/tmp/orig_bert",
                        help="a copy of google-research/bert (the baseline rows)")
    parser.add_argument("--layers", type=int, default=BERT_BASE["num_hidden_layers"],
                        help="encoder layers (BERT-Base: 12); fewer for a smoke run")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds at batch 1")
    parser.add_argument("--batch_rounds", type=int, default=6, help="timed rounds at batch 32")
    parser.add_argument("--bandwidth_mb", type=int, default=1024,
                        help="MB of the array the memory bandwidth is measured on")
    args = parser.parse_args()
    for path, flag in ((VOCAB_FILE, "vocab (../shared/data)"),
                       (os.path.join(args.original_repo, "modeling.py"), "--original_repo")):
        if not os.path.exists(path):
            raise SystemExit(f"{flag}: {path} is absent")
    if args.layers < 1 or args.rounds < 1 or args.batch_rounds < 1 or args.bandwidth_mb < 1:
        raise SystemExit("--layers, --rounds, --batch_rounds, --bandwidth_mb: expected >= 1")

    header = machine_header()
    print(header, flush=True)
    config_dict = dict(BERT_BASE, num_hidden_layers=args.layers)
    config = BertConfig.from_dict(config_dict)
    words = Words()
    pieces = len(words.tokenizer.tokenize(REQUEST)) + 2
    rng = random.Random(5)
    lengths = sample_lengths("glue_mrpc_train", BATCH, MAX_SEQ_LENGTH, 5)
    pairs = [words.pair(rng, int(n)) for n in lengths]
    requests = {1: ([REQUEST], [""]), BATCH: ([a for a, _ in pairs], [b for _, b in pairs])}
    print(f"BERT L={args.layers} H={config.hidden_size} A={config.num_attention_heads} "
          f"I={config.intermediate_size} V={config.vocab_size}, random weights, classifier "
          f"export (max_seq_length {MAX_SEQ_LENGTH}); batch 1: a {pieces}-piece request, "
          f"{args.rounds} rounds; batch {BATCH}: MRPC-like pairs of mean length "
          f"{lengths.mean():.1f} pieces (longest {lengths.max()}), {args.batch_rounds} rounds; "
          f"precisions {', '.join(PRECISIONS)}", flush=True)
    print()

    bandwidth = memory_bandwidth(args.bandwidth_mb)
    best_bandwidth = max(bandwidth.values())
    print("memory bandwidth (GB/s, best): " + ", ".join(
        f"{k} {v / 1e9:.1f}" for k, v in bandwidth.items()), flush=True)

    tf.keras.utils.set_random_seed(0)
    model = BertTaskModel(config, ClassifierHead(2, config.hidden_size))
    tokenizer = TokenizerModule(words.tokenizer.vocab, do_lower_case=True)
    positions = 16  # the export's dynamic padding: 12 pieces rounded up (checked below)
    calls = {1: {}, BATCH: {}}
    floors, notes, sizes, outputs, loaded = {}, {}, {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        prefix = save_original_checkpoint(model, os.path.join(tmp, "ckpt", "model.ckpt"))
        del model
        for precision in PRECISIONS:
            t0 = time.perf_counter()
            module, info = export.build_export(
                "classifier", config, prefix, VOCAB_FILE, True, MAX_SEQ_LENGTH, ["0", "1"],
                tokenizer=tokenizer, precision=precision)
            path = export.save_export(module, info, os.path.join(tmp, precision))
            try:
                floors[precision], notes[precision] = matmul_floor(
                    module.model, config.hidden_size, positions)
            except (AttributeError, TypeError, ValueError) as e:  # an export of other layers
                notes[precision] = f"not measured ({type(e).__name__}: {e})"
            loaded[precision] = tf.saved_model.load(path)  # its signatures need it alive
            serve = loaded[precision].signatures["serving_default"]
            sizes[precision] = bytes_read(serve.variables, config, positions)
            print(f"{precision}: exported and loaded in {time.perf_counter() - t0:.1f} s; "
                  f"{sizes[precision] / 1e6:.1f} MB of variables read per request", flush=True)
            for batch, (texts_a, texts_b) in requests.items():
                a, b = tf.constant(texts_a), tf.constant(texts_b)
                calls[batch][precision] = (
                    lambda s=serve, a=a, b=b: s(text_a=a, text_b=b)["probabilities"].numpy())
            outputs[precision] = calls[1][precision]()
        seen = module.inputs.pairs(tf.constant([REQUEST]), tf.constant([""]))["input_ids"]
        assert seen.shape[1] == positions, seen.shape
        del module
        sessions = []
        for batch, (texts_a, texts_b) in requests.items():
            features = original_features(words.tokenizer, texts_a, texts_b, MAX_SEQ_LENGTH)
            session, inputs, fetch = original_graph(args.original_repo, "classifier",
                                                    config_dict, batch, MAX_SEQ_LENGTH, False)
            sessions.append(session)
            feed = {inputs[k]: features[k] for k in inputs}
            calls[batch]["original"] = lambda s=session, f=fetch, d=feed: s.run(f, d)
        for precision, floor in floors.items():
            calls[1][f"matmuls {precision}"] = floor
        print("timing batch 1 ...", flush=True)
        timings = {1: timings_interleaved(calls[1], args.rounds, warmup_steps=3)}
        print(f"timing batch {BATCH} ...", flush=True)
        timings[BATCH] = timings_interleaved(calls[BATCH], args.batch_rounds, warmup_steps=1)
        for session in sessions:
            session.close()

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print()
    print(f"load average (1, 5, 15 min) at the end: {load}")
    print("largest |probability - float32's| on the batch-1 request: " + ", ".join(
        f"{p} {np.abs(o - outputs['float32']).max():.2g}" for p, o in outputs.items()
        if p != "float32"))
    print()
    one, many = timings[1], timings[BATCH]
    base_one, base_many = one["original"]["median"], many["original"]["median"]
    rows = [["original (float32, padded to 128)", "-",
             f"{base_one * 1e3:.1f} ({one['original']['fastest'] * 1e3:.1f})",
             f"{one['original']['cpu_median'] * 1e3:.1f}", "1.00x",
             f"{BATCH / base_many:.1f}", "1.00x", "-", "-"]]
    for precision in PRECISIONS:
        t, b = one[precision], many[precision]
        floor = one.get(f"matmuls {precision}")
        bound = sizes[precision] / best_bandwidth
        rows.append([
            f"export {precision}", f"{sizes[precision] / 1e6:.1f}",
            f"{t['median'] * 1e3:.1f} ({t['fastest'] * 1e3:.1f})",
            f"{t['cpu_median'] * 1e3:.1f}", f"{base_one / t['median']:.2f}x",
            f"{BATCH / b['median']:.1f}", f"{base_many / b['median']:.2f}x",
            f"{bound * 1e3:.1f} ({bound / t['median']:.0%})",
            f"{floor['median'] * 1e3:.1f} ({floor['median'] / t['median']:.0%})" if floor
            else "-"])
    print_table(["row", "MB read/request", "batch 1 ms median (fastest)", "CPU ms median",
                 "batch 1 vs original", f"batch {BATCH} seq/s", f"batch {BATCH} vs original",
                 "bytes/bandwidth floor ms (of median)", "matmuls alone ms (of median)"], rows)
    print()
    print("matmuls alone: " + "; ".join(f"{p}: {n}" for p, n in notes.items())
          + f"; bandwidth {best_bandwidth / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
