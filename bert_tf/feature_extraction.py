"""Contextual embeddings of every token, as the original extract_features.py writes them.

Input: one example per line, `text_a ||| text_b` for a pair (the LAST " ||| " with a space on
both sides splits; the line is stripped first; a blank line is an example with empty text);
`unique_id` = 0-based line number. Each example is laid out as the classifier does
(`bert_tf.data.pairs`). Output: one JSON object per input line,

  {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1,
   "values": [0.123456, ...]}, ...]}, ...]}

one entry per real token ([CLS] and [SEP] included), layers in the order of `--layers` (the
index as given, negative counting from the last layer), each value `round(float(x), 6)` written
by `json.dumps` (", " and ": " separators, ASCII escapes): byte for byte the original's format.

Differences from the original, none of which changes the output:
* with `dynamic_padding` (the default; `--dynamic_padding=false` runs as the original), the
  lines are sorted by length into batches and each batch is run only up to its longest line
  (rounded up to 16 positions) rather than max_seq_length, the lines being written back in input
  order (padding is masked out of attention, so real tokens get the same vectors up to float
  rounding);
* the values are formatted by vectorised integer arithmetic that gives exactly the text of
  `json.dumps(round(float(x), 6))` (see `format_value_rows`);
* errors the original hits deep inside TensorFlow (a `--layers` entry out of range, a sequence
  longer than the position table, a checkpoint of another shape) are reported up front.
"""

import collections
import dataclasses
import json
import os
import queue
import re
import threading
import time

import numpy as np
from absl import logging

from bert_tf import files
from bert_tf.data.pairs import pad_to, pair_tokens
from bert_tf.families import special_tokens_of

NUM_LOGGED_EXAMPLES = 5
# The original's pair rule: greedy, so the last " ||| " splits; spaces required on both sides.
_PAIR_PATTERN = re.compile(r"^(.*) \|\|\| (.*)$")


class FeatureExtractionError(ValueError):
    """Bad input to feature extraction (a flag, a file, a checkpoint that does not fit)."""


InputExample = collections.namedtuple("InputExample", ["unique_id", "text_a", "text_b"])


@dataclasses.dataclass
class InputFeatures:
    """One example laid out for the model.

    tokens: the unpadded word pieces, [CLS] ... [SEP] (str); input_ids, input_mask,
    input_type_ids: lists of int of length max_seq_length (zero-padded).
    """

    unique_id: int
    tokens: list
    input_ids: list
    input_mask: list
    input_type_ids: list


def _open_binary(path):
    path = os.fspath(path)
    if "://" in path:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top

        if not tf.io.gfile.exists(path):
            raise FeatureExtractionError(f"--input_file={path}: no such file")
        return tf.io.gfile.GFile(path, "rb")
    if os.path.isdir(path):
        raise FeatureExtractionError(f"--input_file={path}: is a directory, expected a text file")
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise FeatureExtractionError(f"--input_file={path}: no such file") from None


def split_pair(line):
    """`(text_a, text_b)` of one input line (text_b None without a " ||| " separator)."""
    line = line.strip()
    match = _PAIR_PATTERN.match(line)
    if match is None:
        return line, None
    return match.group(1), match.group(2)


def read_examples(input_file):
    """Reads the examples of `input_file` (UTF-8; lines end at "\\n" as the original's reader).

    Returns:
      list of InputExample(unique_id=line number from 0, text_a str, text_b str or None).
    Raises:
      FeatureExtractionError: missing file, or a line that is not UTF-8 (named by number).
    """
    with _open_binary(input_file) as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the newline that ends the last line starts no example
    examples = []
    for unique_id, raw in enumerate(lines):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FeatureExtractionError(
                f"--input_file={input_file} line {unique_id + 1}: not valid UTF-8 ({e})") from None
        examples.append(InputExample(unique_id, *split_pair(line)))
    return examples


