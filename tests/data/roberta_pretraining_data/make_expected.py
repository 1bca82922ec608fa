"""Records fairseq's FULL-SENTENCES packing of corpus_1.txt + corpus_2.txt into expected.json.

Run once, by hand (needs Cython, gcc, numpy, `regex`, and a fairseq checkout; no PyTorch):

  python -m venv --system-site-packages /tmp/venv_cy && /tmp/venv_cy/bin/pip install cython
  /tmp/venv_cy/bin/python tests/data/roberta_pretraining_data/make_expected.py \\
      --fairseq_repo=/work/.mirror/facebookresearch+fairseq/repo

What runs fairseq's own code, unmodified, taken from its git tag v0.12.2 (`git show`):
  - fairseq/data/encoders/gpt2_bpe_utils.py: `get_encoder(vocab.json, merges.txt).encode(line)`,
    the GPT-2 encoder of examples/roberta/multiprocessing_bpe_encoder.py (pure Python);
  - fairseq/data/token_block_utils_fast.pyx, compiled here with Cython:
    `_get_slice_indices_fast(sizes, break_mode, block_size, document_sep_len=1)` and
    `_get_block_to_dataset_index_fast(sizes, slice_indices)`, the block boundaries of
    `TokenBlockDataset`. The module does `import torch` without using it; an empty module
    stands in for torch (no PyTorch here).

What this script transcribes (torch-only glue around those, a few lines each, read in
fairseq v0.12.2):
  - multiprocessing_bpe_encoder.py `--keep-empty`: each line `.strip()`-ed, blank lines kept;
    lines read in Python's text mode, files one after the other (each file read as if it
    ended with a newline: bert_tf's reader's rule);
  - fairseq-preprocess, `Dictionary.encode_line(append_eos=True)`: each line's ids + `</s>`
    (a blank line: `</s>` alone). The id strings go through fairseq's dict.txt there; a
    Transformers vocab.json (ours too) is already in dict.txt's order, so the ids are kept;
  - `MaskedLMTask._load_dataset_split`: `TokenBlockDataset(tokens_per_sample - 1,
    break_mode)`, whose `__getitem__` concatenates sentences start..end and slices
    `[offset, offset + length)`, then `PrependTokenDataset(bos)`;
  - training's size filter (`Trainer.get_train_iterator(ignore_invalid_inputs=True)`): a sample
    longer than the model's `max_positions` (= tokens_per_sample) is dropped ("too_long" below).

Output: expected.json {"line_ids": [ids per line, no </s>], "cases": [{"max_seq_length",
"break_mode", "blocks": [[<s> + block ids]], "too_long": [block indices]}]}.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_DIR = os.path.join(HERE, "..", "roberta_tokenizer")
CORPUS = ("corpus_1.txt", "corpus_2.txt")
TAG = "v0.12.2"
CASES = [(n, mode) for n in (12, 28, 42, 64, 512) for mode in ("complete", "complete_doc")]
BOS, PAD, EOS = 0, 1, 2  # fairseq's Dictionary: <s>, <pad>, </s> (vocab.json checked below)


def _from_git(repo, path, directory):
    text = subprocess.run(["git", "-C", repo, "show", f"{TAG}:{path}"], check=True,
                          capture_output=True).stdout
    out = os.path.join(directory, os.path.basename(path))
    with open(out, "wb") as f:
        f.write(text)
    return out


def _import(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_fairseq(repo, directory):
    bpe_utils = _import("gpt2_bpe_utils", _from_git(
        repo, "fairseq/data/encoders/gpt2_bpe_utils.py", directory))
    pyx = _from_git(repo, "fairseq/data/token_block_utils_fast.pyx", directory)
    env = dict(os.environ, CFLAGS=f"-I{np.get_include()}")
    subprocess.run([sys.executable, "-m", "Cython.Build.Cythonize", "-3", "-i", pyx],
                   check=True, cwd=directory, env=env, capture_output=True)
    sys.modules.setdefault("torch", types.ModuleType("torch"))  # imported, never used
    sys.path.insert(0, directory)
    import token_block_utils_fast  # pylint: disable=import-outside-toplevel,import-error
    return bpe_utils, token_block_utils_fast


def read_lines():
    lines = []
    for name in CORPUS:
        with open(os.path.join(HERE, name), "r", encoding="utf-8") as f:
            lines += [line.strip() for line in f]
    return lines


def fairseq_blocks(sentences, tokens_per_sample, break_mode, fast):
    """TokenBlockDataset(tokens_per_sample - 1, break_mode) items, each with <s> prepended."""
    sizes = np.array([len(s) for s in sentences], dtype=np.int64)
    slice_indices = fast._get_slice_indices_fast(  # pylint: disable=protected-access
        sizes, break_mode, tokens_per_sample - 1, 1)
    index = fast._get_block_to_dataset_index_fast(  # pylint: disable=protected-access
        sizes, slice_indices)
    blocks = []
    for (start, offset, end), (s, e) in zip(index.tolist(), slice_indices.tolist()):
        buffer = [t for i in range(start, end + 1) for t in sentences[i]]
        blocks.append([BOS] + buffer[offset:offset + (e - s)])
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fairseq_repo", default="/work/.mirror/facebookresearch+fairseq/repo")
    args = parser.parse_args()
    vocab_json = os.path.join(VOCAB_DIR, "vocab.json")
    with open(vocab_json, encoding="utf-8") as f:
        vocab = json.load(f)
    assert (vocab["<s>"], vocab["<pad>"], vocab["</s>"]) == (BOS, PAD, EOS), "fairseq's ids"
    with tempfile.TemporaryDirectory() as directory:
        bpe_utils, fast = load_fairseq(args.fairseq_repo, directory)
        encoder = bpe_utils.get_encoder(vocab_json, os.path.join(VOCAB_DIR, "merges.txt"))
        line_ids = [encoder.encode(line) for line in read_lines()]
        sentences = [ids + [EOS] for ids in line_ids]
        cases = []
        for tokens_per_sample, break_mode in CASES:
            blocks = fairseq_blocks(sentences, tokens_per_sample, break_mode, fast)
            too_long = [i for i, b in enumerate(blocks) if len(b) > tokens_per_sample]
            cases.append({"max_seq_length": tokens_per_sample, "break_mode": break_mode,
                          "blocks": blocks, "too_long": too_long})
            print(f"{break_mode} {tokens_per_sample}: {len(blocks)} blocks, "
                  f"too long {too_long}")
    out = {"fairseq": TAG, "line_ids": line_ids, "cases": cases}
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
