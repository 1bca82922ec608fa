"""Special tokens and word boundaries come from the tokenizer (its family): the WordPiece rule
of BERT and ELECTRA, and the data code laid out with another tokenizer's tokens and rule (a
SentencePiece-style toy: `<s>`, `</s>`, words starting with "▁")."""

import dataclasses
import random
import re

import pytest

from bert_tf import families, feature_extraction
from bert_tf.bert import instances, tokenization
from bert_tf.data import conll, pairs, squad
from bert_tf.families import SpecialTokens

WORDPIECE = tokenization.WORDPIECE_SPECIAL_TOKENS
SENTENCEPIECE = SpecialTokens(cls="<s>", sep="</s>", mask="<mask>", pad="<pad>", unk="<unk>",
                              word_start_prefix="▁")
BYTE_BPE = SpecialTokens(cls="<s>", sep="</s>", mask="<mask>", pad="<pad>", unk="<unk>",
                         word_start_prefix="Ġ")
# RoBERTa's pair layout, `<s> a </s></s> b </s>`, every segment id 0.
DOUBLE_SEP = dataclasses.replace(SENTENCEPIECE, pair_separators=2, pair_segments=False)


class ToySentencePiece:
    """A SentencePiece-style tokenizer: lower-cased words split into runs of letters/digits and
    single punctuation marks, runs cut into pieces of at most 4 characters, the word's first
    piece prefixed "▁". Its vocab grows as tokens are converted (ids in order of first sight)."""

    special_tokens = SENTENCEPIECE

    def __init__(self):
        self.vocab, self.inv_vocab = {}, {}
        self.convert_tokens_to_ids(["<pad>", "<unk>", "<s>", "</s>", "<mask>"])

    def tokenize(self, text):
        pieces = []
        for word in text.lower().split():
            parts = []
            for run in re.findall(r"\w+|[^\w\s]", word):
                parts += [run[i:i + 4] for i in range(0, len(run), 4)]
            pieces += ["▁" + parts[0], *parts[1:]]
        return pieces

    def convert_tokens_to_ids(self, tokens):
        for token in tokens:
            if token not in self.vocab:
                self.vocab[token] = len(self.vocab)
                self.inv_vocab[self.vocab[token]] = token
        return [self.vocab[t] for t in tokens]


class OriginalLikeTokenizer:
    """An object with FullTokenizer's interface but no `special_tokens` (google-research/bert's
    own FullTokenizer, which the tests feed to our data code)."""


# -- the rules ----------------------------------------------------------------------------------

def test_wordpiece_rule():
    assert WORDPIECE.is_continuation("##a")
    assert not WORDPIECE.is_continuation("a")
    assert not WORDPIECE.is_continuation("[CLS]")
    assert (WORDPIECE.cls, WORDPIECE.sep, WORDPIECE.mask, WORDPIECE.pad, WORDPIECE.unk) == (
        "[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")
    assert tokenization.UNK_TOKEN == WORDPIECE.unk


@pytest.mark.parametrize("special, mark", [(SENTENCEPIECE, "▁"), (BYTE_BPE, "Ġ")])
def test_word_start_rules(special, mark):
    assert not special.is_continuation(mark + "the")
    assert special.is_continuation("re")
    assert special.is_continuation("##re")  # "##" means nothing there


def test_detokenize():
    # run_squad.py's rule: " ##" then any "##" removed, spaces collapsed.
    assert WORDPIECE.detokenize(["un", "##aff", "##able", "x"]) == "unaffable x"
    assert WORDPIECE.detokenize(["a##b", " c", "##"]) == "ab c"
    assert SENTENCEPIECE.detokenize(["▁un", "aff", "able", "▁x"]) == "unaffable x"
    assert BYTE_BPE.detokenize(["Ġun", "aff", "able", "Ġx", "."]) == "unaffable x."


def test_families_take_wordpiece_from_their_tokenizer():
    for name in ("bert", "electra"):
        family = families.get(name)
        assert family.tokenizer is tokenization.FullTokenizer
        assert family.tokenizer.special_tokens is WORDPIECE
    assert families.get("bert").tokenizer.special_tokens.is_continuation("##a")


