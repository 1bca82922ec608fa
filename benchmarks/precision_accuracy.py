"""Accuracy of each export precision on a real dev/test set, against float32 (issue 31).

  python3 benchmarks/precision_accuracy.py --task=mrpc --checkpoint=RUN_DIR \\
      --bert_dir=MODEL_DIR --data=dev.tsv --export_root=EXPORTS_DIR
  python3 benchmarks/precision_accuracy.py --task=conll --checkpoint=RUN_DIR \\
      --bert_dir=MODEL_DIR --data=eng.testb --export_root=EXPORTS_DIR [--doc_stride=64]
  python3 benchmarks/precision_accuracy.py --task=squad2 --checkpoint=RUN_DIR \\
      --bert_dir=MODEL_DIR --data=dev.json --export_root=EXPORTS_DIR \\
      --evaluate_script=evaluate-v2.0.py --max_seq_length=256 [--null_score_diff_threshold=0]

`--checkpoint` is a fine-tuned output dir (run_classifier.py, run_tagging.py, run_squad.py; its
latest checkpoint and, for labels, its task.json), `--bert_dir` the folder of its
bert_config.json and vocab.txt. For each `--precisions` entry (float32 first: it is the
reference) the fine-tuned checkpoint is exported as `python -m bert_tf.export` does
(`build_export` + `save_export`, to EXPORTS_DIR/<task>-<precision>), the SavedModel is loaded
and called on the whole set in batches of `--batch_size` raw strings, as a server would be
(texts sorted by length into batches, so each batch runs at about its own length; the
answers do not depend on the batch: tests/test_export.py), and scored:

  mrpc    accuracy and F1 of label "1" (GLUE's MRPC metrics) on the GLUE dev.tsv layout
          (Quality, #1 ID, #2 ID, #1 String, #2 String), label agreement with float32, the
          largest |probability difference| from float32's;
  conll   entity F1 (`bert_tf.evaluation.tagging_metrics.entity_scores`, conlleval's
          definition) on a CoNLL file (the tag in the last column, IOB1 or IOB2), one text per
          sentence (its words joined by spaces: the export splits at whitespace), tag
          agreement with float32 over words, the largest |probability difference| of the
          words' tag distributions (the export module's model called in this process on the
          export's own windows: the tagging signature returns tags only);
  squad2  EM / F1 of the official SQuAD 2.0 script (`--evaluate_script`, run as a
          subprocess; not part of this repository), answer agreement with float32 (the same
          string, "" = no answer), the largest |difference| of the best span's score (start +
          end logit) and of null_score_diff (logits, not probabilities).

Also printed: where a prediction differs from float32's, float32's own margin there (the
probability gap between its top two classes; SQuAD: |null_score_diff - threshold| where the
answer changes between "" and a span, counted apart from changes between two spans), which
shows whether the flips are near-ties. `--results_json` keeps every number. The first lines
name the CPU (`common.machine_header`). Each precision's predictions, in the data's order,
are written to EXPORTS_DIR/<task>-<precision>-predictions.json (SQuAD: {id: answer}, and
squad2-<precision>-null_odds.json).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_machine_header, print_table  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf import families  # noqa: E402
from bert_tf.data.classifier_tasks import MrpcProcessor  # noqa: E402
from bert_tf.data.conll import read_conll  # noqa: E402
from bert_tf.evaluation.tagging_metrics import entity_scores  # noqa: E402
from bert_tf.serving import export  # noqa: E402

TASKS = {"mrpc": "classifier", "conll": "tagging", "squad2": "squad"}


def _parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--checkpoint", required=True, help="fine-tuned output dir or prefix")
    parser.add_argument("--bert_dir", required=True,
                        help="folder of bert_config.json and vocab.txt")
    parser.add_argument("--data", required=True,
                        help="mrpc: GLUE dev.tsv; conll: CoNLL file; squad2: SQuAD json")
    parser.add_argument("--export_root", required=True, help="where the exports are written")
    parser.add_argument("--precisions", default="float32,bfloat16,int8")
    parser.add_argument("--do_lower_case", default="true", choices=("true", "false"))
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--doc_stride", type=int, default=None,
                        help="the training script's default when not given")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--evaluate_script", help="squad2: the official evaluate-v2.0.py")
    parser.add_argument("--null_score_diff_threshold", type=float, default=0.0)
    parser.add_argument("--results_json", help="write every number here")
    args = parser.parse_args(argv)
    precisions = [x.strip() for x in args.precisions.split(",") if x.strip()]
    if not precisions or precisions[0] != "float32":
        parser.error(f"--precisions={args.precisions!r}: float32 must come first (the reference)")
    if args.task == "squad2" and not (args.evaluate_script
                                      and os.path.isfile(args.evaluate_script)):
        parser.error(f"--evaluate_script={args.evaluate_script!r}: no such file (squad2 needs "
                     "the official evaluate-v2.0.py)")
    for flag in ("data", "bert_dir"):
        if not os.path.exists(getattr(args, flag)):
            parser.error(f"--{flag}={getattr(args, flag)}: no such file or directory")
    args.precisions = precisions
    return args


def in_length_order(examples, length, batch_size):
    """Batches of indexes into `examples`, sorted by `length(example)` (characters: a proxy
    for pieces), so that each batch of the export runs at about its own length."""
    order = sorted(range(len(examples)), key=lambda i: length(examples[i]))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def _strings(values):
    return tf.constant(list(values), tf.string)


def _decode(array):
    return [x.decode("utf-8") for x in array]


# ---- MRPC -------------------------------------------------------------------------------

def read_mrpc(path):
    """(text_a, text_b, label) of a GLUE MRPC dev.tsv, read by run_classifier.py's processor."""
    if os.path.basename(path) != "dev.tsv":
        raise SystemExit(f"--data={path}: expected GLUE's MRPC dev.tsv")
    examples = MrpcProcessor().get_dev_examples(os.path.dirname(path) or ".")
    return [(e.text_a, e.text_b, e.label) for e in examples]


