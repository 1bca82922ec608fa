#!/usr/bin/env bash
# The whole pipeline on the bundled sample text, from a fresh machine:
#   install -> WordPiece vocabulary -> create_pretraining_data.py -> run_pretraining.py
#   (a small BERT, a few hundred steps, then eval) -> an official-format checkpoint
#   -> run_classifier.py: fine-tune it on a small sentence-pair task (examples/copy_pairs:
#   are the two sentences from the same document?), eval and predict.
# Everything goes to $DEMO_DIR (default /tmp/bert_tf_demo), which is emptied first.
# Set DEMO_SKIP_INSTALL=1 to skip the pip steps; extra arguments go to run_pretraining.py.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PYTHON="${PYTHON:-python3}"
OUT="${DEMO_DIR:-/tmp/bert_tf_demo}"
STEPS="${DEMO_STEPS:-300}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
start=$(date +%s)
stamp() { echo "[demo $(( $(date +%s) - start ))s] $*"; }

if [[ "${DEMO_SKIP_INSTALL:-0}" != 1 ]]; then
  stamp "installing the pinned dependencies and bert_tf"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check -r requirements.txt
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
fi

rm -rf "$OUT"
mkdir -p "$OUT"
TEXT="$REPO/examples/sample_text.txt"

stamp "1/4 building a WordPiece vocabulary from $TEXT"
"$PYTHON" -m bert_tf.vocab --input_file="$TEXT" --output_file="$OUT/vocab.txt" \
  --vocab_size=2000 --lower_thresh=2 --do_lower_case=true
# The model's vocab_size is the vocabulary's actual size.
"$PYTHON" - "$REPO/examples/bert_config_tiny.json" "$OUT/vocab.txt" "$OUT/bert_config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
with open(sys.argv[2], encoding="utf-8") as f:
    config["vocab_size"] = sum(1 for _ in f)
json.dump(config, open(sys.argv[3], "w"), indent=2, sort_keys=True)
PY

stamp "2/4 create_pretraining_data.py -> $OUT/pretrain.tfrecord"
"$PYTHON" create_pretraining_data.py --input_file="$TEXT" --output_file="$OUT/pretrain.tfrecord" \
  --vocab_file="$OUT/vocab.txt" --do_lower_case=true --max_seq_length=64 \
  --max_predictions_per_seq=10 --masked_lm_prob=0.15 --dupe_factor=5 --random_seed=12345 \
  2> "$OUT/create_pretraining_data.log"

stamp "3/4 run_pretraining.py: $STEPS steps, then eval -> $OUT/model"
"$PYTHON" run_pretraining.py --bert_config_file="$OUT/bert_config.json" \
  --input_file="$OUT/pretrain.tfrecord" --output_dir="$OUT/model" \
  --max_seq_length=64 --max_predictions_per_seq=10 --do_train --do_eval \
  --train_batch_size=32 --eval_batch_size=32 --learning_rate=5e-4 \
  --num_train_steps="$STEPS" --num_warmup_steps=$(( STEPS / 10 )) \
  --save_checkpoints_steps=100 --iterations_per_loop=50 --max_eval_steps=20 "$@" \
  2> >(tee "$OUT/run_pretraining.log" | grep --line-buffered -E "\] (step |\*\*\*\*\*|  [a-z_]+ = |Saved checkpoint)" >&2)

stamp "4/4 run_classifier.py: fine-tune on examples/copy_pairs -> $OUT/classifier"
"$PYTHON" run_classifier.py --task_name=custom --data_dir="$REPO/examples/copy_pairs" \
  --vocab_file="$OUT/vocab.txt" --bert_config_file="$OUT/bert_config.json" \
  --init_checkpoint="$OUT/model" --output_dir="$OUT/classifier" --do_lower_case=true \
  --do_train --do_eval --do_predict --max_seq_length=64 --train_batch_size=32 \
  --learning_rate=2e-4 --num_train_epochs="${DEMO_EPOCHS:-5}" --save_checkpoints_steps=1000 \
  --iterations_per_loop=20 \
  2> >(tee "$OUT/run_classifier.log" | grep --line-buffered -E "\] (step |\*\*\*\*\*|  [a-z_]+ = |Wrote)" >&2)

stamp "done"
"$PYTHON" - "$OUT" <<'PY'
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
out = sys.argv[1]
model = os.path.join(out, "model")
latest = tf.train.latest_checkpoint(model)
names = [name for name, _ in tf.train.list_variables(latest)]
weights = [n for n in names if not n.endswith(("/adam_m", "/adam_v")) and n != "global_step"]
print()
print(f"vocabulary:         {out}/vocab.txt")
print(f"bert config:        {out}/bert_config.json")
print(f"training records:   {out}/pretrain.tfrecord")
print(f"final checkpoint:   {latest}  ({len(weights)} variables in the original names, "
      f"e.g. {weights[0]}, plus adam_m/adam_v and global_step)")
print(f"TensorBoard logs:   {model}/train, {model}/eval")
print(f"logs:               {out}/run_pretraining.log, {out}/create_pretraining_data.log")
print(f"eval results:       {model}/eval_results.txt")
with open(os.path.join(model, "eval_results.txt")) as f:
    for line in f:
        print("  " + line.rstrip())
classifier = os.path.join(out, "classifier")
print(f"fine-tuned:         {tf.train.latest_checkpoint(classifier)}  (task.json: "
      f"{os.path.join(classifier, 'task.json')})")
print(f"classifier eval:    {classifier}/eval_results.txt")
with open(os.path.join(classifier, "eval_results.txt")) as f:
    for line in f:
        print("  " + line.rstrip())
with open(os.path.join(classifier, "test_results.tsv")) as f:
    rows = f.read().splitlines()
print(f"predictions:        {classifier}/test_results.tsv ({len(rows)} lines of class "
      f"probabilities, columns: different, same (the sorted labels)); first: {rows[0]}")
PY
