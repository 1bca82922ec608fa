"""Raw text -> the pretraining records of google-research/electra's build_pretraining_dataset.py.

  python -m bert_tf.electra.build_pretraining_dataset --corpus-dir CORPUS \\
      --vocab-file vocab.txt --output-dir DATA/pretrain_tfrecords [--num-processes N] [--seed S]

The original's command line and output. Every file of `--corpus-dir` (sorted by name; job j of
`--num-processes` N takes the files with index % N == j, in a random order) is read line by
line (lines end at "\n"; every "\r" is dropped, as tf.io.gfile reads); lines are stripped,
WordPiece-tokenized and packed into examples of `--max-seq-length` tokens:

  * consecutive lines are added until the target length is reached; with
    `--blanks-separate-docs` (the default) an empty line, and always the end of a file, closes
    the example early;
  * 10% of examples are one segment; the others put lines into segment A up to
    (target - 3) // 2 tokens (a line that crosses that bound goes to A half of the time), the
    rest into B; A is cut to max_len - 2 tokens and B to what is left;
  * after each example the next target length is, 5% of the time, uniform in [5, max_len];
  * each record is a `tf.train.Example` with `input_ids`, `input_mask`, `segment_ids` (int64,
    [max_seq_length], zero-padded): `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

Records go round robin to the job's files among the 1000 `pretrain_data.tfrecord-I-of-1000`
(job j owns the files with I % N == j); every one of the 1000 files is written, empty or not.

Randomness: the original draws from Python's global `random`, never seeded. `--seed S` makes a
run reproducible: in one process the records equal the original's run with `random.seed(S)`
done before it starts. With N processes, job j's records equal the original's job j run with
`random.seed(S + j)` (the original's own several-process runs cannot be reproduced: Python
reseeds `random` from the OS in every forked child, so each of its jobs draws independently,
as ours do). Without `--seed` a seed is drawn and logged.

Unlike the original: the output directory is not emptied first (the 1000 files are replaced,
nothing else is touched); files appear under their final names only when every job succeeded;
bytes that are not UTF-8 are dropped (the original stops with a UnicodeDecodeError);
subdirectories of the corpus directory are skipped (the original stops); bad flags, a missing
corpus directory or vocab file give one line instead of a traceback.
"""

import argparse
import dataclasses
import errno
import multiprocessing
import os
import random
import sys
import time

from bert_tf import families, files
from bert_tf.bert import tokenization
from bert_tf.data import writer as writer_lib
from bert_tf.data.documents import DataError
from bert_tf.data.features import Int64EntryHeads, varint

NUM_OUT_FILES = 1000
RECORD_PREFIX = "pretrain_data.tfrecord"
# Records encoded, then framed (one CRC pass) and dealt to the files, at a time.
_WRITE_BATCH = 8192
_WORD_CACHE_SIZE = 1_000_000


@dataclasses.dataclass(frozen=True)
class BuildOptions:
    """The flags of the original's build_pretraining_dataset.py, plus `seed`."""
    corpus_dir: str
    vocab_file: str
    output_dir: str
    max_seq_length: int = 128
    num_processes: int = 1
    blanks_separate_docs: bool = True
    do_lower_case: bool = True
    strip_accents: bool = True
    seed: int = None  # None: drawn at random (and logged)


def output_paths(output_dir, job_id=0, num_jobs=1):
    """The record files job `job_id` of `num_jobs` writes, in its round-robin order."""
    return [
        os.path.join(output_dir, f"{RECORD_PREFIX}-{i}-of-{NUM_OUT_FILES}")
        for i in range(NUM_OUT_FILES) if i % num_jobs == job_id
    ]


class ExampleEncoder:
    """`tf.train.Example` bytes of an (A, B) pair of id lists, without protobuf objects.

    The bytes are the original's `SerializeToString(deterministic=True)`: the same three map
    entries, byte for byte, in sorted order (its default serialization writes them in an order
    that varies from process to process).
    """

    def __init__(self, max_seq_length, vocab_size, cls_id, sep_id):
        self.max_seq_length = max_seq_length
        self._varints = [varint(i) for i in range(vocab_size)]
        self._cls, self._sep = self._varints[cls_id], self._varints[sep_id]
        self._ids_heads = Int64EntryHeads("input_ids")
        # input_mask: n ones then zeros; segment_ids: always max_seq_length one-byte varints
        mask_head = Int64EntryHeads("input_mask")[max_seq_length]
        self._input_mask = [
            mask_head + b"\x01" * n + b"\x00" * (max_seq_length - n) for n in range(max_seq_length + 1)
        ]
        self._segment_head = Int64EntryHeads("segment_ids")[max_seq_length]

    def encode(self, first, second):
        """first, second: lists of token ids (second may be empty), already cut to fit."""
        table = self._varints
        n = len(first) + 2
        parts = [self._cls]
        parts += map(table.__getitem__, first)
        parts.append(self._sep)
        n_b = 0
        if second:
            n_b = len(second) + 1
            parts += map(table.__getitem__, second)
            parts.append(self._sep)
        pad = self.max_seq_length - n - n_b
        parts.append(b"\x00" * pad)
        packed = b"".join(parts)
        features = b"".join((
            self._ids_heads[len(packed)], packed,
            self._input_mask[n + n_b],
            self._segment_head, b"\x00" * n, b"\x01" * n_b, b"\x00" * pad,
        ))
        return b"\x0a" + varint(len(features)) + features


