"""RoBERTa's byte-level BPE (bert_tf.roberta.tokenization) against Transformers' RobertaTokenizer
and RobertaTokenizerFast, recorded once on a committed vocabulary
(tests/data/roberta_tokenizer/make_expected.py: no Transformers needed here)."""

import gzip
import json
import os
import unicodedata

import pytest

from bert_tf import families
from bert_tf.data.classifier import truncate_lengths
from bert_tf.roberta import character_classes
from bert_tf.roberta.tokenization import (SPECIAL_TOKENS, WHITESPACE_CHARS, ByteLevelBPEVocab,
                                          RobertaTokenizer, VocabError, bytes_to_unicode,
                                          hub_tokenizer_config, read_merges,
                                          read_tokenizer_json, read_vocab_json, write_merges,
                                          write_vocab_json)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "roberta_tokenizer")
VOCAB = os.path.join(DATA, "vocab.json")
MERGES = os.path.join(DATA, "merges.txt")


def _records():
    with gzip.open(os.path.join(DATA, "expected.jsonl.gz"), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


RECORDS = _records()
TEXTS = [r for r in RECORDS if r["kind"] in ("text", "fuzz")]


@pytest.fixture(scope="module")
def tokenizers():
    return {prefix: RobertaTokenizer(VOCAB, add_prefix_space=prefix) for prefix in (False, True)}


def test_goldens_cover_both_tokenizers_and_their_differences():
    versions = RECORDS[0]
    assert versions["kind"] == "versions" and versions["transformers"].startswith("4.")
    differ = [r for r in TEXTS if r["slow"]["ids"] != r["fast"]["ids"]]
    # The recorded texts meet every rule where the two differ (module docstring).
    names = {r["name"] for r in differ if r["kind"] == "text"}
    assert {"mask after tab and newline", "special tokens glued", "single newline"} <= names
    assert len(TEXTS) > 800 and len(differ) > 100


@pytest.mark.parametrize("kind", ["text", "fuzz"])
def test_ids_equal_fast_and_slow_where_they_agree(tokenizers, kind):
    records = [r for r in TEXTS if r["kind"] == kind]
    for r in records:
        tokenizer = tokenizers[r["add_prefix_space"]]
        pieces = tokenizer.tokenize(r["text"])
        ids = tokenizer.tokenize_to_ids(r["text"])
        context = (r["name"], r["text"], r["add_prefix_space"])
        assert pieces == r["fast"]["tokens"], context
        assert ids == r["fast"]["ids"], context
        assert tokenizer.convert_tokens_to_ids(pieces) == ids
        assert tokenizer.convert_ids_to_tokens(ids) == pieces
        if r["slow"]["ids"] == r["fast"]["ids"]:
            assert r["slow"]["tokens"] == pieces, context


def _trimmed(text, start, end):
    while start < end and text[start] in WHITESPACE_CHARS:
        start += 1
    while end > start and text[end - 1] in WHITESPACE_CHARS:
        end -= 1
    return start, end


def test_offsets_are_the_fast_tokenizers_without_whitespace(tokenizers):
    """Our spans are the fast tokenizer's offsets without whitespace at the ends (it trims
    spaces only), except where the fast one is one character off: the first piece after a
    special token when add_prefix_space adds a space there (it counts the added space as the
    chunk's first character)."""
    specials = {SPECIAL_TOKENS.cls, SPECIAL_TOKENS.sep, SPECIAL_TOKENS.mask, SPECIAL_TOKENS.pad,
                SPECIAL_TOKENS.unk}
    off_by_one = 0
    for r in TEXTS:
        text = r["text"]
        pieces, spans = tokenizers[r["add_prefix_space"]].tokenize_with_offsets(text)
        assert pieces == r["fast"]["tokens"]
        assert len(spans) == len(pieces)
        for k, ((start, end), fast) in enumerate(zip(spans, r["fast"]["offsets"])):
            assert 0 <= start <= end <= len(text)
            assert text[start:end] == text[start:end].strip("".join(WHITESPACE_CHARS))
            expected = _trimmed(text, *fast)
            if (start, end) == expected or (expected[0] == expected[1] and start == end):
                continue
            assert (r["add_prefix_space"] and k and pieces[k - 1] in specials
                    and tuple(fast) == (start + 1, end)), (r["name"], text, k)
            off_by_one += 1
    assert off_by_one  # the goldens hold the fast tokenizer's off-by-one case


def test_offsets_cover_the_text(tokenizers):
    text = "Héllo 🦜 wörld\n\n <mask>  end"
    pieces, spans = tokenizers[False].tokenize_with_offsets(text)
    covered = set()
    for piece, (start, end) in zip(pieces, spans):
        covered.update(range(start, end))
    assert covered == {i for i, c in enumerate(text) if c not in WHITESPACE_CHARS}
    # The emoji is split into byte pieces: each holds the whole character.
    emoji = text.index("🦜")
    assert sum(1 for s in spans if s == (emoji, emoji + 1)) >= 2
    # The added prefix space stands for no character.
    pieces, spans = tokenizers[True].tokenize_with_offsets("Hi")
    assert pieces[0].startswith("Ġ") and spans[0][0] == 0


def _fast_truncation(len_a, len_b, budget):
    """RobertaTokenizerFast's longest_first (the `tokenizers` package): where both sequences
    are cut, the longer one (b on a tie) keeps the odd piece."""
    if len_a + len_b <= budget:
        return len_a, len_b
    short, long_ = sorted((len_a, len_b))
    long_ = max(short, budget - short)
    if short + long_ > budget:
        short, long_ = budget // 2, budget - budget // 2
    return (long_, short) if len_a > len_b else (short, long_)


def test_pairs_and_truncation_as_transformers(tokenizers):
    """`<s> A </s></s> B </s>`, all segment 0, four special tokens in the budget; the pieces
    kept are bert_tf's pair rule (`truncate_lengths`: a keeps the odd piece where both are
    cut), the slow tokenizer's; the fast one gives it to the longer sequence."""
    tokenizer = tokenizers[False]
    special = tokenizer.special_tokens
    cls_id, sep_id = tokenizer.convert_tokens_to_ids([special.cls, special.sep])
    pairs = [r for r in RECORDS if r["kind"] == "pair"]
    fast_differs = 0
    for r in pairs:
        a = tokenizer.tokenize_to_ids(r["a"])
        b = tokenizer.tokenize_to_ids(r["b"]) if r["b"] else []
        for which, rule in (("slow", truncate_lengths), ("fast", _fast_truncation)):
            ids_a, ids_b = a, b
            if r["max_length"]:
                if b:
                    len_a, len_b = rule(len(a), len(b), special.pair_budget(r["max_length"]))
                    ids_a, ids_b = a[:len_a], b[:len_b]
                else:
                    ids_a = a[:r["max_length"] - 2]
            ids, num_first = special.lay_out(ids_a, ids_b, cls_id, sep_id)
            segments = [0] * num_first + [1] * (len(ids) - num_first)
            assert ids == r[which]["input_ids"], (r["name"], which)
            assert segments == r[which]["token_type_ids"] == [0] * len(ids)
        fast_differs += r["slow"]["input_ids"] != r["fast"]["input_ids"]
    assert len(pairs) == 8 and fast_differs == 2


def test_pre_split_words_take_a_prefix_space(tokenizers):
    """Words tokenized one by one with add_prefix_space=True give Transformers'
    `is_split_into_words=True` (fast; slow adds no space before a word starting with
    whitespace)."""
    tokenizer = tokenizers[True]
    for r in (r for r in RECORDS if r["kind"] == "words"):
        ids, word_ids = [], []
        for index, word in enumerate(r["words"]):
            word_pieces = tokenizer.tokenize_to_ids(word)
            ids += word_pieces
            word_ids += [index] * len(word_pieces)
        assert ids == r["fast"]["ids"], r["name"]
        assert word_ids == r["fast"]["word_ids"], r["name"]
        if not any(w[:1].isspace() for w in r["words"]):
            assert ids == r["slow"]["ids"], r["name"]


def test_special_tokens_and_family_surface(tokenizers):
    tokenizer = tokenizers[False]
    assert tokenizer.special_tokens is SPECIAL_TOKENS
    assert (SPECIAL_TOKENS.cls, SPECIAL_TOKENS.sep, SPECIAL_TOKENS.mask, SPECIAL_TOKENS.pad,
            SPECIAL_TOKENS.unk) == ("<s>", "</s>", "<mask>", "<pad>", "<unk>")
    assert SPECIAL_TOKENS.pair_budget(10) == 6
    assert families.special_tokens_of(tokenizer) is SPECIAL_TOKENS
    assert [tokenizer.vocab[t] for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]
    assert tokenizer.vocab["<mask>"] == max(tokenizer.vocab.values())
    assert tokenizer.tokenize("a <mask> b") == ["a", "<mask>", "Ġb"]
    assert tokenizer.convert_tokens_to_ids(["not a piece"]) == [tokenizer.vocab["<unk>"]]
    assert tokenizer.vocab.merges == read_merges(MERGES)
    assert tokenizer.tokenize(b"caf\xc3\xa9 \xff") == tokenizer.tokenize("café ")
    # A lone surrogate (JSON's "\ud800") has no bytes: no piece, no crash.
    assert tokenizer.tokenize("a\ud800 b") == tokenizer.tokenize("a b")
    assert tokenizer.tokenize_with_offsets("a\ud800 b")[1] == [(0, 1), (3, 4)]
    with pytest.raises(ValueError, match="do_lower_case=True"):
        RobertaTokenizer(VOCAB, do_lower_case=True)
    assert RobertaTokenizer(VOCAB, None, MERGES).tokenize("x") == ["x"]


def test_decode_gives_the_text_back(tokenizers):
    tokenizer = tokenizers[False]
    for r in TEXTS:
        if r["add_prefix_space"]:
            continue
        text = r["text"]
        ids = tokenizer.tokenize_to_ids(text)
        if "<mask>" not in text:  # whitespace before <mask> is dropped
            assert tokenizer.decode(ids) == text, r["name"]


def test_byte_alphabet():
    table = bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert all(c.isprintable() and not c.isspace() for c in table.values())


def test_character_classes_hold_this_pythons_letters_and_numbers():
    """The recorded classes (Unicode 16) hold every letter and number of an older
    `unicodedata`; whitespace is White_Space, not str.isspace (\\x1c-\\x1f)."""
    if unicodedata.unidata_version > "16.0":
        pytest.skip(f"Python's Unicode {unicodedata.unidata_version} is newer than the table's")

    def members(ranges):
        return {c for a, b in ranges for c in range(a, b + 1)}

    letters, numbers = members(character_classes.LETTERS), members(character_classes.NUMBERS)
    for cp in range(0x110000):
        category = unicodedata.category(chr(cp))
        if category[0] == "L":
            assert cp in letters, hex(cp)
        elif category[0] == "N":
            assert cp in numbers, hex(cp)
    spaces = members(character_classes.WHITESPACE)
    assert spaces == {cp for cp in range(0x110000) if chr(cp).isspace()} - {0x1C, 0x1D, 0x1E, 0x1F}


def test_readers_and_writers_round_trip(tmp_path):
    vocab, merges = read_vocab_json(VOCAB), read_merges(MERGES)
    write_vocab_json(tmp_path / "vocab.json", vocab)
    write_merges(tmp_path / "merges.txt", merges)
    assert read_vocab_json(tmp_path / "vocab.json") == vocab
    assert list(read_vocab_json(tmp_path / "vocab.json").values()) == sorted(vocab.values())
    assert read_merges(tmp_path / "merges.txt") == merges
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    tokenizer = RobertaTokenizer(str(tmp_path / "vocab.json"))  # merges.txt found beside it
    assert tokenizer.tokenize("Hello world") == RobertaTokenizer(VOCAB).tokenize("Hello world")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("vocab_text, message", [
    ('{"a": 0,\n "b": }', r"vocab.json:2: not valid JSON"),
    ("[1, 2]", "expected a non-empty JSON object"),
    ("{}", "expected a non-empty JSON object"),
    ('{"a": 0, "b": "1"}', "token 'b' has id '1'"),
    ('{"a": 0, "b": true}', "token 'b' has id True"),
    ('{"a": 0, "b": -1}', "token 'b' has id -1"),
    ('{"a": 0, "b": 0}', "id 0 is given to both 'a' and 'b'"),
    ('{"a": 0, "a": 1}', "token 'a' appears twice"),
])
def test_bad_vocab_files_are_one_line(tmp_path, vocab_text, message):
    path = _write(tmp_path / "vocab.json", vocab_text)
    with pytest.raises(VocabError, match=message) as info:
        read_vocab_json(path)
    assert "\n" not in str(info.value) and path in str(info.value)


def test_bad_or_missing_files_are_one_line(tmp_path):
    with pytest.raises(VocabError, match="does not exist"):
        RobertaTokenizer(str(tmp_path / "vocab.json"))
    with pytest.raises(VocabError, match="merges file .*merges.txt' does not exist"):
        RobertaTokenizer(VOCAB, merges_file=str(tmp_path / "merges.txt"))
    (tmp_path / "latin1.txt").write_bytes(b"#version: 0.2\na b\n\xe9 c\n")
    with pytest.raises(VocabError, match=r"latin1.txt:3: not UTF-8"):
        read_merges(tmp_path / "latin1.txt")
    merges = read_merges(MERGES)
    for lines, where in ((["a b c"], ":2:"), (["a  b"], ":2:"), ([""], ":2:"), (["ab"], ":2:")):
        path = _write(tmp_path / "m.txt", "#version: 0.2\n" + "\n".join(lines) + "\n")
        with pytest.raises(VocabError, match=where + " expected two symbols"):
            read_merges(path)
    # No header: every line is a merge (Transformers' slow reader would drop the first).
    assert read_merges(_write(tmp_path / "m.txt", "a b\nc d")) == [("a", "b"), ("c", "d")]
    vocab = read_vocab_json(VOCAB)
    with pytest.raises(VocabError, match=r"merge 776 \(zz qq\) needs 'zz'"):
        ByteLevelBPEVocab(vocab, merges + [("zz", "qq")], VOCAB, MERGES)
    without_byte = {k: v for k, v in vocab.items() if k != "Ġ"}
    with pytest.raises(VocabError, match="no entry for the byte symbol 'Ġ'"):
        ByteLevelBPEVocab(without_byte, [], VOCAB, MERGES)
    without_mask = {k: v for k, v in vocab.items() if k != "<mask>"}
    with pytest.raises(VocabError, match="no <mask> entry"):
        ByteLevelBPEVocab(without_mask, merges, VOCAB, MERGES)


def test_tokenizer_json_gives_the_files_vocab_and_merges():
    """RobertaTokenizerFast's tokenizer.json of the committed vocabulary (make_expected.py)."""
    vocab, merges, settings = read_tokenizer_json(os.path.join(DATA, "tokenizer.json"))
    assert vocab == read_vocab_json(VOCAB) and list(vocab.values()) == sorted(vocab.values())
    assert merges == read_merges(MERGES)
    assert settings == {"add_prefix_space": False, "trim_offsets": True}


def _edited_tokenizer_json(tmp_path, edit):
    with open(os.path.join(DATA, "tokenizer.json"), encoding="utf-8") as f:
        data = json.load(f)
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _set(*keys_and_value):
    *keys, last, value = keys_and_value

    def edit(data):
        for key in keys:
            data = data[key]
        data[last] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("model", "type", "WordPiece"), "model type 'WordPiece', not BPE"),
    (_set("model", "dropout", 0.1), "model.dropout is 0.1"),
    (_set("model", "continuing_subword_prefix", "##"), "continuing_subword_prefix is '##'"),
    (_set("model", "ignore_merges", True), "model.ignore_merges is True"),
    (_set("normalizer", {"type": "Lowercase"}), "normalizer \('Lowercase'\)"),
    (_set("pre_tokenizer", {"type": "Whitespace"}), "pre_tokenizer 'Whitespace' is not"),
    (_set("pre_tokenizer", "use_regex", False), "is not ByteLevel with GPT-2's regex"),
    (_set("model", "merges", 0, "ab"), r"model.merges\[0\] is 'ab'"),
    (_set("added_tokens", 4, "lstrip", False), "'<mask>' has lstrip=False"),
    (_set("added_tokens", 0, "content", "<|endoftext|>"), "'<|endoftext|>' .* is not one of"),
    (_set("added_tokens", 0, "id", 7), "'<s>' has id 7, the model's vocab 0"),
])
def test_tokenizer_json_refusals(tmp_path, edit, message):
    path = _edited_tokenizer_json(tmp_path, edit)
    with pytest.raises(VocabError, match=message) as info:
        read_tokenizer_json(path)
    assert "\n" not in str(info.value) and path in str(info.value)


def test_hub_tokenizer_config():
    """What AutoTokenizer reads beside our vocab.json and merges.txt (checked once by hand with
    Transformers 4.57.6: slow and fast gave the goldens' ids on all their texts)."""
    config = hub_tokenizer_config(add_prefix_space=True)
    assert config["tokenizer_class"] == "RobertaTokenizer" and config["add_prefix_space"] is True
    assert [config[k] for k in ("cls_token", "sep_token", "mask_token", "pad_token",
                                "unk_token")] == ["<s>", "</s>", "<mask>", "<pad>", "<unk>"]