def convert_examples_to_features(examples, seq_length, tokenizer):
    """Tokenizes and lays out each example (REFERENCE.md §13); logs the first five.

    Args:
      examples: InputExample list; seq_length: int >= 3; tokenizer: a FullTokenizer.
    Returns:
      list of InputFeatures, one per example, in order.
    """
    features = []
    special = special_tokens_of(tokenizer)
    pad_id = special.pad_id(tokenizer.vocab)
    for index, example in enumerate(examples):
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
        tokens, type_ids = pair_tokens(tokens_a, tokens_b, seq_length, special)
        input_ids = tokenizer.convert_tokens_to_ids(tokens)
        feature = InputFeatures(
            unique_id=example.unique_id,
            tokens=tokens,
            input_ids=pad_to(input_ids, seq_length, pad_id),
            input_mask=pad_to([1] * len(input_ids), seq_length),
            input_type_ids=pad_to(type_ids, seq_length),
        )
        if index < NUM_LOGGED_EXAMPLES:
            logging.info("*** Example ***")
            logging.info("unique_id: %s", feature.unique_id)
            logging.info("tokens: %s", " ".join(tokens))
            logging.info("input_ids: %s", " ".join(map(str, feature.input_ids)))
            logging.info("input_mask: %s", " ".join(map(str, feature.input_mask)))
            logging.info("input_type_ids: %s", " ".join(map(str, feature.input_type_ids)))
        features.append(feature)
    return features


def parse_layer_indexes(layers, num_hidden_layers, flag="--layers"):
    """`"-1,-2"` -> [-1, -2]; each entry an int in [-num_hidden_layers, num_hidden_layers).

    `num_hidden_layers` counts the encoder's outputs (`config.num_encoder_outputs`: L, or
    L * inner_group_num for ALBERT, whose layers run several blocks)."""
    indexes = []
    for entry in str(layers).split(","):
        try:
            index = int(entry)
        except ValueError:
            raise FeatureExtractionError(
                f"{flag}={layers!r}: entry {entry!r} is not an integer (expected a comma list "
                "of layer indexes such as -1,-2,-3,-4)") from None
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise FeatureExtractionError(
                f"{flag}={layers!r}: layer {index} does not exist; the model has "
                f"{num_hidden_layers} encoder layers (all_encoder_layers), so indexes run from "
                f"{-num_hidden_layers} to {num_hidden_layers - 1}")
        indexes.append(index)
    return indexes


def check_max_seq_length(max_seq_length, config, flag="--max_seq_length"):
    if max_seq_length < 3:
        raise FeatureExtractionError(
            f"{flag}={max_seq_length}: must be at least 3 ([CLS] a [SEP] b [SEP] needs 3 "
            "special tokens)")
    usable = config.max_sequence_length  # RoBERTa's: fewer than its position rows
    if max_seq_length > usable == config.max_position_embeddings:
        raise FeatureExtractionError(
            f"{flag}={max_seq_length}: the model has only max_position_embeddings="
            f"{config.max_position_embeddings} positions (bert config)")
    if max_seq_length > usable:
        raise FeatureExtractionError(
            f"{flag}={max_seq_length}: the model takes at most {usable} positions "
            f"(max_position_embeddings {config.max_position_embeddings} - pad_token_id "
            f"{config.pad_token_id} - 1 of the {config.model_type} config)")


def check_vocab_has_special_tokens(tokenizer, vocab_file):
    special = special_tokens_of(tokenizer)
    missing = [t for t in (special.cls, special.sep) if t not in tokenizer.vocab]
    if missing:
        raise FeatureExtractionError(
            f"--vocab_file={vocab_file}: no {' or '.join(missing)} entry; every input is laid "
            f"out as {special.cls} a {special.sep} (b {special.sep})")


def build_model(config, init_checkpoint, mixed_precision="none", predict_precision="float32"):
    """The encoder of `config`'s family in the current strategy scope, with the weights of
    `init_checkpoint`, built at `predict_precision` (a concrete precision of
    bert_tf.training.precision.PREDICT_PRECISIONS) by `build_at_precision`, as the export's
    models are: float32 builds under the `mixed_precision` policy."""
    from bert_tf import families
    from bert_tf.checkpoints import CheckpointError, load_original_checkpoint
    from bert_tf.training.precision import build_at_precision, dtype_policy

    try:
        with dtype_policy(mixed_precision):
            return build_at_precision(lambda: families.build_encoder(config), predict_precision,
                                      lambda m: load_original_checkpoint(m, init_checkpoint))
    except CheckpointError as e:
        raise FeatureExtractionError(f"--init_checkpoint={init_checkpoint}: {e}") from None