class ExampleBuilder:
    """Packs lines of token ids into examples as the original's `ExampleBuilder` does.

    Every random draw comes from `rng` in the original's order, so the same generator state
    gives the same examples.
    """

    def __init__(self, max_length, rng):
        self._max_length = max_length
        self._target_length = max_length
        self._rng = rng
        self._sentences = []
        self._length = 0

    def add_line(self, ids):
        """Adds one line's ids, None for an empty line; returns (A, B) when an example is done."""
        if ids is None:  # an empty line closes the example
            return self.close()
        if ids:
            # (A line of no tokens is kept by the original as an empty sentence, which never
            # changes an example nor draws a random number.)
            self._sentences.append(ids)
            self._length += len(ids)
            if self._length >= self._target_length:
                return self._create_example()
        return None

    def close(self):
        """The example of the lines added so far (None when there are none)."""
        return self._create_example() if self._length else None

    def _create_example(self):
        rng = self._rng
        max_length = self._max_length
        if rng.random() < 0.1:
            first_target = 100000  # one segment
        else:
            first_target = (self._target_length - 3) // 2  # room for [CLS] A [SEP] B [SEP]
        first, second = [], []
        for sentence in self._sentences:
            # The draw happens only in the original's third case: A non-empty and under its
            # target, B empty, and this line would take A to or past the target.
            if (not first or len(first) + len(sentence) < first_target or
                    (not second and len(first) < first_target and rng.random() < 0.5)):
                first += sentence
            else:
                second += sentence
        first = first[:max_length - 2]
        second = second[:max(0, max_length - len(first) - 3)]
        self._sentences = []
        self._length = 0
        if rng.random() < 0.05:
            self._target_length = rng.randint(5, max_length)
        else:
            self._target_length = max_length
        return first, second


def list_corpus(corpus_dir):
    """Sorted names in `corpus_dir` (files and subdirectories, as the original lists them)."""
    if files.is_remote(corpus_dir):
        gfile = files.tf_gfile()
        if not gfile.isdir(corpus_dir):
            raise DataError(f"--corpus-dir: {corpus_dir!r} is not a directory")
        return sorted(name.rstrip("/") for name in gfile.listdir(corpus_dir))
    if not os.path.isdir(corpus_dir):
        what = "is not a directory" if os.path.exists(corpus_dir) else "does not exist"
        raise DataError(f"--corpus-dir: {corpus_dir!r} {what}; expected a directory of text files")
    try:
        return sorted(os.listdir(corpus_dir))
    except OSError as e:
        raise DataError(f"--corpus-dir: cannot list {corpus_dir!r}: {e.strerror or e}") from None


def _is_dir(path):
    return files.tf_gfile().isdir(path) if files.is_remote(path) else os.path.isdir(path)


def _open_binary(path):
    return files.tf_gfile().GFile(path, "rb") if files.is_remote(path) else open(path, "rb")


def _log(job_id, message):
    # One write per line: the jobs share stdout, and a line under 4 KB written at once to a
    # pipe is not interleaved with another process's.
    sys.stdout.write(f"Job {job_id}: {message}\n")
    sys.stdout.flush()


def _allow_open_files(count):
    """Raises the soft limit of open files to hold `count` more, when the hard limit allows."""
    try:
        import resource  # pylint: disable=import-outside-toplevel  (POSIX only)
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64  # stdio, the corpus file, imports
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


