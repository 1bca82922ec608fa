"""Builds a WordPiece vocab.txt from your own corpus, for bert_tf's (and the original's) tokenizer.

    python -m bert_tf.vocab --input_file=corpus.txt[,more.txt,glob*.txt] \\
        --output_file=vocab.txt --vocab_size=30522 --do_lower_case=true

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
import sys

from bert_tf import files, tokenization

RESERVED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


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
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    raw = collections.Counter()
    for line in lines:
        raw.update(basic._clean_and_split(line))
    counts = collections.Counter()
    for word, n in raw.items():  # each distinct whitespace word is split once
        for piece in basic._split_word(word):
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
        include_joiner_token=True, joiner="##")
    if len(vocab) > vocab_size:
        # At the lowest threshold the learner may overshoot: keep the reserved tokens and the
        # alphabet (each character and its ## continuation, so every word stays coverable),
        # then the most frequent pieces (the learner lists them by decreasing count).
        essential = set(reserved_tokens)
        essential.update(t for t in vocab if len(t) == 1 or (t.startswith("##") and len(t) == 3))
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
    loaded = tokenization.load_vocab(output_file)
    assert list(loaded) == vocab, "vocab did not read back identically"
    return vocab


def main(argv):
    from absl import flags, logging

    del argv
    f = flags.FLAGS
    if f.vocab_size is None or f.vocab_size <= 0:
        raise VocabBuildError("--vocab_size must be a positive integer")
    vocab = build_vocab_file(
        f.input_file, f.output_file, f.vocab_size, do_lower_case=f.do_lower_case,
        extra_reserved_tokens=f.extra_reserved_tokens or (),
        max_unique_chars=f.max_unique_chars, max_token_length=f.max_token_length,
        num_iterations=f.num_iterations, slack_ratio=f.slack_ratio, lower_thresh=f.lower_thresh)
    print(f"wrote {len(vocab)} entries to {f.output_file}")
    if len(vocab) < (1 - f.slack_ratio) * f.vocab_size:
        logging.warning(
            "only %d entries for --vocab_size=%d: every piece seen at least --lower_thresh=%d "
            "times is already in; a small corpus may need --lower_thresh=1 or 2",
            len(vocab), f.vocab_size, f.lower_thresh)


def _define_flags():
    from absl import flags

    flags.DEFINE_string("input_file", None,
                        "Corpus: comma-separated text files or globs, read line by line.")
    flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
    flags.DEFINE_integer("vocab_size", None,
                         "Largest vocab size wanted (reserved tokens included).")
    flags.DEFINE_bool("do_lower_case", True,
                      "Lower-case and strip accents (uncased model) or not (cased model); use "
                      "the same value when tokenizing.")
    flags.DEFINE_list("extra_reserved_tokens", [],
                      "More reserved tokens, after [PAD],[UNK],[CLS],[SEP],[MASK].")
    flags.DEFINE_integer("max_unique_chars", 1000,
                         "Alphabet size: words with rarer characters are not learned from.")
    flags.DEFINE_integer("max_token_length", 50, "Longest piece learned.")
    flags.DEFINE_integer("num_iterations", 4, "Learner iterations.")
    flags.DEFINE_integer("lower_thresh", 10,
                         "Lowest piece frequency the threshold search may go down to (tensorflow-"
                         "text's default 10; use 1-2 for a small corpus).")
    flags.DEFINE_float("slack_ratio", 0.05,
                       "Accept a vocab between (1 - slack_ratio) * vocab_size and vocab_size.")
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_size"])


def run():
    from absl import app

    _define_flags()

    def _main(argv):
        try:
            main(argv)
        except (VocabBuildError, tokenization.VocabError, files.OutputError) as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)

    app.run(_main)


if __name__ == "__main__":
    run()
