"""Serving: SavedModels that take raw strings, and answers from them.

  export.py        the export modules of the classifier, features and tagging tasks,
                   `build_export` / `save_export` (the logic of `python -m bert_tf.export`)
  squad_export.py  `SquadExport`: run_squad.py's prediction (windows, n best, final text) in
                   the graph
  inputs.py        `ServingInputs`: raw text -> input_ids / input_mask / segment_ids in the graph
  windows.py       the window arithmetic of long texts in the graph (tagging, SQuAD)
  predict.py       text lines -> JSON answers of an export (the logic of
                   `python -m bert_tf.predict`)
"""