def load_tokenizer(options):
    """The WordPiece tokenizer of the flags (BERT's, as ELECTRA's family says); DataError naming
    the vocab file on a problem."""
    try:
        tokenizer = tokenization.FullTokenizer(
            options.vocab_file, do_lower_case=options.do_lower_case,
            cache_size=_WORD_CACHE_SIZE, strip_accents=options.strip_accents)
    except tokenization.VocabError as e:
        raise DataError(f"--vocab-file: {e}") from None
    except OSError as e:
        raise DataError(f"--vocab-file: cannot read {options.vocab_file!r}: {e.strerror or e}") from None
    special = tokenizer.special_tokens
    for token in (special.cls, special.sep):
        if token not in tokenizer.vocab:
            raise DataError(f"--vocab-file: {options.vocab_file!r} has no {token} entry; every "
                            f"example starts with {special.cls} and ends its segments with "
                            f"{special.sep}")
    return tokenizer


def write_examples(job_id, options, seed, rename=True, tokenizer=None):
    """Job `job_id` of `options.num_processes`: reads its corpus files, writes its record files.

    Its random draws are those of `random.seed(seed + job_id)`.

    Files are written as `<name>.incomplete`, and renamed when `rename` (else left for the
    caller to rename once every job is done). Returns the number of examples written.
    `tokenizer`: the flags' tokenizer when already loaded.
    """
    num_jobs = options.num_processes
    rng = random.Random(seed + job_id)
    _log(job_id, "Creating example writer")
    tokenizer = tokenizer or load_tokenizer(options)
    special = families.special_tokens_of(tokenizer)
    encoder = ExampleEncoder(options.max_seq_length, max(tokenizer.vocab.values()) + 1,
                             tokenizer.vocab[special.cls], tokenizer.vocab[special.sep])
    builder = ExampleBuilder(options.max_seq_length, rng)
    tokenize = tokenizer.tokenize_to_ids
    blanks_separate_docs = options.blanks_separate_docs
    _log(job_id, "Writing tf examples")
    fnames = list_corpus(options.corpus_dir)
    fnames = [f for i, f in enumerate(fnames) if i % num_jobs == job_id]
    rng.shuffle(fnames)
    paths = output_paths(options.output_dir, job_id, num_jobs)
    _allow_open_files(len(paths))  # a job keeps its record files open, as the original does
    try:
        writer = writer_lib.RoundRobinRecordWriter(paths)
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
        raise DataError(f"cannot keep the {len(paths)} output files of a job open (the open-file "
                        "limit is too low): raise it (ulimit -n) or pass a larger "
                        "--num-processes") from None
    pending = []
    try:
        start = time.time()
        for file_no, fname in enumerate(fnames):
            if file_no > 0:
                elapsed = time.time() - start
                _log(job_id, f"processed {file_no}/{len(fnames)} files "
                             f"({100.0 * file_no / len(fnames):.1f}%), ELAPSED: {int(elapsed)}s, "
                             f"ETA: {int((len(fnames) - file_no) / (file_no / max(elapsed, 1e-9)))}s, "
                             f"{writer.num_written + len(pending)} examples written")
            path = os.path.join(options.corpus_dir, fname)
            if _is_dir(path):
                _log(job_id, f"skipping {path}: a directory")
                continue
            with _open_binary(path) as f:
                for raw in f:
                    # tf.io.gfile's readline, which the original reads with, drops every "\r"
                    line = raw.replace(b"\r", b"").decode("utf-8", "ignore").strip()
                    if line or blanks_separate_docs:
                        example = builder.add_line(tokenize(line) if line else None)
                        if example is not None:
                            pending.append(encoder.encode(*example))
                            if len(pending) >= _WRITE_BATCH:
                                writer.write_many(pending)
                                pending = []
            example = builder.close()
            if example is not None:
                pending.append(encoder.encode(*example))
        writer.write_many(pending)
        writer.close(rename=rename)
    except BaseException:
        writer.abort()
        raise
    _log(job_id, "Done!")
    return writer.num_written


