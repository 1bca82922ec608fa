"""bert_tf.electra.build_pretraining_dataset against the original's recorded records.

tests/data/electra_data/expected.json.gz was recorded by tests/data/electra_data/make_expected.py:
google-research/electra's build_pretraining_dataset functions on corpus/ with vocab.txt, Python's
`random` seeded (per job), for several flag sets, one and several processes.

Records are compared map entry by map entry (the original's protobuf writes the three entries of
`Features.feature` in an order that varies between processes; ours sorts them, as deterministic
serialization does), and the TFRecord framing is checked (lengths and CRCs), without TensorFlow.
"""

import gzip
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bert_tf.data.writer import crc32c, masked_crc32c
from bert_tf.electra import build_pretraining_dataset as bpd

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "electra_data"
CORPUS = DATA / "corpus"
VOCAB = DATA / "vocab.txt"
with gzip.open(DATA / "expected.json.gz", "rt", encoding="utf-8") as _f:
    EXPECTED = {case["name"]: case for case in json.load(_f)}


def read_records(path):
    """The records of a TFRecord file, checking its framing."""
    data = Path(path).read_bytes()
    records, i = [], 0
    while i < len(data):
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == masked_crc32c(crc32c(header))
        record = data[i + 12:i + 12 + n]
        assert struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == masked_crc32c(crc32c(record))
        records.append(record)
        i += 16 + n
    return records


def _read_varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


def map_entries(record):
    """[(key, entry bytes)] of an Example's `features.feature` map, in the record's order."""
    assert record[0] == 0x0A  # Example.features
    n, i = _read_varint(record, 1)
    assert i + n == len(record)
    entries = []
    while i < len(record):
        assert record[i] == 0x0A  # Features.feature entry
        n, j = _read_varint(record, i + 1)
        entry = record[j:j + n]
        assert entry[0] == 0x0A
        key_len, k = _read_varint(entry, 1)
        entries.append((entry[k:k + key_len].decode(), entry))
        i = j + n
    return entries


def assert_same_records(output_dir, case):
    names = sorted(os.listdir(output_dir))
    assert len(names) == case["num_files"] == 1000
    assert not [n for n in names if n.endswith(".incomplete")]
    total = 0
    for index in range(1000):
        ours = read_records(Path(output_dir) / f"pretrain_data.tfrecord-{index}-of-1000")
        theirs = [bytes.fromhex(h) for h in case["files"].get(str(index), [])]
        assert len(ours) == len(theirs), f"file {index}"
        for a, b in zip(ours, theirs):
            entries = map_entries(a)
            assert [key for key, _ in entries] == ["input_ids", "input_mask", "segment_ids"]
            assert dict(entries) == dict(map_entries(b)), f"file {index}"
            assert len(a) == len(b)
        total += len(ours)
    assert total == sum(len(v) for v in case["files"].values()) > 50


def _options(case, output_dir, **changes):
    values = dict(case["flags"], corpus_dir=str(CORPUS), vocab_file=str(VOCAB),
                  output_dir=str(output_dir), seed=case["seed"])
    return bpd.BuildOptions(**{**values, **changes})


@pytest.mark.parametrize("name", ["default", "short", "keep_accents", "cased"])
def test_one_process_equals_the_original(name, tmp_path, capsys):
    case = EXPECTED[name]
    assert bpd.build(_options(case, tmp_path)) == sum(len(v) for v in case["files"].values())
    assert_same_records(tmp_path, case)
    out = capsys.readouterr().out
    assert "Job 0: Done!" in out


@pytest.mark.parametrize("name", ["two_jobs", "three_jobs_no_blanks"])
def test_several_processes_equal_the_original(name, tmp_path):
    case = EXPECTED[name]
    bpd.build(_options(case, tmp_path))
    assert_same_records(tmp_path, case)


def test_command_line_equals_the_original(tmp_path):
    case = EXPECTED["two_jobs"]
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "bert_tf.electra.build_pretraining_dataset", "--corpus-dir", str(CORPUS),
         "--vocab-file", str(VOCAB), "--output-dir", str(out), "--max-seq-length", "32",
         "--num-processes", "2", "--blanks-separate-docs", "False", "--seed", "3"],
        cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Job 1: Done!" in done.stdout
    assert_same_records(out, case)  # "False" is True, as with the original's type=bool


def test_blanks_separate_docs_is_the_originals_bool(capsys):
    base = ["--corpus-dir", "c", "--vocab-file", "v", "--output-dir", "o"]
    assert bpd.parse_args(base).blanks_separate_docs is True
    assert bpd.parse_args(base + ["--blanks-separate-docs", "False"]).blanks_separate_docs is True
    assert "--blanks-separate-docs=False means True" in capsys.readouterr().err
    assert bpd.parse_args(base + ["--blanks-separate-docs", ""]).blanks_separate_docs is False
    options = bpd.parse_args(base + ["--no-lower-case", "--no-strip-accents"])
    assert (options.do_lower_case, options.strip_accents, options.seed) == (False, False, None)


