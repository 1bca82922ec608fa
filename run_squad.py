"""run_squad.py: the original's command line, unchanged. The command (its flags, --help and
main) is bert_tf/run_squad.py, which also runs as `python -m bert_tf.run_squad` from any
directory once the package is installed (README: "Set-up").
"""

from bert_tf.run_squad import run

if __name__ == "__main__":
    run()
