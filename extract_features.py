"""extract_features.py: the original's command line, unchanged. The command (its flags, --help
and main) is bert_tf/extract_features.py, which also runs as `python -m
bert_tf.extract_features` from any directory once the package is installed (README: "Set-up").
"""

from bert_tf.extract_features import run

if __name__ == "__main__":
    run()