def test_without_a_seed_the_logged_seed_reproduces_the_run(tmp_path, capsys):
    options = _options(EXPECTED["short"], tmp_path / "a", seed=None)
    bpd.build(options)
    line = [l for l in capsys.readouterr().out.splitlines() if l.startswith("Random seed: ")][0]
    seed = int(line.split()[2])
    bpd.build(_options(EXPECTED["short"], tmp_path / "b", seed=seed))
    for index in range(1000):
        name = f"pretrain_data.tfrecord-{index}-of-1000"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_messy_corpus_where_the_original_crashes(tmp_path):
    """Bytes that are not UTF-8 are dropped and subdirectories skipped (the original stops)."""
    clean, messy = tmp_path / "clean", tmp_path / "messy"
    clean.mkdir()
    messy.mkdir()
    for path in CORPUS.iterdir():
        (clean / path.name).write_bytes(path.read_bytes())
        (messy / path.name).write_bytes(path.read_bytes())
    (clean / "g_latin1.txt").write_bytes(b"caf and nave text\nsecond line here\n")
    (messy / "g_latin1.txt").write_bytes(b"caf\xe9 and na\xefve text\nsecond line here\n")
    (clean / "h_subdir").write_bytes(b"")  # an empty file: no example, no random draw
    (messy / "h_subdir").mkdir()
    case = EXPECTED["short"]
    bpd.build(_options(case, tmp_path / "out_clean", corpus_dir=str(clean)))
    bpd.build(_options(case, tmp_path / "out_messy", corpus_dir=str(messy)))
    for index in range(1000):
        name = f"pretrain_data.tfrecord-{index}-of-1000"
        assert (tmp_path / "out_clean" / name).read_bytes() == (tmp_path / "out_messy" / name).read_bytes()
    assert sum(len(read_records(p)) for p in (tmp_path / "out_messy").iterdir()) > 50


def test_output_dir_keeps_other_files_and_replaces_the_records(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "pretrain_data.tfrecord-0-of-1000").write_bytes(b"stale")
    case = EXPECTED["default"]
    bpd.build(_options(case, out))
    assert (out / "notes.txt").read_text() == "mine"
    os.remove(out / "notes.txt")
    assert_same_records(out, case)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(corpus_dir="/no/such/corpus"), "--corpus-dir: '/no/such/corpus' does not exist"),
        (dict(vocab_file="/no/such/vocab.txt"), "--vocab-file: vocab file '/no/such/vocab.txt' does not exist"),
        (dict(max_seq_length=4), "--max-seq-length=4: expected an integer >= 5"),
        (dict(num_processes=0), "--num-processes=0: expected an integer in [1, 1000]"),
        (dict(num_processes=1001), "--num-processes=1001: expected an integer in [1, 1000]"),
    ],
)
def test_bad_input_gives_one_line(tmp_path, change, message):
    options = _options(EXPECTED["default"], tmp_path / "out", **change)
    with pytest.raises(bpd.DataError) as info:
        bpd.build(options)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_bad_vocab_and_output_dir_from_the_command_line(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[SEP]\nhello\n")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    cases = [
        (["--vocab-file", str(vocab), "--output-dir", str(tmp_path / "o")],
         f"--vocab-file: '{vocab}' has no [CLS] entry"),
        (["--vocab-file", str(VOCAB), "--output-dir", str(not_a_dir)],
         f"--output-dir: '{not_a_dir}' exists and is not a directory"),
        (["--vocab-file", str(VOCAB), "--output-dir", str(tmp_path / "o"), "--corpus-dir", str(not_a_dir)],
         f"--corpus-dir: '{not_a_dir}' is not a directory"),
    ]
    for args, message in cases:
        done = subprocess.run(
            [sys.executable, "-m", "bert_tf.electra.build_pretraining_dataset", "--corpus-dir", str(CORPUS)]
            + args, cwd=REPO, capture_output=True, text=True, check=False)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "o").exists()


def test_tokenizer_strip_accents_option():
    """ELECTRA's tokenizer option: accents kept when lower-casing with strip_accents=False; it
    changes nothing without lower-casing (as there)."""
    from bert_tf.bert.tokenization import BasicTokenizer, FullTokenizer

    text = "Café naïve"
    assert BasicTokenizer().tokenize(text) == ["cafe", "naive"]
    assert BasicTokenizer(strip_accents=False).tokenize(text) == ["café", "naïve"]
    assert BasicTokenizer(do_lower_case=False, strip_accents=True).tokenize(text) == ["Café", "naïve"]
    assert FullTokenizer(str(VOCAB)).tokenize(text) == ["cafe", "naive"]
    assert FullTokenizer(str(VOCAB), strip_accents=False).tokenize(text) == ["[UNK]", "[UNK]"]