def check_predict_precision(predict_precision, mixed_precision):
    """The concrete --predict_precision ("auto" resolved from the CPU's flags, logged);
    FeatureExtractionError for an unknown one, or for a 16-bit one with --mixed_precision
    (a model has one precision)."""
    from bert_tf.training.precision import predict_precision_problem, resolve_precision

    problem = predict_precision_problem(predict_precision)
    if problem:
        raise FeatureExtractionError(problem)
    chosen = resolve_precision(predict_precision, "--predict_precision")
    if chosen != "float32" and mixed_precision != "none":
        raise FeatureExtractionError(
            f"--predict_precision={predict_precision} ({chosen}) and --mixed_precision="
            f"{mixed_precision}: choose one (--predict_precision stores the weights in "
            f"{chosen}, --mixed_precision keeps them float32 and computes in 16 bits)")
    return chosen


# Outputs computed out of input order wait in memory until the lines before them are written;
# the examples are sorted by length in windows whose vectors take at most about this many bytes
# (float32), e.g. ~650 lines of 50 tokens with BERT-Base's four layers of 768 values.
SORT_WINDOW_BYTES = 512 * 2**20


def _batches(features, batch_size, order):
    """Yields the features in `order` as dicts of int32 arrays [b, max_seq_length]."""
    for begin in range(0, len(order), batch_size):
        chunk = [features[i] for i in order[begin:begin + batch_size]]
        yield {
            "input_ids": np.asarray([f.input_ids for f in chunk], np.int32),
            "input_mask": np.asarray([f.input_mask for f in chunk], np.int32),
            "segment_ids": np.asarray([f.input_type_ids for f in chunk], np.int32),
        }


def inference_order(features, batch_size, values_per_token, dynamic_padding=True,
                    window_bytes=SORT_WINDOW_BYTES):
    """The order the model runs the features in: by length, longest first, within windows of
    about `window_bytes` of float32 outputs (a multiple of `batch_size` lines each), so that
    each batch holds lines of similar length; the input order without `dynamic_padding`.

    Returns: int64 array [len(features)], a permutation (see `padding.length_order`).
    """
    from bert_tf.training import padding

    lengths = [len(f.tokens) for f in features]
    if not dynamic_padding:
        return np.arange(len(lengths), dtype=np.int64)
    windows = padding.windows_of([4 * n * values_per_token for n in lengths], window_bytes,
                                 batch_size)
    return padding.length_order(lengths, windows)[0]


def extract_layers(model, features, layer_indexes, batch_size, strategy=None,
                   dynamic_padding=True, window_bytes=SORT_WINDOW_BYTES):
    """Runs the encoder over `features` and yields, in input order, one array per example.

    With `dynamic_padding` (the default) the lines are sorted by length into batches
    (`inference_order`) and each replica runs its part of a batch only up to that part's
    longest line, rounded up to `padding.DEFAULT_WIDTH` positions (bounding the shapes the
    kernels are built for); the outputs are given back in input order. Without it every batch
    runs at max_seq_length in input order, as the original. The vectors of real tokens are the
    same either way up to float rounding: padding is masked out of attention.

    Batches go through `tf.data` and `strategy` (default: TensorFlow's default strategy). They
    are built on the host by a Python generator (`Dataset.from_generator`), so the features of a
    large file are never all held as tensors; TPUs cannot run such a data set.

    Yields:
      (InputFeatures, float32 np.ndarray [len(layer_indexes), len(tokens), H]).
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    from bert_tf.training import padding

    strategy = strategy or tf.distribute.get_strategy()
    seq_length = len(features[0].input_ids) if features else 0
    order = inference_order(features, batch_size,
                            len(layer_indexes) * model.config.hidden_size, dynamic_padding,
                            window_bytes)
    spec = tf.TensorSpec([None, seq_length], tf.int32)
    dataset = tf.data.Dataset.from_generator(
        lambda: _batches(features, batch_size, order),
        output_signature={"input_ids": spec, "input_mask": spec, "segment_ids": spec},
    ).prefetch(2)
    dataset = strategy.experimental_distribute_dataset(dataset)

    def step(inputs):
        if dynamic_padding:  # an empty replica part still gets a shape (one width)
            inputs = padding.cut_batch(inputs, tuple(inputs), seq_length)
        layers = model(inputs, training=False)["all_encoder_layers"]
        return tf.cast(tf.stack([layers[i] for i in layer_indexes], axis=1), tf.float32)

    run = tf.function(lambda inputs: strategy.run(step, args=(inputs,)))

    def computed():
        """The real tokens' values of each line, in `order`."""
        position = 0
        for outputs in _prefetched(strategy.experimental_local_results(run(batch))
                                   for batch in dataset):
            for part in outputs:
                for values in part.numpy():
                    yield values[:, :len(features[order[position]].tokens)]
                    position += 1

    for index, values in padding.in_input_order(computed(), order):
        yield features[index], values


