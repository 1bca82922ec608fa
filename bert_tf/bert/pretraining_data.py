"""create_pretraining_data: text files -> TFRecords of masked-LM / next-sentence instances.

Two modes:
  - identical (`num_workers=1`, the default): the original's output, record for record: all
    documents in one process, one `random.Random(random_seed)`, one final shuffle.
  - sharded (`num_workers=N >= 2`): documents are dealt to N shards by their running number
    (document k -> shard k mod N); shard i runs the same algorithm on its documents alone,
    with its own `random.Random("bert_tf-shard:<random_seed>:<i>:<N>")`, in its own process,
    and writes `<output_file>-0000i-of-0000N` for every output file. Random next sentences
    come from the same shard. The output differs from the original's by design, is the same
    for the same N and seed, and each process only holds its shard.

Every check of the flags, files and vocab runs before any work; output is written under a
temporary name and renamed only when the whole run has succeeded.
"""

import dataclasses
import multiprocessing
import random
import time

from absl import logging

from bert_tf.bert import instances as instances_lib
from bert_tf.data import documents as documents_lib
from bert_tf.data import features as features_lib
from bert_tf.data import writer as writer_lib
from bert_tf.data.documents import DataError
from bert_tf.families import special_tokens_of

NUM_LOGGED_EXAMPLES = 20
WORD_CACHE_SIZE = 1_000_000


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """The flags of create_pretraining_data.py (same names and defaults as the original)."""
    input_file: str
    output_file: str
    vocab_file: str
    do_lower_case: bool = True
    do_whole_word_mask: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    num_workers: int = 1
    tokenizer: str = "auto"  # "auto" (fast if available), "fast" or "python"
    progress_seconds: float = 5.0


@dataclasses.dataclass
class Summary:
    num_documents: int
    num_instances: int
    output_files: list


def check_instance_options(options, allow_zero_masked_lm_prob=False):
    """Raises DataError for an instance flag out of range: max_seq_length,
    max_predictions_per_seq, masked_lm_prob ((0, 1], or [0, 1] with
    `allow_zero_masked_lm_prob`: ALBERT's builder then masks nothing), short_seq_prob and
    dupe_factor, read from `options` by those names (the options of any family's builder)."""
    o = options
    # Positions and segment lengths are stored as uint16.
    if not isinstance(o.max_seq_length, int) or not 5 <= o.max_seq_length <= 65535:
        raise DataError(f"--max_seq_length={o.max_seq_length}: expected an integer in [5, 65535] "
                        "([CLS] A [SEP] B [SEP] needs at least 5 positions)")
    if (not isinstance(o.max_predictions_per_seq, int) or
            not 1 <= o.max_predictions_per_seq <= o.max_seq_length):
        raise DataError(f"--max_predictions_per_seq={o.max_predictions_per_seq}: expected an "
                        f"integer in [1, max_seq_length={o.max_seq_length}]")
    if allow_zero_masked_lm_prob:
        if not 0.0 <= o.masked_lm_prob <= 1.0:
            raise DataError(f"--masked_lm_prob={o.masked_lm_prob}: expected a value in [0, 1]")
    elif not 0.0 < o.masked_lm_prob <= 1.0:
        raise DataError(f"--masked_lm_prob={o.masked_lm_prob}: expected a value in (0, 1]")
    if not 0.0 <= o.short_seq_prob <= 1.0:
        raise DataError(f"--short_seq_prob={o.short_seq_prob}: expected a value in [0, 1]")
    if not isinstance(o.dupe_factor, int) or o.dupe_factor < 1:
        raise DataError(f"--dupe_factor={o.dupe_factor}: expected an integer >= 1")


def check_options(options):
    """Raises DataError for a numeric flag out of range (no file is touched)."""
    check_instance_options(options)
    o = options
    if not isinstance(o.num_workers, int) or o.num_workers < 1:
        raise DataError(f"--num_workers={o.num_workers}: expected an integer >= 1")
    if o.tokenizer not in ("auto", "fast", "python"):
        raise DataError(f"--tokenizer={o.tokenizer!r}: expected 'auto', 'fast' or 'python'")
    if not o.vocab_file:
        raise DataError("--vocab_file is required")


