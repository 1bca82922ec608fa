"""bert_tf.albert.tokenization gives exactly google-research/albert's tokenization.py output.

Evidence:
  * hand-written expectations for the quirks (the digit-comma "▁", the family tokenizer);
  * tests/data/albert_tokenization/expected.jsonl.gz: the ORIGINAL module's output on an
    adversarial text set (recorded by make_expected.py beside it), both do_lower_case settings,
    the SentencePiece path (tests/data/albert_spm/albert.model) and the WordPiece path
    (../shared/data/uncased_vocab.txt);
  * when a copy of the original exists (ALBERT_ORIGINAL_REPO, default /tmp/orig_albert), a live
    comparison on the same texts plus a seeded random fuzz corpus.
"""

import gzip
import json
import random
from pathlib import Path

import pytest

from bert_tf.albert import tokenization
from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
from conftest import ALBERT_ORIGINAL_REPO, SHARED_DIR, load_recorder

HERE = Path(__file__).resolve().parent
SPM_MODEL = str(HERE / "data" / "albert_spm" / "albert.model")
UNCASED_VOCAB = SHARED_DIR / "data" / "uncased_vocab.txt"
EXPECTED = HERE / "data" / "albert_tokenization" / "expected.jsonl.gz"
ORIGINAL_REPO = ALBERT_ORIGINAL_REPO
recorder = load_recorder("albert_tokenization")

needs_vocab = pytest.mark.skipif(
    not UNCASED_VOCAB.exists(), reason=f"{UNCASED_VOCAB} (the real uncased vocab) is absent")
needs_original = pytest.mark.skipif(
    not (ORIGINAL_REPO / "tokenization.py").exists(),
    reason=f"no copy of google-research/albert at {ORIGINAL_REPO} (set ALBERT_ORIGINAL_REPO)")