def _prefetched(iterator, depth=2):
    """Runs `iterator` in a thread `depth` items ahead, so the model's next batch is computed
    while the caller formats the current one (TensorFlow releases the GIL)."""
    items = queue.Queue(depth)
    done = object()

    def produce():
        try:
            for item in iterator:
                items.put((item, None))
        except BaseException as e:  # handed to the consumer
            items.put((None, e))
        items.put((done, None))

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    while True:
        item, error = items.get()
        if error is not None:
            raise error
        if item is done:
            return
        yield item


def _words(byte_rows):
    """uint8 [K, 8] -> little-endian uint64 [K] (byte j of a row = byte j of the word)."""
    return np.array(byte_rows, np.uint8, copy=True).view("<u8")[:, 0]


class _TextTables:
    """Each value is written into 16 bytes = two uint64 words, unused bytes zero:

      word 0: sign, 3 integer digits, ".", decimals 1-3;  word 1: decimals 4-6, ", ", 0, 0, 0

    These tables hold, as words, the bytes of an integer part 0..999 (right aligned, leading
    zeros left out), of six decimals (trailing zeros left out, at least one digit kept), and of
    n * 1e-6 for 0 < n < 100, which Python's repr writes with an exponent ("3e-06", "9.9e-05",
    bytes 1-7 of word 0). Built once, in about a second.
    """

    def __init__(self):
        numbers = np.arange(1000)
        digits = numbers[:, None] // np.array([100, 10, 1]) % 10
        used = np.arange(3, 0, -1) <= (1 + (numbers >= 10) + (numbers >= 100))[:, None]
        word = np.zeros((1000, 8), np.uint8)
        word[:, 1:4] = np.where(used, digits + ord("0"), 0)
        self.integer = _words(word)
        # Decimals as two halves of three digits: trailing zeros are dropped from the second
        # half, and from the first one only when the second is 000.
        halves = np.arange(1000)
        digits = halves[:, None] // np.array([100, 10, 1]) % 10
        last_nonzero = np.where(digits != 0, np.arange(1, 4), 0).max(axis=1)
        stripped = np.where(np.arange(1, 4) <= last_nonzero[:, None], digits + ord("0"), 0)
        word = np.zeros((1000, 8), np.uint8)
        word[:, 5:8] = digits + ord("0")
        self.first_half = _words(word)
        word[:, 5:8] = stripped
        word[0, 5] = ord("0")  # x.0: one decimal stays
        self.first_half_last = _words(word)
        word = np.zeros((1000, 8), np.uint8)
        word[:, 0:3] = stripped
        self.second_half = _words(word)
        word = np.zeros((100, 8), np.uint8)
        for n in range(1, 100):
            small = repr(n / 1e6).encode("ascii")
            word[n, 1:1 + len(small)] = np.frombuffer(small, np.uint8)
        self.small = _words(word)
        word = np.zeros((2, 8), np.uint8)
        word[1, 0] = ord("-")
        self.sign = _words(word)
        word = np.zeros((1, 8), np.uint8)
        word[0, 4] = ord(".")
        self.dot = _words(word)[0]
        word[0, 4] = 0
        word[0, 3:5] = np.frombuffer(b", ", np.uint8)
        self.separator = _words(word)[0]