def check_input_files(input_file):
    """Expands --input_file and checks every file can be opened; returns the list."""
    files = documents_lib.glob_input_files(input_file)
    for path in files:
        try:
            with documents_lib._open_binary(path) as f:  # pylint: disable=protected-access
                f.read(1)
        except Exception as e:  # pylint: disable=broad-except
            raise DataError(f"--input_file: cannot read {path!r}: {e}") from None
    return files


def output_paths(output_file, num_workers=1, shard_index=None):
    """The --output_file list; in sharded mode each name gets `-0000i-of-0000N`."""
    paths = [p.strip() for p in (output_file or "").split(",")]
    if num_workers <= 1:
        return paths
    shards = range(num_workers) if shard_index is None else [shard_index]
    return [f"{p}-{i:05d}-of-{num_workers:05d}" for i in shards for p in paths]


def load_tokenizer(vocab_file, do_lower_case, kind="auto"):
    """The tokenizer that reads the corpus; every kind gives the original's ids.

    "auto" and "python" are `bert_tf.bert.tokenization.FullTokenizer`: pure Python, memoized per
    word, it tokenized the benchmark corpus at about 1M tokens/s, faster than the
    tensorflow-text `FastTokenizer` ("fast") on this workload, without importing TensorFlow
    (~0.6 GB) or building the fast tokenizer's tables (~7 s, ~0.3 GB). "fast" may win on text
    with few repeated words.
    """
    from bert_tf.bert import tokenization  # pylint: disable=g-import-not-at-top

    try:
        if kind == "fast":
            try:
                from bert_tf.bert import fast_tokenization  # pylint: disable=g-import-not-at-top
            except ImportError as e:
                raise DataError(f"--tokenizer=fast: the fast tokenizer is unavailable ({e})") from None
            return fast_tokenization.FastTokenizer(vocab_file, do_lower_case=do_lower_case)
        # A corpus has more distinct words than the tokenizer's default memo (200k, then reset;
        # the 32 MB benchmark corpus has 202k). Since pieces are memoized too, the larger memo
        # made no clear difference there (6.0-8.3 s against 7.0-8.4 s CPU, alternating runs);
        # it still spares re-tokenizing words after a reset on larger corpora.
        return tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case,
                                          cache_size=WORD_CACHE_SIZE)
    except tokenization.VocabError as e:
        raise DataError(f"--vocab_file: {e}") from None


def check_vocab(tokenizer, vocab_file):
    """The tokenizer's [CLS], [SEP] and [MASK] (its special tokens) are in its vocab."""
    special = special_tokens_of(tokenizer)
    needed = (special.cls, special.sep, special.mask)
    missing = [t for t in needed if t not in tokenizer.vocab]
    if missing:
        raise DataError(f"--vocab_file {vocab_file!r} has no {', '.join(missing)} entry; "
                        f"pretraining data needs {needed[0]}, {needed[1]} and {needed[2]}")


class Progress:
    """Logs a progress line at most every `seconds` seconds."""

    def __init__(self, prefix, seconds):
        self.prefix = prefix
        self.seconds = seconds
        self.start = self.last = time.monotonic()
        self._last_message = None

    def maybe_log(self, fmt, *args, rate=None, force=False):
        now = time.monotonic()
        message = fmt % args
        if force and message == self._last_message:
            return  # already said
        if not force and now - self.last < self.seconds:
            return
        self.last = now
        self._last_message = message
        elapsed = now - self.start
        message = self.prefix + message
        if rate is not None:
            message += ", %.0f instances/s" % (rate / max(elapsed, 1e-9))
        logging.info("%s (%.0f s)", message, elapsed)


