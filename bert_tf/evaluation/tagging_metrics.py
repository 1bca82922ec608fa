"""Entity-level precision, recall and F1 as the CoNLL shared tasks' conlleval defines them,
and token accuracy.

Chunks (entities) are read from a tag sequence with conlleval's rules. A tag is "O" or
"<prefix>-<TYPE>" with prefix B or I (E is honoured as conlleval does); the previous tag of a
sentence's first word, and the tag after its last, count as "O". A chunk ENDS before the current
tag when the previous tag is B or I and the current one is B or O, or the previous is E and the
current is E, I or O, or the previous is not O and its type differs from the current type. A
chunk STARTS at the current tag when it is B (after B, I or O), or I or E after O or E, or when it
is not O and its type differs from the previous type. So BIO (IOB2) and IOB1 are both read
correctly: "I-PER" after "O" starts a PER chunk, "I-PER I-LOC" is two chunks, "I-PER B-PER" is
two chunks, "B-PER I-PER" is one.

A predicted chunk is correct when a gold chunk has the same type, first and last word.
precision = correct / predicted chunks, recall = correct / gold chunks,
F1 = 2 * precision * recall / (precision + recall); each is 0 when its denominator is 0
(conlleval prints 0.00 then). Token accuracy = words whose predicted tag equals the gold tag /
words. conlleval prints percentages; these functions return fractions.
"""

import collections

OUTSIDE = "O"


def _split(tag):
    """("B", "PER") for "B-PER"; ("O", "") for "O"; a tag without "-" has type ""."""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _ends(prev_tag, prev_type, tag, kind):
    if prev_tag in ("B", "I") and tag in ("B", "O"):
        return True
    if prev_tag == "E" and tag in ("E", "I", "O"):
        return True
    return prev_tag != "O" and prev_type != kind


def _starts(prev_tag, prev_type, tag, kind):
    if tag == "B" and prev_tag in ("B", "I", "O"):
        return True
    if tag in ("E", "I") and prev_tag in ("E", "O"):
        return True
    return tag != "O" and prev_type != kind


def get_chunks(tags):
    """The chunks of one sentence's tags.

    Args:
      tags: list of str.
    Returns:
      list of (type, first, last) with word indexes, in order.
    """
    chunks = []
    prev_tag, prev_type, begin = "O", "", None
    for i, full_tag in enumerate(list(tags) + [OUTSIDE]):
        tag, kind = _split(full_tag)
        if begin is not None and _ends(prev_tag, prev_type, tag, kind):
            chunks.append((prev_type, begin, i - 1))
            begin = None
        if _starts(prev_tag, prev_type, tag, kind):
            begin = i
        prev_tag, prev_type = tag, kind
    return chunks


def _prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "num_correct": correct, "num_predicted": predicted, "num_gold": gold}


def entity_scores(gold_sentences, predicted_sentences):
    """conlleval's scores over a corpus.

    Args:
      gold_sentences, predicted_sentences: lists (per sentence) of lists of tags, of equal
        lengths.
    Returns:
      dict with precision, recall, f1 (fractions), num_correct, num_predicted, num_gold,
      accuracy (token accuracy), num_tokens, and per_type: {type: dict of the first six}.
    Raises:
      ValueError if the sentence or word counts differ.
    """
    if len(gold_sentences) != len(predicted_sentences):
        raise ValueError(f"{len(gold_sentences)} gold sentences but "
                         f"{len(predicted_sentences)} predicted ones")
    correct, predicted, gold = (collections.Counter() for _ in range(3))
    tokens = right = 0
    for s, (gold_tags, predicted_tags) in enumerate(zip(gold_sentences, predicted_sentences)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sentence {s}: {len(gold_tags)} gold tags but "
                             f"{len(predicted_tags)} predicted ones")
        tokens += len(gold_tags)
        right += sum(g == p for g, p in zip(gold_tags, predicted_tags))
        gold_chunks = get_chunks(gold_tags)
        predicted_chunks = get_chunks(predicted_tags)
        gold.update(kind for kind, _, _ in gold_chunks)
        predicted.update(kind for kind, _, _ in predicted_chunks)
        correct.update(kind for kind, _, _ in set(gold_chunks) & set(predicted_chunks))
    scores = _prf(sum(correct.values()), sum(predicted.values()), sum(gold.values()))
    scores["accuracy"] = right / tokens if tokens else 0.0
    scores["num_tokens"] = tokens
    scores["per_type"] = {kind: _prf(correct[kind], predicted[kind], gold[kind])
                          for kind in sorted(set(gold) | set(predicted))}
    return scores