def _job_main(job_id, options, seed):
    """A child process: one job; exit code 1 with one line on a data or file problem."""
    try:
        write_examples(job_id, options, seed, rename=False)
    except (DataError, OSError) as e:
        print(f"build_pretraining_dataset: error: job {job_id}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


def check_options(options):
    """Checks flags, corpus dir, vocab and output dir before any work; DataError on a problem.

    Returns the tokenizer.
    """
    o = options
    if isinstance(o.max_seq_length, bool) or not isinstance(o.max_seq_length, int) or o.max_seq_length < 5:
        raise DataError(f"--max-seq-length={o.max_seq_length}: expected an integer >= 5 (a random "
                        "target length is drawn from [5, max-seq-length])")
    if not isinstance(o.num_processes, int) or not 1 <= o.num_processes <= NUM_OUT_FILES:
        raise DataError(f"--num-processes={o.num_processes}: expected an integer in [1, {NUM_OUT_FILES}] "
                        f"(each job writes its share of the {NUM_OUT_FILES} output files)")
    list_corpus(o.corpus_dir)
    tokenizer = load_tokenizer(o)
    if files.is_remote(o.output_dir):
        files.tf_gfile().makedirs(o.output_dir)
        return tokenizer
    if os.path.exists(o.output_dir) and not os.path.isdir(o.output_dir):
        raise DataError(f"--output-dir: {o.output_dir!r} exists and is not a directory")
    try:
        os.makedirs(o.output_dir, exist_ok=True)
    except OSError as e:
        raise DataError(f"--output-dir: cannot create {o.output_dir!r}: {e.strerror or e}") from None
    writer_lib.check_writable(output_paths(o.output_dir)[:1], flag="--output-dir")
    return tokenizer


def build(options):
    """Writes the records; returns the number of examples. DataError on bad input."""
    tokenizer = check_options(options)
    seed = options.seed
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
        print(f"Random seed: {seed} (pass --seed {seed} to reproduce this run)", flush=True)
    paths = output_paths(options.output_dir)
    if options.num_processes == 1:
        return write_examples(0, options, seed, tokenizer=tokenizer)
    jobs = [multiprocessing.Process(target=_job_main, args=(j, options, seed))
            for j in range(options.num_processes)]
    try:
        for job in jobs:
            job.start()
        for job in jobs:
            job.join()
    except BaseException:
        for job in jobs:
            if job.is_alive():
                job.terminate()
                job.join()
        writer_lib.remove_incomplete(paths)
        raise
    failed = [j for j, job in enumerate(jobs) if job.exitcode != 0]
    if failed:
        writer_lib.remove_incomplete(paths)
        raise DataError(f"job(s) {', '.join(map(str, failed))} failed (see above); no record file "
                        "was written")
    writer_lib.rename_complete(paths)
    return None


def _original_bool(value):
    # The original declares the flag `type=bool`: any non-empty value is True.
    if value.strip().lower() in ("false", "0", "no", "off"):
        print(f"note: --blanks-separate-docs={value} means True, as in the original (type=bool: "
              "any non-empty value); pass an empty value for False", file=sys.stderr)
    return bool(value)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.electra.build_pretraining_dataset",
        description="Writes out text data as tfrecords that ELECTRA can be pre-trained on.")
    parser.add_argument("--corpus-dir", required=True, help="Location of pre-training text files.")
    parser.add_argument("--vocab-file", required=True, help="Location of vocabulary file.")
    parser.add_argument("--output-dir", required=True, help="Where to write out the tfrecords.")
    parser.add_argument("--max-seq-length", default=128, type=int, help="Number of tokens per example.")
    parser.add_argument("--num-processes", default=1, type=int,
                        help="Parallelize across multiple processes.")
    parser.add_argument("--blanks-separate-docs", default=True, type=_original_bool,
                        help="Whether blank lines indicate document boundaries. As in the "
                             "original (type=bool), any non-empty value is True: pass an empty "
                             "value (--blanks-separate-docs '') for False.")
    parser.add_argument("--do-lower-case", dest="do_lower_case", action="store_true",
                        help="Lower case input text (default).")
    parser.add_argument("--no-lower-case", dest="do_lower_case", action="store_false",
                        help="Don't lower case input text.")
    parser.add_argument("--do-strip-accents", dest="strip_accents", action="store_true",
                        help="Strip accents (default; only when lower-casing).")
    parser.add_argument("--no-strip-accents", dest="strip_accents", action="store_false",
                        help="Don't strip accents.")
    parser.add_argument("--seed", default=None, type=int,
                        help="Seed of the random draws (not in the original, which never seeds "
                             "them): the output equals the original's with random.seed(SEED) "
                             "(job j of several: random.seed(SEED + j)).")
    parser.set_defaults(do_lower_case=True, strip_accents=True)
    args = parser.parse_args(argv)
    return BuildOptions(
        corpus_dir=args.corpus_dir, vocab_file=args.vocab_file, output_dir=args.output_dir,
        max_seq_length=args.max_seq_length, num_processes=args.num_processes,
        blanks_separate_docs=args.blanks_separate_docs, do_lower_case=args.do_lower_case,
        strip_accents=args.strip_accents, seed=args.seed)


def main(argv=None):
    options = parse_args(argv)
    try:
        build(options)
    except (DataError, OSError) as e:
        print(f"build_pretraining_dataset: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