def _read(options, input_files, tokenizer, shard_index=0, num_shards=1, prefix=""):
    typecode = documents_lib.id_typecode(max(tokenizer.vocab.values()) + 1)
    lines_to_ids = documents_lib.lines_to_ids_function(tokenizer)
    progress = Progress(prefix, options.progress_seconds)

    def report(lines, corpus):
        progress.maybe_log("read %d lines, %d documents, %d tokens", lines, corpus.num_documents,
                           len(corpus.tokens))

    corpus = documents_lib.read_corpus(input_files, lines_to_ids, typecode,
                                       num_shards=num_shards, shard_index=shard_index,
                                       progress=report)
    progress.maybe_log("read %d documents, %d sentences, %d tokens", corpus.num_documents,
                       corpus.num_sentences, len(corpus.tokens), force=True)
    return corpus


def _make(options, corpus, vocab, rng, prefix=""):
    maker = instances_lib.InstanceMaker(
        vocab, options.max_seq_length, options.short_seq_prob, options.masked_lm_prob,
        options.max_predictions_per_seq, options.do_whole_word_mask, rng)
    progress = Progress(prefix, options.progress_seconds)
    total = corpus.num_documents * options.dupe_factor

    def report(done, made):
        progress.maybe_log("documents %d/%d, %d instances", done, total, made, rate=made)

    store = maker.make_instances(corpus, options.dupe_factor, progress=report)
    progress.maybe_log("documents %d/%d, %d instances", total, total, len(store), rate=len(store),
                       force=True)
    return store, maker.final_order(len(store))


def _log_example(tokenizer, encoder, instance):
    input_ids, num_a, positions, label_ids, is_random_next = instance
    inv_vocab = tokenizer.inv_vocab
    length, preds = encoder.max_seq_length, encoder.max_predictions_per_seq
    n, k = len(input_ids), len(positions)
    values = {
        "input_ids": list(input_ids) + [0] * (length - n),
        "input_mask": [1] * n + [0] * (length - n),
        "segment_ids": [0] * num_a + [1] * (n - num_a) + [0] * (length - n),
        "masked_lm_positions": list(positions) + [0] * (preds - k),
        "masked_lm_ids": list(label_ids) + [0] * (preds - k),
        "masked_lm_weights": [1.0] * k + [0.0] * (preds - k),
        "next_sentence_labels": [1 if is_random_next else 0],
    }
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(inv_vocab[i] for i in input_ids))
    for name in features_lib.FEATURE_NAMES:
        logging.info("%s: %s", name, " ".join(str(x) for x in values[name]))


WRITE_BATCH = 2048


def _write(options, store, order, tokenizer, writer, log_examples=True, prefix=""):
    length, preds = options.max_seq_length, options.max_predictions_per_seq
    encoder = features_lib.BatchExampleEncoder(length, preds, max(tokenizer.vocab.values()) + 1)
    progress = Progress(prefix, options.progress_seconds)
    if log_examples:
        for i in order[:NUM_LOGGED_EXAMPLES]:
            _log_example(tokenizer, encoder, store.get(i))
    for begin in range(0, len(order), WRITE_BATCH):
        batch = store.gather(order[begin:begin + WRITE_BATCH], length, preds)
        writer.write_many(encoder.encode_batch(*batch))
        progress.maybe_log("wrote %d/%d instances", begin + len(batch[1]), len(order))
    return len(order)


def _run_identical(options, input_files, out_paths, tokenizer):
    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    corpus = _read(options, input_files, tokenizer)
    if corpus.num_documents == 0:
        raise DataError(f"--input_file: no non-empty document in {input_files}")
    num_documents = corpus.num_documents
    rng = random.Random(options.random_seed)
    store, order = _make(options, corpus, tokenizer.vocab, rng)
    del corpus
    logging.info("*** Writing to output files ***")
    for path in out_paths:
        logging.info("  %s", path)
    with writer_lib.RoundRobinRecordWriter(out_paths) as writer:
        total = _write(options, store, order, tokenizer, writer)
    logging.info("Wrote %d total instances", total)
    return Summary(num_documents, total, out_paths)


def shard_seed(random_seed, shard_index, num_shards):
    """The seed of one shard's `random.Random` in sharded mode."""
    return f"bert_tf-shard:{random_seed}:{shard_index}:{num_shards}"