def test_special_tokens_of():
    assert families.special_tokens_of(ToySentencePiece()) is SENTENCEPIECE
    # A tokenizer without the attribute is the original's: WordPiece.
    assert families.special_tokens_of(OriginalLikeTokenizer()) is WORDPIECE


def test_fast_tokenizer_has_wordpiece_tokens():
    fast_tokenization = pytest.importorskip("bert_tf.bert.fast_tokenization")
    assert fast_tokenization.FastTokenizer.special_tokens is WORDPIECE


# -- the data code with another tokenizer's tokens ----------------------------------------------

def test_pair_tokens_take_the_given_tokens():
    tokens, segments = pairs.pair_tokens(["▁a"], ["▁b", "c"], 8, SENTENCEPIECE)
    assert tokens == ["<s>", "▁a", "</s>", "▁b", "c", "</s>"]
    assert segments == [0, 0, 0, 1, 1, 1]
    assert pairs.pair_tokens(["a"], None, 8)[0] == ["[CLS]", "a", "[SEP]"]


def test_extract_features_layout():
    tokenizer = ToySentencePiece()
    examples = [feature_extraction.InputExample(0, "Hello there", "Yes")]
    (feature,) = feature_extraction.convert_examples_to_features(examples, 8, tokenizer)
    assert feature.tokens == ["<s>", "▁hell", "o", "▁ther", "e", "</s>", "▁yes", "</s>"]
    assert feature.input_ids[0] == tokenizer.vocab["<s>"]
    feature_extraction.check_vocab_has_special_tokens(tokenizer, "toy")


def test_conll_windows():
    tokenizer = ToySentencePiece()
    windows = conll.sentence_windows(["Peter", "Blackburn"], [3, 4], tokenizer, 8, 2)
    (window,) = windows
    assert window.tokens == ["<s>", "▁pete", "r", "▁blac", "kbur", "n", "</s>"]
    assert window.input_ids[:7] == tokenizer.convert_tokens_to_ids(window.tokens)
    assert window.label_ids[:7] == [0, 3, 0, 4, 0, 0, 0]


def test_whole_word_masking_follows_the_rule():
    vocab = {t: i for i, t in enumerate(["<pad>", "<s>", "</s>", "<mask>", "▁the", "re", "##x"])}
    maker = instances.InstanceMaker(vocab, 16, 0.1, 0.15, 5, True, random.Random(1),
                                    special_tokens=SENTENCEPIECE)
    assert (maker.cls_id, maker.sep_id, maker.mask_id) == (1, 2, 3)
    assert [maker.is_continuation[vocab[t]] for t in ("▁the", "re", "##x")] == [0, 1, 1]
    with pytest.raises(instances.DataError, match="<mask>"):
        instances.InstanceMaker({"<s>": 0, "</s>": 1}, 16, 0.1, 0.15, 5, True, random.Random(1),
                                special_tokens=SENTENCEPIECE)


def _features(examples, tokenizer, max_seq_length, doc_stride, is_training=True):
    out = []
    squad.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, 8,
                                       is_training, out.append)
    return out


def test_squad_windows_and_answer_with_word_start_pieces():
    tokenizer = ToySentencePiece()
    words = "Gauss lived (1777-1855). He was a mathematician of Brunswick".split()
    # The answer "1777" is inside the word "(1777-1855).": tokenized alone it starts a word
    # ("▁1777"), in the context it does not ("▁(", "1777", "-", ...).
    example = squad.SquadExample("q1", "When was he born?", words, "1777", 2, 2)
    (feature,) = _features([example], tokenizer, 64, 16)
    tokens = feature.tokens
    query = tokenizer.tokenize("When was he born?")
    assert tokens[:len(query) + 2] == ["<s>", *query, "</s>"]
    assert tokens[-1] == "</s>"
    assert feature.input_ids[:len(tokens)] == tokenizer.convert_tokens_to_ids(tokens)
    assert tokens[feature.start_position:feature.end_position + 1] == ["1777"]
    # Whole words still match as the original's rule does.
    example = squad.SquadExample("q2", "Where?", words, "of Brunswick", 7, 8)
    (feature,) = _features([example], tokenizer, 64, 16)
    assert feature.tokens[feature.start_position:feature.end_position + 1] == [
        "▁of", "▁brun", "swic", "k"]


