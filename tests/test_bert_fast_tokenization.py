"""The tensorflow-text path and the core-op mode of TokenizerModule give exactly FullTokenizer's
ids (and so the original's).

Checked on the golden file, on the adversarial corpus (against the original's recorded output),
on a seeded fuzz corpus against FullTokenizer, through both internal routes of the
tensorflow-text path (its own word splitting and the split-then-WordPiece route), in a
tf.function and after a SavedModel round trip. The core-op mode (`core_ops=True`, what exports
use) is checked in the graph on the same corpora, on sampled code points and on vocabularies
built to make WordPiece fail part-way, plus that its graph holds only core TensorFlow ops.
"""

import os
import random

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from bert_tf.bert import fast_tokenization, fast_tokenization_tables, tokenization  # noqa: E402
from bert_tf.text import is_chinese_char  # noqa: E402
from test_bert_tokenization import (  # noqa: E402
    GOLDEN, SAMPLE_TEXT, SMALL_VOCAB, UNCASED_VOCAB, fuzz_corpus, read_cases, read_expected,
    write_vocab)

needs_shared = pytest.mark.skipif(
    not UNCASED_VOCAB.exists(), reason="../shared (golden data and the real vocab) is absent")


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    """The real vocab when present; otherwise a small one built here (CI without ../shared)."""
    if UNCASED_VOCAB.exists():
        return str(UNCASED_VOCAB)
    tokens = list(SMALL_VOCAB)
    for text in fuzz_corpus(300, seed=9):
        for word in tokenization.BasicTokenizer(True).tokenize(text)[:3]:
            for i, ch in enumerate(word[:4]):
                tokens.append(ch if i == 0 else "##" + ch)
    seen, unique = set(), []
    for t in tokens:
        if t not in seen and t.strip() == t and t:
            seen.add(t)
            unique.append(t)
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", unique)


_INSTANCES = {}


def fast_tokenizer(vocab_file, lower):
    """One FastTokenizer per (vocab, casing) for the whole module: construction and tracing
    cost seconds."""
    key = (str(vocab_file), lower)
    if key not in _INSTANCES:
        _INSTANCES[key] = fast_tokenization.FastTokenizer(str(vocab_file), do_lower_case=lower,
                                                          batch_size=512)
    return _INSTANCES[key]


_CORE_MODULES = {}


def core_module(vocab_file, lower):
    """One core-op TokenizerModule and its FullTokenizer per (vocab, casing)."""
    key = (str(vocab_file), lower)
    if key not in _CORE_MODULES:
        full = tokenization.FullTokenizer(str(vocab_file), do_lower_case=lower)
        module = fast_tokenization.TokenizerModule(full.vocab, lower, core_ops=True)
        _CORE_MODULES[key] = (module, full)
    return _CORE_MODULES[key]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizers(request, vocab_file):
    fast = fast_tokenizer(vocab_file, request.param)
    return fast, fast.full_tokenizer


@pytest.fixture(scope="module", params=[(True, False), (False, False), (True, True),
                                        (False, True)],
                ids=["uncased", "cased", "uncased-core", "cased-core"])
def graph_tokenizers(request, vocab_file):
    """(TokenizerModule, FullTokenizer): the tensorflow-text module of FastTokenizer, or the
    core-op module."""
    lower, core = request.param
    if core:
        return core_module(vocab_file, lower)
    fast = fast_tokenizer(vocab_file, lower)
    return fast.module, fast.full_tokenizer


def graph_ids(module, texts):
    """The graph alone (no Python fallback): (ids list of lists, inexact list of bool)."""
    encoded = [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]
    ids, inexact = module.tokenize_with_check(tf.constant(encoded, tf.string))
    return ids.to_list(), inexact.numpy().tolist()


def reference_ids(full, texts):
    return [full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]


