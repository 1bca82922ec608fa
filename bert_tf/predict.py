"""Answer text lines with an exported SavedModel (`python -m bert_tf.predict`).

    python -m bert_tf.predict --export_dir=EXPORT_DIR [--input_file=F] [--output_file=O]
        [--batch_size=32] [--sort_window=LINES]

Reads UTF-8 lines from --input_file (default stdin) and writes one JSON object per line, in
order, to --output_file (default stdout; a file is written under a temporary name and renamed
when complete: never half-written). Lines are read in windows of --sort_window lines (default
32 batches, 8 for a features export, whose answers are large), sorted by length (characters, a
proxy for word pieces) into batches, so that a batch of the export runs at about the length of
its lines (exports pad a batch to its longest), and answered in input order once the window is
done; --sort_window=1 answers each batch as soon as it is read. The answers do not depend on it.
What a line holds depends on the export's task (its bert_tf_export.json):

  classifier, features  `text_a` or `text_a<TAB>text_b`
                        -> classifier {"label": str, "probabilities": {label: float}}
                        -> features {"input_ids": [int] (real tokens), "layers": [[[float] per
                           layer] per token]}
  tagging               a text -> {"tags": [str per whitespace word]} (plus "words" when the
                        text's `str.split()` has as many words)
  squad                 `question<TAB>context` (split at the first tab) -> {"answer": str,
                        "score": float}, plus "null_score_diff": float for a SQuAD 2.0 export
                        (the answer is "" when it exceeds the export's threshold)

Only the line's final newline is removed; other whitespace is the model's business.
"""

import argparse
import contextlib
import json
import sys

from bert_tf import files
from bert_tf.serving import predict as serving_predict


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.predict", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--input_file", default=None, help="default: stdin")
    parser.add_argument("--output_file", default=None, help="default: stdout")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--sort_window", type=int, default=None,
                        help="lines sorted by length together (default: 32 batches, 8 for a "
                             "features export); 1: answer each batch as soon as it is read")
    args = parser.parse_args(argv)
    for name in ("batch_size", "sort_window"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name}={value}: expected a positive number")
    source_name = args.input_file or "stdin"
    try:
        source = (open(args.input_file, encoding="utf-8", newline="\n") if args.input_file
                  else sys.stdin)
    except OSError as e:
        parser.error(f"--input_file={args.input_file}: {e.strerror}")
    sink = (files.atomic_open(args.output_file) if args.output_file
            else contextlib.nullcontext(sys.stdout))
    try:
        with sink as out:  # a file is renamed to --output_file only once complete
            for row in serving_predict.predict_lines(args.export_dir, source, args.batch_size,
                                                     args.sort_window):
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    except (serving_predict.PredictError, UnicodeDecodeError) as e:
        raise SystemExit(f"bert_tf.predict: {source_name}: {e}") from None
    except files.OutputError as e:
        raise SystemExit(f"bert_tf.predict: {e}") from None
    finally:
        if args.input_file:
            source.close()


if __name__ == "__main__":
    main()
