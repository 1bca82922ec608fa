"""Trains the small SentencePiece model the ALBERT tests tokenize with (albert.model,
albert.vocab), with the flags google-research/albert's README gives for 30k-clean.model
(pad 0, unk 1, no bos/eos, control symbols [CLS] [SEP] [MASK], the same user-defined symbols,
unigram) but 2000 pieces, on a corpus made from ../shared/data: the sample text, the uncased
vocabulary's entries twenty to a line (minus [unused*] and the ## pieces' marks), and lines of
numbers with commas and accented words, so that the quirks of the original's `encode_pieces`
and `preprocess_text` have pieces to act on.

    python3 tests/data/albert_spm/make_spm.py

The pieces and scores (albert.vocab) are the same on every run of one sentencepiece version
(input not shuffled, one thread; 0.2.3 wrote the committed files); the .model's bytes also hold
the trainer's temporary input path, so they differ from run to run.
"""

import os
import tempfile

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared", "data"))


def corpus_lines():
    with open(os.path.join(SHARED, "sample_text.txt"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    with open(os.path.join(SHARED, "uncased_vocab.txt"), encoding="utf-8") as f:
        words = [w.strip().lstrip("#") for w in f]
    words = [w for w in words if w and not w.startswith("[")]
    lines += [" ".join(words[i:i + 20]) for i in range(0, len(words), 20)]
    for i in range(200):
        lines.append(f"In {1900 + i}, {i * 37},{i % 7} people paid {i * 1.5:.2f} euros, "
                     f"about {i * 1013:,} in all.")
    lines += ["Café naïve résumé façade Ångström über coöperate", "Zürich, São Paulo, Kraków."]
    return lines


def main():
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(corpus_lines()) + "\n")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(HERE, "albert"), vocab_size=2000,
            pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
            control_symbols="[CLS],[SEP],[MASK]",
            user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"],
            shuffle_input_sentence=False, character_coverage=0.99995, model_type="unigram",
            num_threads=1, minloglevel=2)


if __name__ == "__main__":
    main()