@needs_shared
def test_golden_sample_uncased():
    import json

    fast = fast_tokenizer(UNCASED_VOCAB, True)
    before = fast.num_fallbacks
    with open(SAMPLE_TEXT, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    with open(GOLDEN, encoding="utf-8") as f:
        golden = [json.loads(line)["ids"] for line in f]
    assert fast.tokenize_to_ids(lines) == golden
    assert fast.num_fallbacks == before


@needs_shared
@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_adversarial_corpus_matches_recorded_original(lower):
    fast = fast_tokenizer(UNCASED_VOCAB, lower)
    key = ("uncased" if lower else "cased") + "_tokens"
    cases, expected = read_cases(), read_expected()
    got = fast.tokenize_to_ids([c["input"] for c in cases])
    for case, exp, ids in zip(cases, expected, got):
        assert fast.convert_ids_to_tokens(ids) == exp[key], case["name"]
    # The graph alone, without the Python-side fallback: only the musical-symbols case (two
    # reorderable combining characters) may be flagged, everything else must be exact; the
    # same for the core-op module.
    for module in (fast.module, core_module(UNCASED_VOCAB, lower)[0]):
        ids, inexact = graph_ids(module, [c["input"] for c in cases])
        flagged = [c["name"] for c, f in zip(cases, inexact) if f]
        musical = "musical combining marks (Mc with nonzero combining class)"
        assert flagged == ([musical] if lower else [])
        for case, exp, row, f in zip(cases, expected, ids, inexact):
            if not f:
                assert fast.convert_ids_to_tokens(row) == exp[key], (module.core_ops, case["name"])


def test_fuzz_matches_full_tokenizer(tokenizers):
    fast, full = tokenizers
    rng = random.Random(3)
    greek = list("\u03a3\u0391\u03c3.'\u0301\u200b\u00ad\u4e2d !\x00\u00aaa\u02b0\u0345\u2028")
    texts = fuzz_corpus(1500, seed=4 if fast.do_lower_case else 5)
    texts += ["".join(rng.choice(greek) for _ in range(rng.randint(1, 9))) for _ in range(1500)]
    assert fast.tokenize_to_ids(texts) == reference_ids(full, texts)


def test_core_ops_fuzz_matches_full_tokenizer(vocab_file):
    """The core-op module in the graph, on the fuzz corpus (str and raw bytes), on words made
    of vocab pieces with junk between them (so that WordPiece fails part-way) and on ASCII
    texts (its printable-ASCII lane, mixed with the general route in one batch)."""
    rng = random.Random(12)
    ascii_pool = ([chr(c) for c in range(32, 127)] + list("\t\n\r\x0b\x1f\x7f")
                  + ["the", "un", "able", "##", "[CLS]", " ", "A" * 199, "b" * 200, "C" * 201])
    for lower in (True, False):
        module, full = core_module(vocab_file, lower)
        pieces = [t.lstrip("#") for t in rng.sample(sorted(full.vocab), 400)] + ["q", "\u00e9"]
        texts = fuzz_corpus(800, seed=14 if lower else 15)
        texts += [" ".join("".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
                           for _ in range(rng.randint(0, 6))) for _ in range(600)]
        texts += ["".join(rng.choice(ascii_pool) for _ in range(rng.randint(0, 30)))
                  for _ in range(1500)]
        rng.shuffle(texts)
        ids, inexact = graph_ids(module, texts)
        # Flagged: the texts with 2+ characters whose output NFD may reorder (rare).
        reorder = fast_tokenization_tables.build_char_tables(lower)["reorder"]
        decoded = [t.decode("utf-8", "ignore") if isinstance(t, bytes) else t for t in texts]
        assert inexact == [sum(reorder[ord(c)] for c in t) >= 2 for t in decoded]
        for text, row, flag in zip(texts, ids, inexact):
            if not flag:
                assert row == full.tokenize_to_ids(text), (lower, text)


def test_core_ops_sampled_code_points(vocab_file):
    """A sample of the scalar values in the texts of `test_every_code_point`."""
    rng = random.Random(21)
    sample = [c for c in rng.sample(range(0x110000), 2500) if not 0xD800 <= c <= 0xDFFF]
    sample += list(range(0x370, 0x400)) + list(range(0x4E00, 0x4E20)) + [0, 0x3A3, 0xFFFD]
    texts = [f"x{c}{c}y A{c}\u0301\u03a3" for c in map(chr, sample)]
    for lower in (True, False):
        module, full = core_module(vocab_file, lower)
        ids, inexact = graph_ids(module, texts)
        bad = [t for t, row, f in zip(texts, ids, inexact)
               if not f and row != full.tokenize_to_ids(t)]
        assert not bad, [repr(t) for t in bad[:10]]


def test_core_ops_wordpiece_edge_cases(tmp_path):
    """Pieces found before a failure are dropped, words over 200 code points and words of
    exactly 200 (200 pieces: the loop's longest run), "##"-only, blank, "##"-prefixed and
    unreachable entries, several words per text in one batch."""
    tokens = SMALL_VOCAB + ["##", "####", "###a", "a b", "x", "##x", "\u00e9", "##\u00e9",
                            "abc", "##bcd", "unaff", "##y", "[UNK]x", "##a b", "aaaaaaaaaaaa",
                            "\u03c3", "\u03c2", "##\u03c2", "\u03c3\u03c3"]
    path = write_vocab(tmp_path / "odd.txt", tokens)
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n")  # a blank last line: the token "" (id len - 1), as the original reads it
    texts = ["unaffable unaffz unaffablex abcd abbcd", "", "  ", "#", "##", "a##a", "a b",
             "a" * 200, "a" * 201, "a" * 199 + "\u00e9\u00e9", "b" + "a" * 220 + " b",
             "runningx xrunning runn ing", "cl\u00e9 caf\u00e9 cafe\u0301 CAF\u00c9",
             "[UNK]x [UNK] x##x", "\u03a3\u03a3 \u03c3\u03a3 A\u03a3", "aaaaaaaaaaaaa",
             "\u4e2d\u4e2da", "x\u00e9y \u00e9x \u00e9\u00e9\u00e9"]
    # Uncased only: casing changes nothing in WordPiece (the other tests cover it).
    full = tokenization.FullTokenizer(path, do_lower_case=True)
    assert full.vocab[""] == len(full.vocab) - 1
    module = fast_tokenization.TokenizerModule(full.vocab, True, core_ops=True)
    ids, inexact = graph_ids(module, texts)
    assert not any(inexact)
    assert ids == [full.tokenize_to_ids(t) for t in texts]
    assert graph_ids(module, [])[0] == []
    # __call__ gives the same ids, and raises on two reorderable combining marks.
    assert module(tf.constant([b"unaffz ok"])).to_list() == [full.tokenize_to_ids("unaffz ok")]
    with pytest.raises(tf.errors.InvalidArgumentError, match="FullTokenizer"):
        module(tf.constant(["\U0001D15F\U0001D165\U0001D16E".encode()]))
    assert "[UNK]" in full.tokenize(texts[0])  # the test does reach the failure rule


def test_core_wordpiece_tables():
    first, continuation, longest = fast_tokenization_tables.core_wordpiece_tables(
        {"[UNK]": 0, "abc": 1, "##abcd": 2, "a b c d e": 3, "[unused1]": 4, "##": 5, "": 6,
         "\u4e2d": 7})
    assert longest == 4  # "abcd": the other long entries can never be emitted
    assert first["##abcd"] == 2 and first["abc"] == 1 and "abcd" not in first
    assert continuation == {"abcd": 2}


def _op_types(concrete_function):
    graph_def = concrete_function.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types.update(node.op for node in function.node_def)
    return types


def test_core_ops_graph_has_no_tensorflow_text_op(vocab_file):
    core = _op_types(core_module(vocab_file, True)[0].__call__.get_concrete_function())
    assert "LookupTableFindV2" in core and "FastWordpieceTokenizeWithOffsets" not in core
    assert not core - set(dir(tf.raw_ops)), "ops outside core TensorFlow"
    text = _op_types(fast_tokenizer(vocab_file, True).module.__call__.get_concrete_function())
    assert "FastWordpieceTokenizeWithOffsets" in text - set(dir(tf.raw_ops))


def test_both_internal_routes_in_one_batch(tokenizers):
    fast, full = tokenizers
    texts = [
        "plain words, nothing special",
        "x" * 201 + " long word then normal",      # a word over 200 code points
        "a\u1b4eb",                                 # unassigned in Python 14.0, punctuation to ICU
        "ok \u00e9t\u00e9",
        "y" * 200,
        "",
    ]
    normalized, needs_split, _ = fast.module.normalize(
        tf.constant([t.encode("utf-8") for t in texts]))
    assert needs_split.numpy().tolist() == [False, True, True, False, False, False]
    assert fast.tokenize_to_ids(texts) == reference_ids(full, texts)


def test_ascii_lane(tokenizers):
    """Printable-ASCII texts take tensorflow-text's own splitting with a 200-byte word limit."""
    fast, full = tokenizers
    assert fast_tokenization_tables.ascii_lane_is_exact()
    assert fast.module._ascii_end_to_end is not None
    rng = random.Random(7)
    pool = ([chr(c) for c in range(32, 127)] + list("\t\n\r")
            + ["the", "un", "able", "##", "[CLS]", " ", "A" * 199, "b" * 200, "C" * 201])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    texts += ["x" * n + p for n in range(196, 205) for p in ("", ".", " y")]
    assert fast.tokenize_to_ids(texts) == reference_ids(full, texts)
    # Batches mixing both lanes keep the order of the texts.
    mixed = [t + ("\u00e9" if i % 3 == 0 else "") for i, t in enumerate(texts[:500])]
    assert fast.tokenize_to_ids(mixed) == reference_ids(full, mixed)


def test_general_route_on_ascii(vocab_file):
    """With the ASCII lane off, ASCII text takes the general route: same ids."""
    fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case=True, ascii_lane=False)
    assert fast.module._ascii_end_to_end is None
    rng = random.Random(8)
    pool = [chr(c) for c in range(32, 127)] + list("\t\n\r\x0b\x1f") + ["the", "A" * 199, "b" * 201]
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 30))) for _ in range(1500)]
    assert fast.tokenize_to_ids(texts) == reference_ids(fast.full_tokenizer, texts)


