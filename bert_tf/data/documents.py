"""Input text -> tokenized documents, the way the original's reader sees the files.

Format (REFERENCE.md §7): one sentence per line, blank lines between documents. As in the
original (which reads through `tf.gfile.GFile.readline`):
  - lines end at b"\\n" only; every b"\\r" is dropped; each line is `str.strip()`-ed;
  - a blank line starts a new document, also across file boundaries (a file that does not end
    with a blank line continues its last document into the next file);
  - a line whose tokenization is empty adds nothing; documents without tokens are dropped;
  - text must be UTF-8 (the original fails on anything else; we name the file and line).

Documents are stored as a `Corpus`: one flat id array plus sentence and document boundaries.
"""

import array
import glob
import os



class DataError(ValueError):
    """Bad input to pretraining-data creation: a flag, an input file, the vocab."""


def id_typecode(vocab_size):
    """The smallest `array` typecode holding every id below vocab_size."""
    return "H" if vocab_size <= 1 << 16 else "i"


class Corpus:
    """Tokenized documents: a flat id array plus sentence and document boundaries.

    Attributes:
      tokens: array of all token ids, sentence after sentence.
      sentence_bounds: array; sentence s is `tokens[sentence_bounds[s]:sentence_bounds[s + 1]]`.
      document_bounds: array; document d is sentences `document_bounds[d]` to
        `document_bounds[d + 1] - 1`. Only documents with tokens exist, in input order.
    """

    def __init__(self, typecode="H"):
        self.tokens = array.array(typecode)
        self.sentence_bounds = array.array("q", [0])
        self.document_bounds = array.array("q", [0])
        self._open_document = False

    @property
    def num_documents(self):
        return len(self.document_bounds) - 1

    @property
    def num_sentences(self):
        return len(self.sentence_bounds) - 1

    def add_sentence(self, ids, new_document=False):
        """Appends one non-empty tokenized line; `new_document` makes it start a new document."""
        if new_document and self._open_document:
            self.document_bounds.append(self.num_sentences)
        self.tokens.extend(ids)
        self.sentence_bounds.append(len(self.tokens))
        self._open_document = True

    def finish(self):
        """Closes the last document; call once after the last `add_sentence`."""
        if self._open_document:
            self.document_bounds.append(self.num_sentences)
            self._open_document = False
        return self

    def document(self, d):
        """Document d as a list of id lists (tests, debugging)."""
        b, t = self.sentence_bounds, self.tokens
        return [t[b[s]:b[s + 1]].tolist()
                for s in range(self.document_bounds[d], self.document_bounds[d + 1])]

    def nbytes(self):
        return sum(a.itemsize * len(a)
                   for a in (self.tokens, self.sentence_bounds, self.document_bounds))

    @classmethod
    def from_documents(cls, documents, typecode="H"):
        """Builds a corpus from lists of id lists; empty sentences and documents are dropped."""
        corpus = cls(typecode)
        for doc in documents:
            first = True
            for sentence in doc:
                if sentence:
                    corpus.add_sentence(sentence, new_document=first)
                    first = False
        return corpus.finish()


def _glob(pattern):
    if "://" in pattern:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote file systems only)

        return tf.io.gfile.glob(pattern)
    # Like tf.io.gfile.glob, which the original uses: directory order (not sorted), wildcards
    # also match a leading dot, a pattern without wildcards matches itself if it exists.
    return glob.glob(pattern, include_hidden=True)


def glob_input_files(input_file):
    """Expands the `--input_file` flag (comma list of files or globs) in the original's order.

    Raises:
      DataError: when the flag is empty or a pattern matches no file.
    """
    patterns = [p for p in (input_file or "").split(",") if p.strip()]
    if not patterns:
        raise DataError("--input_file is empty; expected a file, a glob or a comma list of them")
    files = []
    for pattern in patterns:
        matches = _glob(pattern)
        if not matches:
            raise DataError(f"--input_file: {pattern!r} matches no file")
        for path in matches:
            if "://" not in path and os.path.isdir(path):
                raise DataError(f"--input_file: {path!r} is a directory, expected a text file")
        files.extend(matches)
    return files


def _open_binary(path):
    if "://" in path:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top

        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def read_lines(path):
    """Yields the stripped lines of one input file as `str`."""
    with _open_binary(path) as f:
        for number, raw in enumerate(f, 1):
            if b"\r" in raw:
                raw = raw.replace(b"\r", b"")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(f"input file {path!r} line {number}: not valid UTF-8 ({e})") from None
            yield line.strip()


def lines_to_ids_function(tokenizer):
    """Returns f(list of str) -> list of id lists for any of the project's tokenizers.

    `bert_tf.bert.fast_tokenization.FastTokenizer.tokenize_to_ids` takes a batch;
    `bert_tf.bert.tokenization.FullTokenizer.tokenize_to_ids` takes one text; a tokenizer with the
    original's interface only has `tokenize` and `vocab`.
    """
    if type(tokenizer).__name__ == "FastTokenizer":
        return tokenizer.tokenize_to_ids
    one = getattr(tokenizer, "tokenize_to_ids", None)
    if one is not None:
        return lambda lines: [one(line) for line in lines]
    vocab, tokenize = tokenizer.vocab, tokenizer.tokenize
    return lambda lines: [[vocab[t] for t in tokenize(line)] for line in lines]


def read_corpus(input_files, lines_to_ids, typecode="H", num_shards=1, shard_index=0,
                batch_lines=2048, progress=None):
    """Reads and tokenizes the input files into a `Corpus`.

    Args:
      input_files: paths, read in this order.
      lines_to_ids: f(list of str) -> list of id lists (see `lines_to_ids_function`).
      typecode: `array` typecode of the ids (see `id_typecode`).
      num_shards, shard_index: keep only documents whose running number (counting every blank
        line, as the original's document list does before dropping empty documents) is
        shard_index modulo num_shards; the other documents are not even tokenized.
      batch_lines: lines per `lines_to_ids` call.
      progress: optional callable(lines_read, corpus), called after each batch.

    Returns:
      The `Corpus` (possibly without documents).
    """
    corpus = Corpus(typecode)
    document_number = 0
    last_document = -1
    pending, pending_documents = [], []
    lines_read = 0

    def flush():
        nonlocal last_document
        for ids, doc in zip(lines_to_ids(pending), pending_documents):
            if len(ids):
                corpus.add_sentence(ids, new_document=doc != last_document)
                last_document = doc
        pending.clear()
        pending_documents.clear()
        if progress is not None:
            progress(lines_read, corpus)

    for path in input_files:
        for line in read_lines(path):
            lines_read += 1
            if not line:
                document_number += 1
                continue
            if num_shards > 1 and document_number % num_shards != shard_index:
                continue
            pending.append(line)
            pending_documents.append(document_number)
            if len(pending) >= batch_lines:
                flush()
    flush()
    return corpus.finish()
