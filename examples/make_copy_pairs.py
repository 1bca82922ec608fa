"""Makes the demo's sentence-pair task from examples/sample_text.txt: is sentence b a shortened
copy of sentence a (`same`: two words dropped), or another sentence of the same document
(`different`)? Half each.

Writes examples/copy_pairs/{train,dev,test}.tsv in the custom task's layout (a header
`text_a<TAB>text_b<TAB>label`; the test file has the same columns). Deterministic: rerunning
gives the same files. Train, dev and test pairs are drawn independently from all documents
(a toy task for the demo, not a benchmark).
"""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"train": 640, "dev": 120, "test": 40}


def read_documents(path):
    documents, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                current.append(line)
            elif current:
                documents.append(current)
                current = []
    if current:
        documents.append(current)
    return documents


def shortened(sentence, rng):
    """The sentence without two of its words (a paraphrase-like near copy)."""
    words = sentence.split()
    for _ in range(min(2, len(words) - 3)):
        del words[rng.randrange(len(words))]
    return " ".join(words)


def make_pairs(documents, count, rng):
    pairs = []
    for i in range(count):
        doc = rng.randrange(len(documents))
        a, b = rng.sample(range(len(documents[doc])), 2)
        if i % 2 == 0:
            pairs.append((documents[doc][a], shortened(documents[doc][a], rng), "same"))
        else:
            pairs.append((documents[doc][a], documents[doc][b], "different"))
    rng.shuffle(pairs)
    return pairs


def main():
    documents = read_documents(os.path.join(HERE, "sample_text.txt"))
    rng = random.Random(2024)
    out_dir = os.path.join(HERE, "copy_pairs")
    os.makedirs(out_dir, exist_ok=True)
    for split, count in SIZES.items():
        with open(os.path.join(out_dir, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("text_a\ttext_b\tlabel\n")
            for a, b, label in make_pairs(documents, count, rng):
                f.write(f"{a}\t{b}\t{label}\n")


if __name__ == "__main__":
    main()