def test_unusual_vocab_entries(tmp_path):
    """Entries the original can never produce ("", "##", tokens with spaces) are harmless."""
    path = write_vocab(tmp_path / "odd.txt", SMALL_VOCAB + ["##", "a b", "x", "##x", "\u00e9"])
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n")  # a blank last line: the token "" (id len - 1), as the original reads it
    fast = fast_tokenization.FastTokenizer(path, do_lower_case=False)
    assert fast.vocab[""] == len(fast.vocab) - 1
    texts = ["a b ## x#x \u00e9 unaffable", "", "  ", "#", "a\u00e9b", "[UNK] [CLS]x", "a  b",
             "a\u3000b \u00e9 [UNK]"]
    assert fast.tokenize_to_ids(texts) == reference_ids(fast.full_tokenizer, texts)
    for lower in (True, False):
        fast = fast_tokenization.FastTokenizer(path, do_lower_case=lower)
        assert fast.tokenize_to_ids(texts) == reference_ids(fast.full_tokenizer, texts)


@pytest.mark.parametrize("token,expected", [
    (".", True), ("##.", False), ("[CLS]", False), ("a b", False), ("\u4e2d", True),
    ("##\u4e2d", False), ("a", True), ("##a", True), ("##", False), ("", False), (" ", False),
    ("x\x01", False), ("##ing", True), ("\u00e9", True), ("...", False), ("a.b", False),
])
def test_can_be_emitted(token, expected):
    assert fast_tokenization_tables.can_be_emitted(token) == expected


