"""Entity-level scores with conlleval's chunk rules, on hand-built tags worked out here."""

import pytest

from bert_tf.evaluation.tagging_metrics import entity_scores, get_chunks


@pytest.mark.parametrize("tags, chunks", [
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
    # I- after O starts a chunk (IOB1, or an ill-formed BIO prediction).
    (["O", "I-PER", "I-PER"], [("PER", 1, 2)]),
    (["I-PER"], [("PER", 0, 0)]),
    # A type change ends one chunk and starts another, whatever the prefixes.
    (["B-PER", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 1)]),
    (["I-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),
    # B- always starts a new chunk; in IOB1 it separates two entities of the same type.
    (["I-PER", "I-PER", "B-PER", "O", "I-LOC"], [("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4)]),
    (["B-PER", "B-PER"], [("PER", 0, 0), ("PER", 1, 1)]),
    (["O", "O"], []),
    ([], []),
])
def test_chunks(tags, chunks):
    assert get_chunks(tags) == chunks


def test_bio_scores_worked_out():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "B-ORG"]]
    # gold chunks: PER(0,1) LOC(3) | ORG(0) = 3; predicted: PER(0,1) ORG(3) | ORG(0) ORG(1) = 4;
    # correct: PER(0,1) and ORG(0) of sentence 2 = 2.
    scores = entity_scores(gold, pred)
    assert (scores["num_correct"], scores["num_predicted"], scores["num_gold"]) == (2, 4, 3)
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(4 / 7)  # 2 * 1/2 * 2/3 / (1/2 + 2/3)
    assert scores["accuracy"] == pytest.approx(4 / 6)  # B-LOC/B-ORG and O/B-ORG differ
    assert scores["per_type"]["ORG"]["precision"] == pytest.approx(1 / 3)
    assert scores["per_type"]["ORG"]["recall"] == pytest.approx(1.0)
    assert scores["per_type"]["LOC"]["f1"] == 0.0
    assert scores["per_type"]["PER"]["f1"] == pytest.approx(1.0)


def test_iob1_scores_worked_out():
    gold = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"]]
    pred = [["I-PER", "I-PER", "I-PER", "O", "B-LOC"]]
    # gold: PER(0,1) PER(2) LOC(4); predicted: PER(0,2) LOC(4); only LOC(4) matches (a
    # B-LOC after O and an I-LOC after O both start a chunk at word 4).
    scores = entity_scores(gold, pred)
    assert (scores["num_correct"], scores["num_predicted"], scores["num_gold"]) == (1, 2, 3)
    assert scores["f1"] == pytest.approx(0.4)  # 2 * 1/2 * 1/3 / (5/6)
    assert scores["accuracy"] == pytest.approx(3 / 5)
    assert scores["per_type"]["PER"]["num_correct"] == 0


def test_chunks_do_not_cross_sentences():
    scores = entity_scores([["B-PER"], ["I-PER"]], [["B-PER", ], ["B-PER"]])
    assert scores["num_gold"] == 2 and scores["num_correct"] == 2 and scores["f1"] == 1.0


def test_no_chunks_gives_zeros():
    scores = entity_scores([["O"]], [["O"]])
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 0.0, 0.0)
    assert scores["accuracy"] == 1.0


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 gold sentences but 2 predicted"):
        entity_scores([["O"]], [["O"], ["O"]])