def _expected():
    with gzip.open(EXPECTED, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return rows[:-1], rows[-1]["load_vocab"]


ROWS, LOAD_VOCAB = _expected()


@pytest.fixture(scope="module")
def spm_tokenizers():
    return {lower: tokenization.FullTokenizer(None, lower, spm_model_file=SPM_MODEL)
            for lower in (True, False)}


@pytest.fixture(scope="module")
def wordpiece_tokenizers():
    if not UNCASED_VOCAB.exists():
        pytest.skip(f"{UNCASED_VOCAB} is absent")
    return {lower: tokenization.FullTokenizer(str(UNCASED_VOCAB), lower) for lower in (True, False)}


# -- hand-written -------------------------------------------------------------------------------

def test_digit_comma_keeps_the_underline(spm_tokenizers):
    tok = spm_tokenizers[True]
    # SentencePiece gives the pieces "▁", "0,"; the original re-encodes "0" (-> "▁", "0") and
    # keeps the "▁" the re-encoding adds (Hugging Face's AlbertTokenizer drops it).
    assert tok.sp_model.EncodeAsPieces("0,") == ["▁", "0,"]
    assert tok.tokenize("0,") == ["▁", "▁", "0", ","]
    # Inside a word too: "5," (no "▁") becomes "▁", "5", ",".
    assert tok.sp_model.EncodeAsPieces("x 2,5,") == ["▁", "x", "▁", "2,", "5,"]
    assert tok.tokenize("x 2,5,") == ["▁", "x", "▁", "▁", "2", ",", "▁", "5", ","]
    assert tok.tokenize("1,000") == ["▁", "1", ",", "0", "00"]


def test_preprocess_text():
    assert tokenization.preprocess_text("  Café\t\u3000NAÏVE  ﬁ ") == "Cafe NAIVE fi"
    assert tokenization.preprocess_text("  Café  NAÏVE ", lower=True) == "cafe naive"
    assert tokenization.preprocess_text(" a  b ", remove_space=False) == " a  b "
    assert tokenization.preprocess_text("\u0301") == ""


class _FakeModel:
    """Records the texts a SentencePiece model is asked to encode."""

    def __init__(self, pieces):
        self.pieces, self.calls = pieces, []

    def EncodeAsPieces(self, text):  # noqa: N802 (sentencepiece's name)
        self.calls.append(("encode", text))
        return list(self.pieces.get(text, ["▁" + text]))

    def SampleEncodeAsPieces(self, text, nbest_size, alpha):  # noqa: N802
        self.calls.append(("sample", text, nbest_size, alpha))
        return list(self.pieces[text])


def test_encode_pieces_reencodes_numbers_and_samples_like_the_original():
    model = _FakeModel({"x 12,": ["▁x", "▁12,"], "12": ["▁1", "2"]})
    assert tokenization.encode_pieces(model, "x 12,") == ["▁x", "▁1", "2", ","]
    assert model.calls == [("encode", "x 12,"), ("encode", "12")]
    model.calls.clear()
    assert tokenization.encode_pieces(model, "x 12,", sample=True) == ["▁x", "▁1", "2", ","]
    assert model.calls[0] == ("sample", "x 12,", 64, 0.1)


def test_special_tokens_and_vocab(spm_tokenizers, wordpiece_tokenizers):
    tok = spm_tokenizers[True]
    assert tok.special_tokens == tokenization.SENTENCEPIECE_SPECIAL_TOKENS
    assert (tok.special_tokens.cls, tok.special_tokens.sep, tok.special_tokens.mask,
            tok.special_tokens.pad, tok.special_tokens.unk,
            tok.special_tokens.word_start_prefix) == ("[CLS]", "[SEP]", "[MASK]", "<pad>",
                                                      "<unk>", "▁")
    assert [tok.vocab[t] for t in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
    assert len(tok.vocab) == 2000 and tok.inv_vocab[13] == "▁"
    # [MASK] written in text is not the control symbol; unknown pieces are <unk>'s id.
    assert "[MASK]" not in tok.tokenize("a [MASK] b")
    assert tok.convert_tokens_to_ids(["[MASK]", "not-a-piece"]) == [4, 1]
    assert tok.convert_ids_to_tokens([0, 4]) == ["<pad>", "[MASK]"]
    assert wordpiece_tokenizers[True].special_tokens == WORDPIECE_SPECIAL_TOKENS
    assert wordpiece_tokenizers[True].sp_model is None


def test_load_vocab_rule(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text(recorder.LOAD_VOCAB_TEXT, encoding="utf-8")
    assert list(tokenization.load_vocab(str(path)).items()) == [tuple(x) for x in LOAD_VOCAB]
    assert list(tokenization.load_vocab(str(path)).items())[:4] == [
        ("[PAD]", 0), ("[UNK]", 1), ("hello", 2), ("world", 3)]
    # The WordPiece FullTokenizer reads its vocab by this rule (BERT's refuses the repeats).
    tok = tokenization.FullTokenizer(str(path), True)
    assert list(tok.vocab.items()) == [tuple(x) for x in LOAD_VOCAB]
    assert tok.tokenize_to_ids("Hello world") == [2, 3]


# -- the family's tokenizer ---------------------------------------------------------------------

def test_family_tokenizer_takes_the_model_as_vocab_file_and_preprocesses(spm_tokenizers):
    for lower in (True, False):
        family = tokenization.AlbertTokenizer(SPM_MODEL, lower)
        raw = spm_tokenizers[lower]
        text = "  Café NAÏVE 1,000 ﬁ\t x "
        pre = tokenization.preprocess_text(text, lower=lower)
        assert family.tokenize(text) == raw.tokenize(pre)
        assert family.tokenize_to_ids(text) == raw.convert_tokens_to_ids(raw.tokenize(pre))
        assert family.sp_model is not None and family.vocab == raw.vocab
    assert tokenization.AlbertTokenizer("unused", True, spm_model_file=SPM_MODEL).tokenize(
        "Hi") == spm_tokenizers[True].tokenize("hi")


@needs_vocab
def test_family_tokenizer_wordpiece_is_berts(wordpiece_tokenizers):
    family = tokenization.AlbertTokenizer(str(UNCASED_VOCAB), True, cache_size=10)
    assert family.sp_model is None
    text = "Café ﬁ UNAFFABLE 1,000"
    assert family.tokenize(text) == wordpiece_tokenizers[True].tokenize(text)


@pytest.mark.parametrize("make,path,message", [
    ("family", "missing.model", "vocab file '{}' does not exist"),
    ("family", "not_a_model.bin", "vocab file '{}' is neither a SentencePiece model nor a UTF-8 "
     "vocab file"),
    ("family", "no_unk.txt", "vocab file '{}' is neither a SentencePiece model nor a WordPiece "
     "vocab with an [UNK] entry"),
    ("spm", "no_unk.txt", "spm_model_file '{}' is not a SentencePiece model"),
    ("spm", "missing.model", "spm_model_file '{}' does not exist"),
])
def test_bad_files_are_named(tmp_path, make, path, message):
    (tmp_path / "not_a_model.bin").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "no_unk.txt").write_text("[CLS]\n[SEP]\n", encoding="utf-8")
    path = str(tmp_path / path)
    with pytest.raises(tokenization.VocabError) as info:
        if make == "family":
            tokenization.AlbertTokenizer(path, True)
        else:
            tokenization.FullTokenizer(None, True, spm_model_file=path)
    assert str(info.value) == message.format(path)
    assert "\n" not in str(info.value)


# -- character offsets (SQuAD's answers) -------------------------------------------------------

def _offset_texts(count, seed):
    """Texts mixing the cases offsets must survive: accents precomposed and decomposed,
    compatibility characters, casing that changes length, digits with commas, every kind of
    whitespace (inside a text: collapsed), zero-width and control characters, and random
    code points."""
    rng = random.Random(seed)
    alphabet = list("abcXYZ 0123456789,.-()'`") + [
        "\u00a0", "\u0301", "\u0308", "é", "Å", "ﬁ", "Σ", "İ", "ß", "\t", "\n", "\u3000",
        "\u2028", "한", "Ａ", "１", "²", "\u200b", "\ufeff", "\x00", "😀"]
    return ["".join(rng.choice(alphabet) if rng.random() < 0.6 else chr(rng.randrange(0x20, 0x3000))
                    for _ in range(rng.randint(0, 16))) for _ in range(count)]


def test_preprocess_text_with_offsets():
    text, origin = tokenization.preprocess_text_with_offsets(
        "  Ca\u0301fé\u00a0\t ﬁ İ ", lower=True)
    assert text == tokenization.preprocess_text("  Ca\u0301fé\u00a0\t ﬁ İ ", lower=True)
    assert text == "cafe fi i"
    # C a (\u0301 dropped) f é, a whitespace run from its first character, ﬁ twice, İ (NFKD's
    # combining dot dropped).
    assert origin == [2, 3, 5, 6, 7, 10, 10, 11, 12]
    for seed, lower in ((0, True), (1, False)):
        for raw in _offset_texts(300, seed):
            text, origin = tokenization.preprocess_text_with_offsets(raw, lower=lower)
            assert text == tokenization.preprocess_text(raw, lower=lower), repr(raw)
            assert len(origin) == len(text) and origin == sorted(origin), repr(raw)


def test_tokenize_with_offsets_gives_each_pieces_characters():
    family = tokenization.AlbertTokenizer(SPM_MODEL, True)
    text = "Zürich, 1,000 Cafe\u0301s  naïve ﬁne In 1990, Ａ"
    pieces, spans = family.tokenize_with_offsets(text)
    assert pieces == family.tokenize(text)
    got = [(piece, text[start:end]) for piece, (start, end) in zip(pieces, spans)]
    assert got == [
        ("▁z", "Z"), ("u", "ü"), ("rich", "rich"), (",", ","), ("▁", ""), ("1", "1"),
        (",", ","), ("0", "0"), ("00", "00"), ("▁ca", "Ca"), ("f", "f"), ("es", "e\u0301s"),
        ("▁na", "na"), ("ive", "ïve"), ("▁fin", "ﬁn"), ("e", "e"), ("▁in", "In"),
        ("▁199", "199"), ("▁", ""), ("0", "0"), (",", ","), ("▁", ""), ("a", "Ａ")]
    # A lone "▁" stands for no character: empty, where its word goes on.
    assert spans[4] == (text.index("1,000"),) * 2
    assert spans[-2] == (len(text) - 1,) * 2


@needs_vocab
def test_tokenize_with_offsets_needs_sentencepiece():
    with pytest.raises(TypeError, match="needs a SentencePiece model"):
        tokenization.AlbertTokenizer(str(UNCASED_VOCAB), True).tokenize_with_offsets("a")


def test_tokenize_with_offsets_on_fuzzed_texts():
    """The pieces are `tokenize`'s; the spans are in order, inside the text, never start or end
    with whitespace, are empty exactly for the lone "▁" pieces, and each piece's text is in
    the preprocessed, SentencePiece-normalised text of its characters."""
    for lower in (True, False):
        family = tokenization.AlbertTokenizer(SPM_MODEL, lower)
        normalize = family.sp_model.Normalize
        for raw in _offset_texts(1000, 2 + lower):
            pieces, spans = family.tokenize_with_offsets(raw)
            assert pieces == family.tokenize(raw), repr(raw)
            assert [s for s, _ in spans] == sorted(s for s, _ in spans), repr(raw)
            for piece, (start, end) in zip(pieces, spans):
                assert 0 <= start <= end <= len(raw), repr(raw)
                inner = piece.replace(tokenization.SPIECE_UNDERLINE, "")
                assert (start == end) == (not inner), (raw, piece)
                if start < end:
                    assert not (raw[start].isspace() or raw[end - 1].isspace()), repr(raw)
                    chars = normalize(tokenization.preprocess_text(raw[start:end], lower=lower))
                    # casefold: a final sigma is "ς" in its text, "σ" alone.
                    assert inner.casefold() in chars.replace(
                        tokenization.SPIECE_UNDERLINE, "").casefold(), (raw, piece)


# -- the original's recorded outputs ------------------------------------------------------------

def _case_id(row):
    return f"{row['name']}-{'uncased' if row['do_lower_case'] else 'cased'}"


@pytest.mark.parametrize("row", ROWS, ids=[_case_id(r) for r in ROWS])
def test_recorded_sentencepiece(row, spm_tokenizers):
    value = recorder.decode_case(row)
    text = recorder.as_text(value)
    lower = row["do_lower_case"]
    tok = spm_tokenizers[lower]
    pre = tokenization.preprocess_text(text, lower=lower)
    assert pre == row["preprocessed"]
    assert tok.tokenize(pre) == row["spm_pieces"]
    assert tok.tokenize_to_ids(pre) == row["spm_ids"]
    assert tokenization.encode_ids(tok.sp_model, pre) == row["spm_ids"]
    assert tok.tokenize(text) == row["spm_raw_pieces"]


@needs_vocab
@pytest.mark.parametrize("row", ROWS, ids=[_case_id(r) for r in ROWS])
def test_recorded_wordpiece(row, wordpiece_tokenizers):
    tok = wordpiece_tokenizers[row["do_lower_case"]]
    value = recorder.decode_case(row)
    assert tok.tokenize(value) == row["wp_tokens"]
    assert tok.tokenize_to_ids(value) == row["wp_ids"]
    assert tok.convert_tokens_to_ids(row["wp_tokens"]) == row["wp_ids"]


def test_recorded_set_covers_the_adversarial_cases():
    names = {r["name"] for r in ROWS}
    assert {"digits with commas", "control characters", "empty", "whitespace only",
            "emoji", "very long word", "special tokens written in text"} <= names
    assert any(r["spm_pieces"] != r["spm_raw_pieces"] for r in ROWS)
    assert any("▁" in r["spm_pieces"] and "," in r["spm_pieces"] for r in ROWS)


# -- live, against the original -----------------------------------------------------------------

def _fuzz_texts(count=300, seed=0):
    rng = random.Random(seed)
    alphabet = ("abcXYZ019,,,.. \t\n\u3000\u00a0\u0301\u0308éÅßﬁ½中日한😀[]<>'\"-–£€\x00\x01\u200b"
                "\ufeff")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(count)]


@needs_original
def test_live_against_original(tmp_path, spm_tokenizers, wordpiece_tokenizers):
    from tools.original import load_albert_module

    orig = load_albert_module(ORIGINAL_REPO, "tokenization")
    texts = [recorder.as_text(v) for _, v in recorder.read_texts()] + _fuzz_texts()
    for lower in (True, False):
        o_spm = orig.FullTokenizer(None, lower, SPM_MODEL)
        o_wp = orig.FullTokenizer(str(UNCASED_VOCAB), lower)
        ours, ours_wp = spm_tokenizers[lower], wordpiece_tokenizers[lower]
        assert ours.vocab == o_spm.vocab and ours_wp.vocab == o_wp.vocab
        for text in texts:
            pre = orig.preprocess_text(text, lower=lower)
            assert tokenization.preprocess_text(text, lower=lower) == pre, repr(text)
            assert ours.tokenize(pre) == o_spm.tokenize(pre), repr(text)
            assert ours.tokenize(text) == o_spm.tokenize(text), repr(text)
            assert ours.tokenize_to_ids(pre) == orig.encode_ids(o_spm.sp_model, pre)
            assert ours_wp.tokenize(text) == o_wp.tokenize(text), repr(text)
    path = tmp_path / "vocab.txt"
    path.write_text(recorder.LOAD_VOCAB_TEXT, encoding="utf-8")
    assert tokenization.load_vocab(str(path)) == orig.load_vocab(str(path))
