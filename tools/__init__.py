"""Support for comparing bert_tf with the original code; not part of the package.

  original.py  imports a copy of google-research/bert (or google-research/electra) on
               TensorFlow 2, for the comparisons of tests, tests/data/*/make_expected.py and
               benchmarks.
"""
