"""Builds a pretraining-format corpus of real English text from what Debian installs.

Sources, in a fixed order (so the same machine gives the same corpus): Python docstrings of the
standard library and installed packages (`ast`), then `/usr/share/doc/*/changelog*.gz`,
`README*`, `NEWS*` and `copyright` files, and `/usr/share/common-licenses`. Each docstring or
file becomes a document (long ones are cut into documents of at most 60 sentences); text is
split into sentences at `. `, `! `, `? ` and paragraph breaks; lines with too few letters
(ASCII art, tables, version banners) are dropped. Output: one sentence a line, a blank line
between documents, as create_pretraining_data.py expects.

  python3 benchmarks/pretraining_corpus.py --output /tmp/corpus.txt --megabytes 32
"""

import argparse
import ast
import glob
import gzip
import os
import re
import sys

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_MAX_SENTENCES = 60


def _sentences(text):
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        if not flat:
            continue
        for sentence in _SENTENCE_END.split(flat):
            letters = sum(c.isalpha() for c in sentence)
            if letters >= 12 and letters >= 0.5 * len(sentence):
                yield sentence
        yield None  # paragraph break


def _documents(text):
    doc = []
    for sentence in _sentences(text):
        if sentence is None:
            if len(doc) >= _MAX_SENTENCES // 2:
                yield doc
                doc = []
            continue
        doc.append(sentence)
        if len(doc) >= _MAX_SENTENCES:
            yield doc
            doc = []
    if len(doc) >= 2:
        yield doc


def _python_docstrings():
    roots = sorted(set(glob.glob("/usr/lib/python3*/")) | set(glob.glob("/usr/lib/python3/dist-packages/")) |
                   set(glob.glob("/usr/local/lib/python3*/dist-packages/")))
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            if "test" in os.path.basename(dirpath):
                continue
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        tree = ast.parse(f.read())
                except (SyntaxError, ValueError, OSError, RecursionError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                        doc = ast.get_docstring(node)
                        if doc and len(doc) > 200:
                            yield doc


def _debian_docs():
    paths = []
    for pattern in ("/usr/share/doc/*/changelog*.gz", "/usr/share/doc/*/README*",
                    "/usr/share/doc/*/NEWS*", "/usr/share/doc/*/copyright",
                    "/usr/share/common-licenses/*"):
        paths.extend(glob.glob(pattern))
    for path in sorted(set(paths)):
        if os.path.isdir(path):
            continue
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        yield data.decode("utf-8", "ignore")


def build_corpus(output, megabytes):
    """Writes at least `megabytes` MB of corpus to `output`; returns (bytes, documents)."""
    limit = int(megabytes * 1e6)
    written = documents = 0
    tmp = output + ".incomplete"
    with open(tmp, "w", encoding="utf-8") as out:
        for source in (_python_docstrings(), _debian_docs()):
            for text in source:
                for doc in _documents(text):
                    block = "\n".join(doc) + "\n\n"
                    out.write(block)
                    written += len(block.encode("utf-8"))
                    documents += 1
                    if written >= limit:
                        break
                if written >= limit:
                    break
            if written >= limit:
                break
    if written < limit:
        os.remove(tmp)
        raise RuntimeError(f"only {written / 1e6:.1f} MB of text found, wanted {megabytes} MB")
    os.replace(tmp, output)
    return written, documents


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--megabytes", type=float, default=32)
    args = parser.parse_args(argv)
    size, docs = build_corpus(args.output, args.megabytes)
    print(f"wrote {args.output}: {size / 1e6:.1f} MB, {docs} documents")


if __name__ == "__main__":
    sys.exit(main())
