"""Reading input text into documents (bert_tf/data/documents.py), as the original reads it."""

import pytest

from bert_tf.data import documents


def _lines_to_ids(lines):
    # A toy tokenizer: one id per whitespace-separated word; "\x01" alone tokenizes to nothing.
    return [[len(w) for w in line.split() if w != "\x01"] for line in lines]


def _read(tmp_path, *texts, **kw):
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"in{i}.txt"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        paths.append(str(path))
    corpus = documents.read_corpus(paths, _lines_to_ids, **kw)
    return [corpus.document(d) for d in range(corpus.num_documents)]


def test_blank_lines_separate_documents_and_empty_ones_vanish(tmp_path):
    docs = _read(tmp_path, "a bb\nccc\n\n\n   \n\t\ndddd\n\x01\n\n\x01\n\n")
    assert docs == [[[1, 2], [3]], [[4]]]


def test_carriage_returns_are_dropped_and_lines_end_at_newline_only(tmp_path):
    # GFile.readline, which the original uses, drops every "\r"; "\u2028" does not end a line.
    docs = _read(tmp_path, b"a\rbb\r\n\r\nccc\xe2\x80\xa8dd\n")
    assert docs == [[[3]], [[3, 2]]]  # "abb"; "ccc\u2028dd" is one line of two words


def test_documents_continue_across_files(tmp_path):
    docs = _read(tmp_path, "a\nbb", "ccc\n\ndddd\n")
    assert docs == [[[1], [2], [3]], [[4]]]


def test_sharding_deals_documents_by_running_number(tmp_path):
    text = "a\n\nbb\n\n\nccc\n\ndddd\n"  # documents 0, 1, (2 is empty), 3, 4
    assert _read(tmp_path, text, num_shards=2, shard_index=0) == [[[1]], [[4]]]
    assert _read(tmp_path, text, num_shards=2, shard_index=1) == [[[2]], [[3]]]
    assert _read(tmp_path, text) == [[[1]], [[2]], [[3]], [[4]]]


def test_not_utf8_names_file_and_line(tmp_path):
    with pytest.raises(documents.DataError, match=r"in0.txt' line 3: not valid UTF-8"):
        _read(tmp_path, b"a\n\nb\xff\n")


def test_glob_input_files(tmp_path):
    for name in ("x1.txt", "x2.txt", ".hidden.txt"):
        (tmp_path / name).write_text("a\n")
    files = documents.glob_input_files(f"{tmp_path}/x*.txt,{tmp_path}/*hidden*")
    assert sorted(files[:2]) == [f"{tmp_path}/x1.txt", f"{tmp_path}/x2.txt"]
    assert files[2:] == [f"{tmp_path}/.hidden.txt"]
    with pytest.raises(documents.DataError, match="matches no file"):
        documents.glob_input_files(f"{tmp_path}/x1.txt,{tmp_path}/nothing*")
    with pytest.raises(documents.DataError, match="is a directory"):
        documents.glob_input_files(str(tmp_path))
    with pytest.raises(documents.DataError, match="--input_file is empty"):
        documents.glob_input_files("")