def run_mrpc(serve, examples, batch_size, module=None):
    """-> {"labels": [N] str, "probabilities": [N, C] float32}."""
    del module
    labels = [None] * len(examples)
    probabilities = [None] * len(examples)
    for batch in in_length_order(examples, lambda e: len(e[0]) + len(e[1]), batch_size):
        out = serve(text_a=_strings(examples[i][0] for i in batch),
                    text_b=_strings(examples[i][1] for i in batch))
        for i, label, p in zip(batch, _decode(out["label"].numpy()),
                               out["probabilities"].numpy()):
            labels[i] = label
            probabilities[i] = p
    return {"labels": labels, "probabilities": np.array(probabilities)}


def score_mrpc(examples, result):
    gold = [e[2] for e in examples]
    predicted = result["labels"]
    tp = sum(g == "1" and p == "1" for g, p in zip(gold, predicted))
    fp = sum(g != "1" and p == "1" for g, p in zip(gold, predicted))
    fn = sum(g == "1" and p != "1" for g, p in zip(gold, predicted))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(g == p for g, p in zip(gold, predicted)) / len(gold)
    return {"accuracy": 100 * accuracy, "f1": 100 * f1}


# ---- CoNLL ------------------------------------------------------------------------------

def read_tagged(path):
    """(text, gold tags) per sentence of a CoNLL file; text = the words joined by spaces."""
    sentences = read_conll(path)
    for s in sentences:
        for word in s.words:
            if not word or any(c.isspace() for c in word):
                raise SystemExit(f"{path}:{s.line_number}: word {word!r} is empty or holds "
                                 "whitespace; the export splits texts at whitespace")
    return [(" ".join(s.words), list(s.tags)) for s in sentences]


def run_conll(serve, examples, batch_size, module):
    """-> {"tags": [N] lists of str, "probabilities": [words, C] float32 in sentence order}.

    The probabilities come from `module` (the export module the SavedModel was saved from, same
    weights and arithmetic) on the export's own windows: softmax of the logits at each word's
    tagging position."""
    tags = [None] * len(examples)
    word_probabilities = [None] * len(examples)
    for batch in in_length_order(examples, lambda e: len(e[0]), batch_size):
        texts = _strings(examples[i][0] for i in batch)
        out = serve(text=texts)
        for i, row, n in zip(batch, out["tags"].numpy(), out["num_words"].numpy()):
            tags[i] = _decode(row[:n])
        windows = module.inputs.words(texts)
        features = {k: windows[k] for k in ("input_ids", "input_mask", "segment_ids")}
        logits = module.model(features, training=False)["logits"]
        probs = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
        tagged = tf.where(windows["tag_position"] > 0)
        text_index = tf.gather(windows["text_index"], tagged[:, 0]).numpy()
        word = tf.gather_nd(windows["word_ids"], tagged).numpy()
        p = tf.gather_nd(probs, tagged).numpy()
        for j, i in enumerate(batch):
            mine = text_index == j
            order = np.argsort(word[mine], kind="stable")
            word_probabilities[i] = p[mine][order]
    return {"tags": tags, "probabilities": word_probabilities}