def run_shard(options, input_files, shard_index):
    """One shard of the sharded mode (runs in a worker process); returns (documents, instances).

    Writes `<path>.incomplete` files; the parent renames them once every shard has succeeded.
    """
    from absl import flags  # pylint: disable=g-import-not-at-top

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()  # a fresh (spawned) process: no "before flag parsing" warning
    logging.use_absl_handler()
    logging.set_verbosity(logging.INFO)
    n = options.num_workers
    prefix = f"[shard {shard_index + 1}/{n}] "
    tokenizer = _FORKED_TOKENIZER or load_tokenizer(options.vocab_file, options.do_lower_case,
                                                    options.tokenizer)
    corpus = _read(options, input_files, tokenizer, shard_index, n, prefix)
    num_documents = corpus.num_documents
    if num_documents == 0:
        logging.warning("%sno document in this shard; its output files will be empty", prefix)
    rng = random.Random(shard_seed(options.random_seed, shard_index, n))
    store, order = _make(options, corpus, tokenizer.vocab, rng, prefix)
    del corpus
    paths = output_paths(options.output_file, n, shard_index)
    writer = writer_lib.RoundRobinRecordWriter(paths)
    try:
        total = _write(options, store, order, tokenizer, writer, log_examples=shard_index == 0,
                       prefix=prefix)
        writer.close(rename=False)
    except BaseException:
        writer.abort()
        raise
    logging.info("%swrote %d instances from %d documents", prefix, total, num_documents)
    return num_documents, total


_FORKED_TOKENIZER = None  # set in the parent just before forking workers


def _start_method():
    """"fork" when it is safe (one thread, no TensorFlow loaded): workers then skip Python's
    start-up, the imports and the vocab load; "spawn" otherwise."""
    import sys  # pylint: disable=g-import-not-at-top
    import threading  # pylint: disable=g-import-not-at-top

    if ("fork" in multiprocessing.get_all_start_methods() and
        threading.active_count() == 1 and "tensorflow" not in sys.modules):
        return "fork"
    return "spawn"


def _run_sharded(options, input_files, out_paths, tokenizer):
    global _FORKED_TOKENIZER
    n = options.num_workers
    logging.info("*** Reading from input files (%d shards) ***", n)
    for path in input_files:
        logging.info("  %s", path)
    logging.info("*** Writing to output files ***")
    for path in out_paths:
        logging.info("  %s", path)
    method = _start_method()
    context = multiprocessing.get_context(method)
    try:
        _FORKED_TOKENIZER = tokenizer if method == "fork" else None
        try:
            with context.Pool(n) as pool:
                results = pool.starmap(run_shard, [(options, input_files, i) for i in range(n)])
        finally:
            _FORKED_TOKENIZER = None
        num_documents = sum(r[0] for r in results)
        if num_documents == 0:
            raise DataError(f"--input_file: no non-empty document in {input_files}")
    except BaseException:
        writer_lib.remove_incomplete(out_paths)
        raise
    writer_lib.rename_complete(out_paths)
    total = sum(r[1] for r in results)
    logging.info("Wrote %d total instances", total)
    return Summary(num_documents, total, out_paths)


def create_pretraining_data(options):
    """Runs create_pretraining_data with `options`; returns a `Summary`.

    Raises:
      DataError: bad flags, input files, vocab or output paths (before any work), or an input
        without any non-empty document (before anything is written).
    """
    check_options(options)
    input_files = check_input_files(options.input_file)
    out_paths = output_paths(options.output_file, options.num_workers)
    writer_lib.check_writable(out_paths)
    tokenizer = load_tokenizer(options.vocab_file, options.do_lower_case, options.tokenizer)
    check_vocab(tokenizer, options.vocab_file)
    logging.info("Tokenizer: %s.%s", type(tokenizer).__module__, type(tokenizer).__name__)
    if options.num_workers == 1:
        summary = _run_identical(options, input_files, out_paths, tokenizer)
    else:
        summary = _run_sharded(options, input_files, out_paths, tokenizer)
    return summary