def test_squad_windows_with_word_start_pieces():
    tokenizer = ToySentencePiece()
    words = "Gauss lived (1777-1855). He was a mathematician of Brunswick".split()
    example = squad.SquadExample("q1", "Born?", words, "mathematician", 6, 6)
    features = _features([example], tokenizer, 12, 3)
    assert len(features) > 2
    query_len = len(tokenizer.tokenize("Born?"))
    answer = ["▁math", "emat", "icia", "n"]
    found = 0
    for feature in features:
        tokens = feature.tokens
        assert tokens[0] == "<s>" and tokens[query_len + 1] == "</s>" and tokens[-1] == "</s>"
        assert tokens.count("<s>") == 1 and tokens.count("</s>") == 2
        if feature.start_position:
            found += 1
            assert tokens[feature.start_position:feature.end_position + 1] == answer
        else:
            assert feature.end_position == 0
    assert found >= 1
    # Prediction windows too.
    for feature in _features([squad.SquadExample("q", "Born?", words)], tokenizer, 12, 3,
                             is_training=False):
        assert feature.tokens[0] == "<s>" and feature.tokens[-1] == "</s>"


def test_squad_wordpiece_narrowing_unchanged():
    """With WordPiece the answer alone must equal the context pieces exactly (the original):
    "95" does not match the "##95" of "1895"; the span stays the whole word."""

    class Toy(ToySentencePiece):
        special_tokens = WORDPIECE

        def tokenize(self, text):
            return [p if i == 0 else "##" + p
                    for word in text.lower().split()
                    for i, p in enumerate(word[j:j + 2] for j in range(0, len(word), 2))]

    tokenizer = Toy()
    tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    doc = tokenizer.tokenize("in 1895 then")
    assert doc == ["in", "18", "##95", "th", "##en"]
    assert squad._improve_answer_span(doc, 1, 2, tokenizer, "95") == (1, 2)
    assert squad._improve_answer_span(doc, 1, 2, tokenizer, "18") == (1, 1)


# -- exports: the family's graph tokenizer and special tokens ----------------------------------

def test_every_family_has_a_graph_tokenizer_with_its_host_tokens():
    for name in families.NAMES:
        family = families.get(name)
        assert callable(family.graph_tokenizer), name
        assert family.tokenizer.special_tokens.cls, name
    assert families.default_special_tokens() is WORDPIECE


def test_serving_inputs_take_the_family_tokens():
    pytest.importorskip("tensorflow")
    from bert_tf.serving.inputs import ServingInputs

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3}
    inputs = ServingInputs(vocab, tokenizer=object(), family="electra")
    assert inputs.special_tokens is families.get("electra").tokenizer.special_tokens
    assert (inputs.cls_id, inputs.sep_id) == (1, 2)
    with pytest.raises(families.UnknownFamilyError, match="model_type must be one of"):
        ServingInputs(vocab, tokenizer=object(), family="nope")


@pytest.mark.parametrize("special", [WORDPIECE, SENTENCEPIECE, BYTE_BPE],
                         ids=["wordpiece", "sentencepiece", "byte_bpe"])
def test_squad_export_answer_text_follows_the_rule(special):
    """The graph's text of predicted pieces equals the host's `SpecialTokens.detokenize`."""
    tf = pytest.importorskip("tensorflow")
    from bert_tf.serving.inputs import ServingInputs
    from bert_tf.serving.squad_export import SquadExport

    mark = special.continuation_prefix or special.word_start_prefix
    tokens = [special.unk, special.cls, special.sep, "a", "b", "c" + mark + "d"]
    if special.continuation_prefix:
        tokens += [mark + "b", mark + "c"]
    else:
        tokens += [mark + "a", mark + "b"]
    vocab = {t: i for i, t in enumerate(tokens)}
    inputs = ServingInputs({WORDPIECE.cls: 1, WORDPIECE.sep: 2}, tokenizer=object())
    inputs.special_tokens = special  # as a family with these tokens would give it
    module = SquadExport(None, inputs, vocab)
    spans = [tokens[3:], [tokens[-1], "a", tokens[-2]], ["b"], [], tokens[5:6]]
    got = module.pred_text(tf.ragged.constant([[vocab[t] for t in s] for s in spans],
                                              dtype=tf.int64))
    assert [x.decode("utf-8") for x in got.numpy()] == [special.detokenize(s) for s in spans]