def test_module_requires_unk():
    with pytest.raises(tokenization.VocabError, match="no \\[UNK\\] entry"):
        fast_tokenization.TokenizerModule({"a": 0, "b": 1})


def test_final_sigma_in_graph(graph_tokenizers):
    module, full = graph_tokenizers
    texts = ["\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3", "\u03a3", "\u0391\u03a3.",
             "\u0391\u03a3.\u0392", "\u0391\u03a3'\u0392", "\u0391\u03a3\u200b\u0392",
             "\u0391\u00ad\u03a3", "\u0391\u03a3\u4e2d", "\u4e2d\u03a3", "\u0391\u03a3 \u0392",
             "\u00aa\u03a3", "\u0391\u0301\u03a3", "x\u03a3\u03a3", "\u0391\u03a3\x00\u0392"]
    ids, inexact = graph_ids(module, texts)
    assert not any(inexact)
    assert ids == reference_ids(full, texts)


def test_bytes_in_graph_match_python_decoding(graph_tokenizers, vocab_file):
    module, full = graph_tokenizers
    rng = random.Random(11)
    alphabet = [0x61, 0x20, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
    texts = [bytes(rng.choice(alphabet) if rng.random() < 0.7 else rng.randrange(256)
                   for _ in range(rng.randint(0, 16))) for _ in range(3000)]
    ids, inexact = graph_ids(module, texts)
    assert not any(inexact)
    assert ids == reference_ids(full, texts)
    if not module.core_ops:  # FastTokenizer decodes bytes in Python first
        fast = fast_tokenizer(vocab_file, module.do_lower_case)
        assert fast.tokenize_to_ids(texts) == reference_ids(full, texts)


def test_inexact_texts_raise_in_graph_and_fall_back_in_python(tokenizers):
    fast, full = tokenizers
    text = "\U0001D15F\U0001D165\U0001D16E a\u302e\u302fb"
    if fast.do_lower_case:
        with pytest.raises(tf.errors.InvalidArgumentError, match="FullTokenizer"):
            fast.module(tf.constant([text.encode()]))
    else:
        fast.module(tf.constant([text.encode()]))  # no NFD when cased: always exact
    before = fast.num_fallbacks
    assert fast.tokenize_to_ids([text, "ok"]) == reference_ids(full, [text, "ok"])
    assert fast.num_fallbacks - before == (1 if fast.do_lower_case else 0)
    # Lone surrogates cannot be UTF-8 encoded: they take the FullTokenizer route.
    assert fast.tokenize_to_ids(["a\ud800b c"]) == reference_ids(full, ["a\ud800b c"])


@pytest.mark.parametrize("lower,core", [(False, False), (True, True)],
                         ids=["cased", "uncased-core"])
def test_tf_function_and_saved_model(vocab_file, tmp_path, lower, core):
    """Both modes, one casing each: the SavedModel round trip does not depend on casing."""
    if core:
        module, full = core_module(vocab_file, lower)
    else:
        fast = fast_tokenizer(vocab_file, lower)
        module, full = fast.module, fast.full_tokenizer
    texts = ["Hello, World!", "caf\u00e9 \u4e2d\u6587", "", "x" * 201, "unaffable \u03a3"]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def model_input(t):
        ids = module(t)
        return ids.to_tensor(default_value=0, shape=[None, 8])

    dense = model_input(tf.constant([t.encode() for t in texts])).numpy()
    expected = reference_ids(full, texts)
    for row, exp in zip(dense, expected):
        assert row.tolist() == (exp + [0] * 8)[:8]

    path = str(tmp_path / "tokenizer")
    tf.saved_model.save(module, path)
    loaded = tf.saved_model.load(path)
    assert loaded(tf.constant([t.encode() for t in texts])).to_list() == expected


def test_tables_agree_with_str_lower_on_skipped_code_points():
    """Unassigned and private-use code points are skipped by the table builder as neither cased
    nor case-ignorable, mapping to themselves; check a sample against Python itself."""
    tables = fast_tokenization_tables.build_char_tables(True)
    rng = random.Random(0)
    import unicodedata

    sample = [cp for cp in rng.sample(range(0x110000), 20000)
              if unicodedata.category(chr(cp)) in ("Cn", "Co")
              and not is_chinese_char(cp)]
    assert len(sample) > 1000
    for cp in sample:
        assert fast_tokenization_tables._case_class(cp) == fast_tokenization_tables.OTHER
        assert fast_tokenization_tables._map_char(cp, True) == chr(cp)
        assert tables["out_len"][cp] == 1 and tables["out_flat"][tables["out_start"][cp]] == cp


def test_input_errors(tokenizers):
    fast, _ = tokenizers
    with pytest.raises(TypeError, match="sequence of texts"):
        fast.tokenize_to_ids("one text")
    with pytest.raises(ValueError, match="text 1 has unsupported type int"):
        fast.tokenize_to_ids(["a", 3])
    assert fast.tokenize_to_ids([]) == []


@pytest.mark.slow
def test_every_code_point(tokenizers):
    """Each of the 1,112,064 scalar values, doubled inside a word, and after a capital letter
    before a combining accent and a capital sigma: the fast path equals FullTokenizer."""
    fast, full = tokenizers
    texts = [f"x{c}{c}y A{c}\u0301\u03a3"
             for c in map(chr, range(0x110000)) if not "\ud800" <= c <= "\udfff"]
    assert len(texts) == 1_112_064
    got = fast.tokenize_to_ids(texts)
    bad = [t for t, ids in zip(texts, got) if ids != full.tokenize_to_ids(t)]
    assert not bad, [repr(t) for t in bad[:10]]
