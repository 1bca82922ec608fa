"""create_pretraining_data.py: the original's command line, unchanged. The command (its flags,
--help and main) is bert_tf/create_pretraining_data.py, which also runs as `python -m
bert_tf.create_pretraining_data` from any directory once the package is installed (README:
"Set-up").
"""

from bert_tf.create_pretraining_data import run

if __name__ == "__main__":
    run()
