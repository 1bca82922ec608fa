"""Learns a WordPiece vocab.txt from your own corpus, for bert_tf's (and the original's)
tokenizer; `python -m bert_tf.vocab` is its command.

Words are produced exactly as `FullTokenizer` will see them (`BasicTokenizer`: cleaning, CJK
splitting, optional lower-casing and accent stripping, punctuation splitting), counted, and
handed to tensorflow-text's WordPiece vocabulary learner
(`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn`: it searches a
frequency threshold so that the vocab has between (1 - slack_ratio) * vocab_size and vocab_size
entries, keeping every character of the alphabet and its `##` continuation so that any word of
the alphabet can be covered). The file starts with `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`
(ids 0-4), then any --extra_reserved_tokens, then the learned pieces; it is written to a temporary
name and renamed, so a file at --output_file is always complete.

The learner module is loaded from the installed tensorflow-text package by path, without
importing TensorFlow.
"""

import collections
import glob
import importlib.util
import os

from bert_tf import files
from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
from bert_tf.text import BasicTokenizer, load_vocab

_SPECIAL = WORDPIECE_SPECIAL_TOKENS
# Ids 0-4, in the order of Google's vocab files.
RESERVED_TOKENS = (_SPECIAL.pad, _SPECIAL.unk, _SPECIAL.cls, _SPECIAL.sep, _SPECIAL.mask)


class VocabBuildError(ValueError):
    """Bad input to the vocab builder (missing files, empty corpus, impossible size)."""


def _load_learner():
    """tensorflow-text's WordPiece learner module, loaded without importing TensorFlow."""
    spec = importlib.util.find_spec("tensorflow_text")
    if spec is None or not spec.submodule_search_locations:
        raise VocabBuildError("tensorflow-text is not installed; `pip install tensorflow-text` "
                              "(it provides the WordPiece vocabulary learner)")
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "tools", "wordpiece_vocab",
                            "wordpiece_tokenizer_learner_lib.py")
        if os.path.exists(path):
            learner_spec = importlib.util.spec_from_file_location(
                "_bert_tf_wordpiece_learner", path)
            module = importlib.util.module_from_spec(learner_spec)
            learner_spec.loader.exec_module(module)
            return module
    # An unusual layout: import it the normal way (this imports TensorFlow).
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

    return wordpiece_tokenizer_learner_lib


def expand_input_files(input_file):
    """Comma-separated paths or glob patterns -> list of files (sorted within each pattern)."""
    patterns = [p.strip() for p in str(input_file).split(",") if p.strip()]
    if not patterns:
        raise VocabBuildError("--input_file is empty; expected comma-separated paths or globs")
    files = []
    for pattern in patterns:
        if "://" in pattern:
            import tensorflow as tf  # remote file systems only

            matches = tf.io.gfile.glob(pattern)
        else:
            matches = sorted(glob.glob(pattern))
        if not matches:
            raise VocabBuildError(f"--input_file: no file matches {pattern!r}")
        files.extend(matches)
    return files


def _read_lines(path):
    if "://" in path:
        import tensorflow as tf

        with tf.io.gfile.GFile(path, "rb") as f:
            data = f.read()
        yield from data.split(b"\n")
        return
    with open(path, "rb") as f:
        for line in f:
            yield line


def count_words(lines, do_lower_case=True):
    """Counts the words `BasicTokenizer(do_lower_case)` produces on `lines` (str or bytes).

    Returns:
      collections.Counter word (str) -> count.
    """
    basic = BasicTokenizer(do_lower_case=do_lower_case)
    raw = collections.Counter()
    for line in lines:
        raw.update(basic.clean_and_split(line))
    counts = collections.Counter()
    for word, n in raw.items():  # each distinct whitespace word is split once
        for piece in basic.split_word(word):
            counts[piece] += n
    return counts


def learn_vocab(word_counts, vocab_size, reserved_tokens=RESERVED_TOKENS, *,
                max_unique_chars=1000, max_token_length=50, num_iterations=4,
                slack_ratio=0.05, lower_thresh=10):
    """WordPiece vocab (list of str, reserved tokens first) learned from `word_counts`."""
    reserved_tokens = list(reserved_tokens)
    if len(set(reserved_tokens)) != len(reserved_tokens):
        raise VocabBuildError(f"reserved tokens repeat an entry: {reserved_tokens}")
    if vocab_size <= len(reserved_tokens):
        raise VocabBuildError(
            f"--vocab_size={vocab_size} leaves no room after the {len(reserved_tokens)} "
            "reserved tokens")
    counts = [(w, c) for w, c in sorted(word_counts.items(), key=lambda x: (-x[1], x[0]))]
    if not counts:
        raise VocabBuildError("the corpus has no words (empty or only whitespace/control chars)")
    learner = _load_learner()
    vocab = learner.learn(
        counts, vocab_size, reserved_tokens, lower_thresh=lower_thresh,
        num_iterations=num_iterations, max_token_length=max_token_length,
        max_unique_chars=max_unique_chars, slack_ratio=slack_ratio,
        include_joiner_token=True, joiner=_SPECIAL.continuation_prefix)
    if len(vocab) > vocab_size:
        # At the lowest threshold the learner may overshoot: keep the reserved tokens and the
        # alphabet (each character and its ## continuation, so every word stays coverable),
        # then the most frequent pieces (the learner lists them by decreasing count).
        joiner = _SPECIAL.continuation_prefix
        essential = set(reserved_tokens)
        essential.update(t for t in vocab
                         if len(t) == 1 or (t.startswith(joiner) and len(t) == len(joiner) + 1))
        if len(essential) > vocab_size:
            raise VocabBuildError(
                f"the corpus alphabet alone needs {len(essential)} entries (reserved tokens, "
                f"each character and its ## continuation), more than --vocab_size={vocab_size}; "
                "raise --vocab_size or lower --max_unique_chars")
        room = vocab_size - len(essential)
        kept = []
        for token in vocab:
            if token in essential:
                kept.append(token)
            elif room > 0:
                kept.append(token)
                room -= 1
        vocab = kept
    if vocab[:len(reserved_tokens)] != reserved_tokens:
        raise AssertionError("the learner did not put the reserved tokens first")
    return vocab


def write_vocab(vocab, output_file):
    """Writes one token per line, atomically (temporary file, then rename)."""
    for i, token in enumerate(vocab):
        if token != token.strip() or "\n" in token or not token:
            raise VocabBuildError(f"vocab entry {i} ({token!r}) is empty or has surrounding "
                                  "whitespace; it would not read back")
    data = "".join(token + "\n" for token in vocab).encode("utf-8")
    directory = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(directory):
        raise VocabBuildError(f"--output_file: directory {directory!r} does not exist")
    files.write_atomic(output_file, data)


def build_vocab_file(input_file, output_file, vocab_size, do_lower_case=True,
                     extra_reserved_tokens=(), **learn_kwargs):
    """Reads the corpus, learns the vocab, writes it; returns the vocab (list of str)."""
    files = expand_input_files(input_file)

    def lines():
        for path in files:
            yield from _read_lines(path)

    counts = count_words(lines(), do_lower_case=do_lower_case)
    vocab = learn_vocab(counts, vocab_size, RESERVED_TOKENS + tuple(extra_reserved_tokens),
                        **learn_kwargs)
    write_vocab(vocab, output_file)
    # Read it back the way the tokenizer will.
    loaded = load_vocab(output_file)
    assert list(loaded) == vocab, "vocab did not read back identically"
    return vocab
