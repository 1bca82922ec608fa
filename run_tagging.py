"""run_tagging.py (not in the original; run_classifier.py's flags): its command line, unchanged.
The command (its flags, --help and main) is bert_tf/run_tagging.py, which also runs as `python
-m bert_tf.run_tagging` from any directory once the package is installed (README: "Set-up").
"""

from bert_tf.run_tagging import run

if __name__ == "__main__":
    run()