def score_conll(examples, result):
    gold = [e[1] for e in examples]
    scores = entity_scores(gold, result["tags"])
    return {"entity_f1": 100 * scores["f1"], "precision": 100 * scores["precision"],
            "recall": 100 * scores["recall"], "token_accuracy": 100 * scores["accuracy"]}


# ---- SQuAD 2.0 --------------------------------------------------------------------------

def read_squad(path):
    """(id, question, context) per question of a SQuAD json."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [(qa["id"], qa["question"], paragraph["context"])
            for article in data for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def run_squad(serve, examples, batch_size, module=None):
    """-> {"answers": [N] str, "score", "null_score_diff": [N] float64}."""
    del module
    answers = [None] * len(examples)
    score = np.zeros(len(examples))
    null_diff = np.zeros(len(examples))
    for batch in in_length_order(examples, lambda e: len(e[2]), batch_size):
        out = serve(question=_strings(examples[i][1] for i in batch),
                    context=_strings(examples[i][2] for i in batch))
        for j, i in enumerate(batch):
            answers[i] = out["answer"].numpy()[j].decode("utf-8")
            score[i] = out["score"].numpy()[j]
            null_diff[i] = out["null_score_diff"].numpy()[j]
    return {"answers": answers, "score": score, "null_score_diff": null_diff}


def score_squad(examples, result, data_path, evaluate_script, work_dir, precision):
    predictions = os.path.join(work_dir, f"squad2-{precision}-predictions.json")
    null_odds = os.path.join(work_dir, f"squad2-{precision}-null_odds.json")
    with open(predictions, "w", encoding="utf-8") as f:
        json.dump({e[0]: a for e, a in zip(examples, result["answers"])}, f)
    with open(null_odds, "w", encoding="utf-8") as f:
        json.dump({e[0]: float(d) for e, d in zip(examples, result["null_score_diff"])}, f)
    done = subprocess.run([sys.executable, evaluate_script, data_path, predictions,
                           "--na-prob-file", null_odds],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"--evaluate_script={evaluate_script} failed: {done.stderr.strip()}")
    official = json.loads(done.stdout)
    return {"exact": official["exact"], "f1": official["f1"],
            "HasAns_f1": official.get("HasAns_f1"), "NoAns_exact": official.get("NoAns_exact"),
            "best_f1": official.get("best_f1")}


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


# ---- comparison -------------------------------------------------------------------------

def _margin(p):
    """Gap between the two largest probabilities of each row of p [..., C]."""
    top = np.sort(p, axis=-1)
    return top[..., -1] - top[..., -2]


def compare(task, reference, result, threshold):
    """Agreement with float32 and the largest differences; for the disagreements, float32's
    margin there."""
    if task == "mrpc":
        same = np.array([a == b for a, b in zip(reference["labels"], result["labels"])])
        diff = np.abs(reference["probabilities"] - result["probabilities"])
        margins = _margin(reference["probabilities"])[~same]
        return {"agreement": 100 * same.mean(), "differ": int((~same).sum()),
                "of": int(same.size), "max_abs_diff": float(diff.max()),
                "flip_margins_f32": sorted(float(x) for x in margins)}
    if task == "conll":
        same = np.array([a == b for ra, rb in zip(reference["tags"], result["tags"])
                         for a, b in zip(ra, rb)])
        p_ref = np.concatenate(reference["probabilities"])
        p_res = np.concatenate(result["probabilities"])
        margins = _margin(p_ref)
        # The tags the export returned vs the probabilities' argmax: both from the same
        # weights, so this is a check of the probability bookkeeping (0 expected).
        return {"agreement": 100 * same.mean(), "differ": int((~same).sum()),
                "of": int(same.size), "max_abs_diff": float(np.abs(p_ref - p_res).max()),
                "flip_margins_f32": sorted(float(x) for x in margins[~same])
                if margins.shape == same.shape else None}
    same = np.array([a == b for a, b in zip(reference["answers"], result["answers"])])
    finite = np.isfinite(reference["null_score_diff"]) & (np.abs(reference["null_score_diff"])
                                                           < 1e300)
    null_diff = np.abs(reference["null_score_diff"] - result["null_score_diff"])[finite]
    score_diff = np.abs(reference["score"] - result["score"])
    return {"agreement": 100 * same.mean(), "differ": int((~same).sum()), "of": int(same.size),
            "max_abs_diff": float(score_diff.max()),
            "max_abs_null_score_diff_diff": float(null_diff.max()) if null_diff.size else 0.0,
            # An answer changes between "" and a span (a null flip: float32's margin is
            # |null_score_diff - threshold|) or between two spans (a near-tie of span scores).
            "null_flips": int(sum(not a or not b for a, b, s in zip(
                reference["answers"], result["answers"], same) if not s)),
            "span_changes": int(sum(bool(a and b) for a, b, s in zip(
                reference["answers"], result["answers"], same) if not s)),
            "flip_margins_f32": sorted(
                float(abs(d - threshold)) for d, a, b, s in zip(
                    reference["null_score_diff"], reference["answers"], result["answers"], same)
                if not s and (not a or not b))}


def main(argv=None):
    args = _parse_args(argv)
    print_machine_header()
    bert_config = os.path.join(args.bert_dir, "bert_config.json")
    vocab_file = os.path.join(args.bert_dir, "vocab.txt")
    config = families.read_config(bert_config)
    kind = TASKS[args.task]
    if args.task == "mrpc":
        examples, run = read_mrpc(args.data), run_mrpc
    elif args.task == "conll":
        examples, run = read_tagged(args.data), run_conll
    else:
        examples, run = read_squad(args.data), run_squad
    labels = (export.read_labels(None, args.checkpoint) if kind in ("classifier", "tagging")
              else None)
    os.makedirs(args.export_root, exist_ok=True)
    checkpoint = (tf.train.latest_checkpoint(args.checkpoint) if os.path.isdir(args.checkpoint)
                  else args.checkpoint)
    print(f"task {args.task}: {len(examples)} examples from {args.data}; checkpoint "
          f"{checkpoint}", flush=True)
    results, rows, summary = {}, [], {}
    for precision in args.precisions:
        start = time.time()
        module, info = export.build_export(
            kind, config, args.checkpoint, vocab_file, args.do_lower_case == "true",
            args.max_seq_length, labels, doc_stride=args.doc_stride,
            version_2_with_negative=args.task == "squad2",
            null_score_diff_threshold=args.null_score_diff_threshold, precision=precision)
        export_dir = export.save_export(
            module, info, os.path.join(args.export_root, f"{args.task}-{precision}"))
        exported = time.time() - start
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        start = time.time()
        results[precision] = run(serve, examples, args.batch_size, module)
        answered = time.time() - start
        if args.task == "mrpc":
            scores = score_mrpc(examples, results[precision])
            _write_json(os.path.join(args.export_root,
                                     f"{args.task}-{precision}-predictions.json"),
                        {"labels": results[precision]["labels"],
                         "probabilities": results[precision]["probabilities"].tolist()})
        elif args.task == "conll":
            scores = score_conll(examples, results[precision])
            _write_json(os.path.join(args.export_root,
                                     f"{args.task}-{precision}-predictions.json"),
                        {"tags": results[precision]["tags"]})
        else:
            scores = score_squad(examples, results[precision], args.data, args.evaluate_script,
                                 args.export_root, precision)
        versus = compare(args.task, results["float32"], results[precision],
                         args.null_score_diff_threshold)
        summary[precision] = {"scores": scores, "versus_float32": versus,
                              "export_seconds": exported, "answer_seconds": answered}
        print(f"{precision}: {json.dumps(summary[precision])}", flush=True)
        main_scores = list(scores.items())[:2]
        rows.append([precision] + [f"{v:.2f}" for _, v in main_scores]
                    + [f"{versus['agreement']:.2f} ({versus['differ']}/{versus['of']})",
                       f"{versus['max_abs_diff']:.3g}", f"{answered:.0f}"])
    first, second = list(summary["float32"]["scores"])[:2]
    diff_name = {"squad2": "max |score diff| (logits)"}.get(args.task, "max |prob diff|")
    print()
    print_table(["precision", first, second, "agreement % (differ/of)", diff_name,
                 "answer s"], rows)
    if args.results_json:
        with open(args.results_json, "w", encoding="utf-8") as f:
            json.dump({"task": args.task, "data": args.data, "checkpoint": args.checkpoint,
                       "examples": len(examples), "results": summary}, f, indent=1)


if __name__ == "__main__":
    main()