# -- the pair layout ----------------------------------------------------------------------------

def test_lay_out():
    assert WORDPIECE.pair_budget(128) == 125 and DOUBLE_SEP.pair_budget(128) == 124
    assert WORDPIECE.lay_out(["a"], ["b", "c"], "C", "S") == (["C", "a", "S", "b", "c", "S"], 3)
    assert WORDPIECE.lay_out(["a"], [], "C", "S") == (["C", "a", "S"], 3)
    assert DOUBLE_SEP.lay_out([1], [2], 0, 9) == ([0, 1, 9, 9, 2, 9], 6)
    assert DOUBLE_SEP.lay_out([1, 2], [], 0, 9) == ([0, 1, 2, 9], 4)


def test_pair_tokens_with_two_separators():
    tokens, segments = pairs.pair_tokens(["▁a", "b", "c"], ["▁d", "e"], 8, DOUBLE_SEP)
    # 8 - 4 = 4 pieces: the longer a loses its last piece, then the tie trims b.
    assert tokens == ["<s>", "▁a", "b", "</s>", "</s>", "▁d", "e", "</s>"][:0] or tokens == [
        "<s>", "▁a", "b", "</s>", "</s>", "▁d", "e", "</s>"]
    assert segments == [0] * 8
    assert pairs.pair_tokens(["▁a"], None, 8, DOUBLE_SEP) == (["<s>", "▁a", "</s>"], [0] * 3)


def test_classifier_ids_with_two_separators():
    from bert_tf.data import classifier

    class Toy(ToySentencePiece):
        special_tokens = DOUBLE_SEP

    tokenizer = Toy()
    converter = classifier._Converter(["x"], 9, tokenizer)
    example = classifier.InputExample("g", "Hello there", "Yes indeed", "x")
    ids, num_first = converter.ids(example)
    tokens = [tokenizer.inv_vocab[i] for i in ids]
    # 9 - 4 = 5 pieces of a (4) and b (3): a loses one, then the tie trims b.
    assert tokens == ["<s>", "▁hell", "o", "▁ther", "</s>", "</s>", "▁yes", "▁inde", "</s>"]
    assert num_first == len(ids)  # every segment id 0
    with pytest.raises(classifier.ClassifierDataError, match="max_seq_length >= 4"):
        classifier._Converter(["x"], 3, tokenizer).ids(example)


def test_squad_features_with_two_separators():
    class Toy(ToySentencePiece):
        special_tokens = DOUBLE_SEP

    tokenizer = Toy()
    words = "Gauss lived (1777-1855). He was a mathematician of Brunswick".split()
    example = squad.SquadExample("q1", "Who?", words, "mathematician", 6, 6)
    query = tokenizer.tokenize("Who?")
    features = _features([example], tokenizer, 13, 3)
    assert len(features) > 2
    found = 0
    for feature in features:
        tokens = feature.tokens
        assert tokens[:len(query) + 3] == ["<s>", *query, "</s>", "</s>"]
        assert tokens[-1] == "</s>" and len(tokens) <= 13
        assert feature.doc_offset == len(query) + 3
        # Windows of max_seq_length - len(query) - 4 pieces.
        assert feature.doc_length <= 13 - len(query) - 4
        assert feature.input_mask == [1] * len(tokens) + [0] * (13 - len(tokens))
        assert feature.input_ids[:len(tokens)] == tokenizer.convert_tokens_to_ids(tokens)
        assert feature.segment_ids == [0] * 13
        assert min(feature.token_to_orig_map) == feature.doc_offset
        if feature.start_position:
            found += 1
            assert tokens[feature.start_position:feature.end_position + 1] == [
                "▁math", "emat", "icia", "n"]
    assert found >= 1
    assert max(f.doc_length for f in features) == 13 - len(query) - 4
    # [CLS] query [SEP] [SEP] window [SEP]: four positions besides the query.
    with pytest.raises(ValueError, match=r"max_query_length \(8\) \+ 4"):
        _features([example], tokenizer, 12, 3)
    # Without special tokens, the default family's (BERT's three).
    squad.check_feature_settings(12, 3, 8)
    with pytest.raises(ValueError, match=r"max_query_length \(9\) \+ 3"):
        squad.check_feature_settings(12, 3, 9)