_TABLES = None


def _tables():
    global _TABLES
    if _TABLES is None:
        _TABLES = _TextTables()
    return _TABLES


def _python_value(x):
    return json.dumps(round(float(x), 6))


def format_value_rows(values):
    """JSON text of rounded values, row by row, exactly as the original writes them.

    Args:
      values: float32 array [R, H].
    Returns:
      list of R str, each `", ".join(json.dumps(round(float(x), 6)) for x in row)`.

    How it stays exact: a float32 has a 24-bit significand and 1e6 = 2**6 * 15625, so
    float64(x) * 1e6 is computed without rounding, and `np.rint` of it (half to even) is the
    integer n that `round(x, 6)` rounds to (Python rounds the exact binary value, half to
    even). `round` returns the double nearest n * 1e-6, whose shortest repr is the decimal
    n * 1e-6 with trailing zeros dropped ("1.5", "-0.0") when it is at least 1e-4, and the
    exponent form ("3e-06") below. Each value's bytes are gathered from tables (`_TextTables`)
    into 16 fixed bytes, and a row's text is its bytes without the zero ones. Rows holding a
    value that is not finite or is 1000 or more in magnitude are formatted by Python itself.
    """
    values = np.asarray(values, np.float32)
    if values.ndim != 2:
        raise ValueError(f"format_value_rows takes a [rows, hidden] array, got shape {values.shape}")
    tables = _tables()
    rows, width = values.shape
    x = values.astype(np.float64).reshape(-1)
    plain = np.abs(x) < 999.9995  # False for NaN too; the integer part stays below 1000
    n = np.abs(np.rint(np.where(plain, x, 0.0) * 1e6))
    # Exact in float64 (n < 2**53), and faster than integer division.
    integer = np.floor(n * 1e-6)
    fraction = n - integer * 1e6
    integer = integer.astype(np.intp)
    first = np.floor(fraction * 1e-3)
    second = (fraction - first * 1e3).astype(np.intp)
    first = first.astype(np.intp)
    words = np.empty((x.size, 2), np.uint64)
    sign = tables.sign[np.signbit(x).astype(np.intp)]
    first_text = np.where(second == 0, tables.first_half_last[first], tables.first_half[first])
    low = sign | tables.integer[integer] | tables.dot | first_text
    high = tables.second_half[second] | tables.separator
    small = (n > 0) & (n < 100)
    if small.any():
        low = np.where(small, sign | tables.small[np.minimum(n, 99).astype(np.intp)], low)
        high = np.where(small, tables.separator, high)
    words[:, 0] = low
    words[:, 1] = high
    raw = words.view(np.uint8).reshape(rows, 16 * width)
    # Drop the zero bytes of all rows at once (one pass in numpy, not a bytes.replace per row),
    # then slice each row's text by its count of kept bytes.
    kept = raw != 0
    text = raw[kept].tobytes()
    ends = np.cumsum(kept.sum(axis=1)).tolist()
    bad_rows = set(np.flatnonzero(~plain.reshape(rows, width).all(axis=1)).tolist())
    out = []
    start = 0
    for r, end in enumerate(ends):
        if r in bad_rows:
            out.append(", ".join(_python_value(v) for v in values[r]))
        else:
            out.append(text[start:end - 2].decode("ascii"))
        start = end
    return out


def json_line(unique_id, tokens, layer_indexes, layer_values):
    """One output line (without its newline).

    Args:
      unique_id: int; tokens: list of str [T]; layer_indexes: list of int [K];
      layer_values: float32 array [K, T, H].
    Returns:
      The text of `json.dumps` of the original's nested OrderedDicts.
    """
    k, t, h = layer_values.shape
    rows = format_value_rows(np.transpose(layer_values, (1, 0, 2)).reshape(t * k, h))
    index_heads = ['{"index": %d, "values": [' % index for index in layer_indexes]
    features = []
    for i, token in enumerate(tokens):
        layers = ", ".join(index_heads[j] + rows[i * k + j] + "]}" for j in range(k))
        features.append('{"token": %s, "layers": [%s]}' % (json.dumps(token), layers))
    return '{"linex_index": %d, "features": [%s]}' % (unique_id, ", ".join(features))


class _Progress:
    """Logs lines written, lines/s and the time left, at most every `seconds` seconds."""

    def __init__(self, total, seconds):
        self.total = total
        self.seconds = seconds
        self.start = self.last = time.monotonic()

    def update(self, done, force=False):
        now = time.monotonic()
        if not force and now - self.last < self.seconds:
            return
        self.last = now
        elapsed = now - self.start
        rate = done / max(elapsed, 1e-9)
        left = (self.total - done) / rate if rate > 0 else float("inf")
        logging.info("extract_features: %d of %d lines, %.1f lines/s, %.0f s elapsed, ETA %.0f s",
                     done, self.total, rate, elapsed, left)


def write_json_lines(output_file, results, layer_indexes, total, progress_seconds=30.0):
    """Writes one JSON line per (InputFeatures, values [K, T, H]) of `results`.

    The lines go to a temporary file beside `output_file`, renamed to it once all are written
    (removed on error; `files.atomic_open`). Returns the number of lines.
    """
    progress = _Progress(total, progress_seconds)
    count = 0
    with files.atomic_open(output_file) as writer:
        for feature, values in results:
            writer.write(json_line(feature.unique_id, feature.tokens, layer_indexes, values))
            writer.write("\n")
            count += 1
            progress.update(count)
    progress.update(count, force=True)
    return count


@dataclasses.dataclass
class ExtractFeaturesOptions:
    """The flags of extract_features.py (names and defaults of the original)."""

    input_file: str
    output_file: str
    bert_config_file: str
    init_checkpoint: str
    vocab_file: str
    layers: str = "-1,-2,-3,-4"
    max_seq_length: int = 128
    do_lower_case: bool | None = None  # None: the family's default (families.lower_case_setting)
    tokenizer_files: dict = dataclasses.field(default_factory=dict)  # e.g. merges_file
    batch_size: int = 32
    mixed_precision: str = "none"
    predict_precision: str = "float32"  # or bfloat16, auto (check_predict_precision)
    progress_seconds: float = 30.0
    dynamic_padding: bool = True


def run_extract_features(options, strategy=None):
    """Reads, tokenizes, runs the model and writes the JSON lines. Returns the line count.

    Raises:
      FeatureExtractionError: a bad flag, file or checkpoint (the message names the flag).
      families.ConfigError: an unreadable or invalid bert config.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    from bert_tf import families
    from bert_tf.text import VocabError

    config = families.read_config(options.bert_config_file)
    layer_indexes = parse_layer_indexes(options.layers, config.num_encoder_outputs)
    check_max_seq_length(options.max_seq_length, config)
    if options.batch_size < 1:
        raise FeatureExtractionError(f"--batch_size={options.batch_size}: must be positive")
    predict_precision = check_predict_precision(options.predict_precision,
                                                options.mixed_precision)
    examples = read_examples(options.input_file)
    try:
        do_lower_case = families.lower_case_setting(config, options.do_lower_case)
    except ValueError as e:
        raise FeatureExtractionError(str(e)) from None
    try:
        tokenizer = families.make_tokenizer(config, options.vocab_file, do_lower_case,
                                            options.tokenizer_files)
    except VocabError as e:
        raise FeatureExtractionError(f"--vocab_file={options.vocab_file}: {e}") from None
    check_vocab_has_special_tokens(tokenizer, options.vocab_file)
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model = build_model(config, options.init_checkpoint, options.mixed_precision,
                            predict_precision)
    features = convert_examples_to_features(examples, options.max_seq_length, tokenizer)
    logging.info("extract_features: %d lines from %s", len(features), options.input_file)
    results = extract_layers(model, features, layer_indexes, options.batch_size, strategy,
                             options.dynamic_padding)
    return write_json_lines(options.output_file, results, layer_indexes, len(features),
                            options.progress_seconds)
