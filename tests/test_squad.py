"""SQuAD's model side (SquadTask through the Trainer) against the original run_squad.py,
recorded by tests/data/squad_model/make_expected.py on the golden tiny model: forward logits,
the loss, 3 optimizer steps, the checkpoint's variables; each replica's share of the loss (the
trainer's mirrored and SIGKILL + resume runs are tested task-independently in
test_classification.py and test_training_loop.py); and `run()` / run_squad.py end to end with
every bad input as one clear error.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import golden_path

from bert_tf.bert.config import BertConfig
from bert_tf.checkpoints import load_original_checkpoint, save_original_checkpoint
from bert_tf.tasks.classification import ClassificationTask
from bert_tf.tasks.squad import SquadError, SquadOptions, SquadTask, run
from bert_tf.training.trainer import Trainer, TrainerOptions, TrainingError
from test_training_helpers import (
    REPO, assert_close, assert_matches_golden, assert_replica_shares_add_up, read_checkpoint,
    zero_gradient_bounds,
)

DATA = Path(__file__).resolve().parent / "data" / "squad_model"
EXPECTED = json.loads((DATA / "expected.json").read_text())
MAX_SEQ_LENGTH = EXPECTED["max_seq_length"]
BATCH_SIZE = EXPECTED["batch_size"]
TRAIN, PREDICT, SQUAD_FILE = (str(DATA / n) for n in
                              ("train.tf_record", "predict.tf_record", "squad.json"))
RECORDED_STEPS = len(EXPECTED["steps"])


def golden_config():
    return BertConfig.from_json_file(golden_path("train", "bert_config.json"))


def options(output_dir, **overrides):
    """The recording's run: batch 4 in file order, learning rate 1e-3 over 10 steps."""
    values = dict(output_dir=str(output_dir), train_batch_size=BATCH_SIZE,
                  learning_rate=EXPECTED["learning_rate"],
                  num_train_steps=EXPECTED["num_train_steps"], num_warmup_steps=0,
                  save_checkpoints_steps=RECORDED_STEPS, iterations_per_loop=RECORDED_STEPS,
                  shuffle_buffer_size=0, keep_checkpoint_max=0)
    values.update(overrides)
    return TrainerOptions(**values)


def read_features(path, is_training, max_seq_length=MAX_SEQ_LENGTH):
    spec = SquadTask(max_seq_length).feature_spec(is_training)
    (batch,) = tf.data.TFRecordDataset(path).map(
        lambda r: tf.io.parse_single_example(r, spec)).batch(1000)
    return {k: tf.cast(v, tf.int32) for k, v in batch.items()}


@pytest.fixture(scope="module")
def init_checkpoint(tmp_path_factory):
    """The golden init.ckpt with the recording's SQuAD head (head_init.npz)."""
    model = SquadTask(MAX_SEQ_LENGTH).build_model(golden_config())
    report = load_original_checkpoint(model, golden_path("train", "init.ckpt"))
    assert sorted(report.not_in_checkpoint) == ["cls/squad/output_bias",
                                                "cls/squad/output_weights"]
    head = np.load(DATA / "head_init.npz")
    model.head.output_weights.assign(head["output_weights"])
    model.head.output_bias.assign(head["output_bias"])
    return save_original_checkpoint(
        model, tmp_path_factory.mktemp("init") / "bert_model.ckpt")


@pytest.fixture(scope="module")
def trained(tmp_path_factory, init_checkpoint):
    """Our run of the recording's 10 steps (a checkpoint every 3): (output_dir, history)."""
    output_dir = tmp_path_factory.mktemp("trained")
    trainer = Trainer(golden_config(), SquadTask(MAX_SEQ_LENGTH),
                      options(output_dir, init_checkpoint=init_checkpoint))
    history = []
    trainer.train([TRAIN], step_callback=lambda step, values: history.append((step, values)))
    return output_dir, history


def test_forward_matches_the_original(init_checkpoint):
    model = SquadTask(MAX_SEQ_LENGTH).build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    features = read_features(PREDICT, is_training=False)
    outputs = model(features, training=False)
    expected = np.load(DATA / "forward.npz")
    assert expected["start_logits"].shape == (EXPECTED["counts"]["predict"]["features"],
                                              MAX_SEQ_LENGTH)
    for name in ("start_logits", "end_logits"):
        assert_close(outputs[name], expected[name], name)


def test_loss_on_fixed_logits_matches_the_original():
    fixed = EXPECTED["loss_on_fixed_logits"]
    outputs = {k: tf.constant(fixed[k], tf.float32) for k in ("start_logits", "end_logits")}
    features = {k: tf.constant(fixed[k], tf.int32) for k in ("start_positions", "end_positions")}
    batch = tf.constant([float(len(fixed["start_positions"]))])
    losses = SquadTask(MAX_SEQ_LENGTH).compute_loss(outputs, features, batch)
    assert float(losses["total_loss"]) == pytest.approx(fixed["total_loss"], rel=1e-6)
    assert float(losses["total_loss"]) == pytest.approx(
        (float(losses["start_loss"]) + float(losses["end_loss"])) / 2, rel=1e-6)


@pytest.mark.slow  # ~10 s: 10 steps of the golden model
def test_three_steps_match_the_original(trained, init_checkpoint):
    output_dir, history = trained
    for (step, ours), expected in zip(history, EXPECTED["steps"]):
        assert step == expected["step"]
        assert ours["total_loss"] == pytest.approx(expected["loss"], rel=1e-5), step
        assert ours["learning_rate"] == pytest.approx(expected["learning_rate"], rel=1e-6,
                                                      abs=1e-12), step
    prefix = output_dir / f"model.ckpt-{RECORDED_STEPS}"
    ours = read_checkpoint(prefix)
    original = dict(np.load(DATA / "after_3_steps.npz"))
    original["global_step"] = np.int64(EXPECTED["global_step"])
    # The key biases, output_bias (a constant added to the logits of every position, which the
    # softmax over positions ignores) and the last layer's LayerNorm beta (through the span
    # weights, the same): gradients zero in real arithmetic, rounding noise amplified by Adam.
    features = read_features(TRAIN, is_training=True)
    batches = [{k: v[BATCH_SIZE * t:BATCH_SIZE * (t + 1)] for k, v in features.items()}
               for t in range(RECORDED_STEPS)]
    bounds = zero_gradient_bounds(
        SquadTask(MAX_SEQ_LENGTH), golden_config(), [init_checkpoint, prefix], batches,
        [s["learning_rate"] for s in EXPECTED["steps"]], span_head=True)
    assert_matches_golden(ours, original, zero_gradients=bounds)


@pytest.mark.slow  # shares the training of the test above
def test_our_checkpoint_holds_the_originals_variables(trained):
    """Name, shape and dtype of every variable of the original's training graph: with
    adam_m/adam_v for all but bert/pooler, which gets no gradient under the span head."""
    output_dir, _ = trained
    reader = tf.train.load_checkpoint(str(output_dir / f"model.ckpt-{RECORDED_STEPS}"))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    ours = {name: (list(shapes[name]), dtypes[name].name) for name in shapes}
    variables = json.loads((DATA / "original_variables.json").read_text())
    original = {v["name"]: (v["shape"], v["dtype"]) for v in variables}
    assert ours == original
    assert "bert/pooler/dense/kernel" in ours
    assert not [n for n in ours if n.startswith("bert/pooler/") and "adam" in n]


def test_replica_shares_of_the_loss_add_up_to_the_batch_loss(init_checkpoint):
    """What the mirrored run checked of SQuAD (the trainer's mirrored step itself is tested
    by tests/test_classification.py, tests/test_training_loop.py and
    tests/test_training_composition.py): start, end and total loss are each replica's share
    of the global batch's mean, over the recording's first training batch split 1 + 3."""
    task = SquadTask(MAX_SEQ_LENGTH)
    model = task.build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    features = {k: v[:BATCH_SIZE] for k, v in read_features(TRAIN, is_training=True).items()}
    outputs = model(features, training=False)
    assert_replica_shares_add_up(task, outputs, features, split=1)


# --- run() end to end ---------------------------------------------------------------------------

def squad_v2(path):
    """The recording's SQuAD file as 2.0 data, with one unanswerable question added."""
    data = json.loads(Path(SQUAD_FILE).read_text())
    data["version"] = "v2.0"
    for entry in data["data"]:
        for paragraph in entry["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["is_impossible"] = False
    data["data"][0]["paragraphs"][0]["qas"].append(
        {"id": "none", "question": "what did the monk eat ?", "answers": [],
         "is_impossible": True})
    Path(path).write_text(json.dumps(data))
    return str(path)


def squad_options(tmp_path, **overrides):
    values = dict(vocab_file=str(golden_path("train", "vocab.txt")),
                  output_dir=str(tmp_path / "out"), train_file=SQUAD_FILE,
                  predict_file=SQUAD_FILE, max_seq_length=MAX_SEQ_LENGTH,
                  doc_stride=EXPECTED["doc_stride"], max_query_length=EXPECTED["max_query_length"],
                  train_batch_size=BATCH_SIZE, predict_batch_size=8, num_train_epochs=1.0,
                  learning_rate=1e-3, save_checkpoints_steps=10, iterations_per_loop=10)
    values.update(overrides)
    return SquadOptions(**values)


@pytest.mark.slow  # ~10 s: trains 2 steps and predicts, twice
@pytest.mark.parametrize("version_2", [False, True])
def test_run_trains_predicts_and_evaluates(tmp_path, version_2):
    overrides = {}
    if version_2:
        v2_file = squad_v2(tmp_path / "squad_v2.json")
        overrides = dict(train_file=v2_file, predict_file=v2_file, version_2_with_negative=True)
    out = run(golden_config(), squad_options(tmp_path, **overrides), do_train=True,
              do_predict=True)
    output_dir = tmp_path / "out"
    # 8 (9) examples with batch 4 for 1 epoch: int(8 / 4 * 1) = 2 steps, as the original.
    assert out["checkpoint"] == str(output_dir / "model.ckpt-2")
    names = {"predictions.json", "nbest_predictions.json", "eval_results.json",
             "train.tf_record", "eval.tf_record"} | ({"null_odds.json"} if version_2 else set())
    assert names <= set(os.listdir(output_dir))
    assert not [n for n in os.listdir(output_dir) if ".tmp-" in n]
    predictions = json.loads((output_dir / "predictions.json").read_text())
    assert len(predictions) == (9 if version_2 else 8)
    results = json.loads((output_dir / "eval_results.json").read_text())
    assert results == out["eval_results"]
    if version_2:
        assert {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                "NoAns_exact", "NoAns_f1", "NoAns_total"} <= set(results)
        assert results["total"] == 9
    else:
        assert sorted(results) == ["exact_match", "f1"]


def write_json(path, data):
    Path(path).write_text(json.dumps(data))
    return str(path)


def test_bad_inputs_are_one_clear_error(tmp_path):
    config = golden_config()

    def fails(pattern, do_predict=False, **overrides):
        with pytest.raises(SquadError, match=pattern):
            run(config, squad_options(tmp_path, **overrides), do_train=not do_predict,
                do_predict=do_predict)

    not_squad = write_json(tmp_path / "not_squad.json", {"version": "1.1", "articles": []})
    fails(r"--train_file: .*not_squad\.json.*no 'data'", train_file=not_squad)
    bad_start = json.loads(Path(SQUAD_FILE).read_text())
    bad_start["data"][1]["paragraphs"][0]["qas"][2]["answers"][0]["answer_start"] = 10000
    fails(r"bad_start\.json: question id 'camp2': answer_start 10000 .* outside its "
          r"\d+-character context",
          train_file=write_json(tmp_path / "bad_start.json", bad_start))
    fails(r"The max_seq_length \(32\) must be greater than max_query_length \(29\) \+ 3",
          max_query_length=29)
    fails(r"--doc_stride=22 is larger than the document window of .* = 21 tokens",
          doc_stride=22)
    fails(r"question id 'none' is marked is_impossible .*--version_2_with_negative",
          train_file=squad_v2(tmp_path / "v2.json"))
    fails(r"If `do_train` is True, then `train_file` must be specified", train_file=None)
    fails(r"If `do_predict` is True, then `predict_file` must be specified", do_predict=True,
          predict_file=None)
    assert not (tmp_path / "out" / "train.tf_record").exists()


def test_output_dir_of_another_task_is_refused(tmp_path):
    """A classifier's checkpoint in --output_dir: not resumed as SQuAD's."""
    config = golden_config()
    output_dir = tmp_path / "out"
    Trainer(config, ClassificationTask("mrpc", ["0", "1"], MAX_SEQ_LENGTH),
            TrainerOptions(output_dir=str(output_dir))).save()
    with pytest.raises(TrainingError, match=r"holds checkpoints of another task .*mrpc"):
        run(config, squad_options(tmp_path), do_train=True)
    with pytest.raises(TrainingError, match=r"holds checkpoints of another task .*mrpc"):
        run(config, squad_options(tmp_path), do_predict=True)


@pytest.mark.slow  # a process start with TensorFlow
def test_script_prints_one_line_errors(tmp_path):
    proc = subprocess.run(
        [sys.executable, "run_squad.py", f"--vocab_file={golden_path('train', 'vocab.txt')}",
         f"--bert_config_file={golden_path('train', 'bert_config.json')}",
         f"--output_dir={tmp_path}/out", "--do_train", f"--train_file={SQUAD_FILE}",
         "--max_seq_length=32", "--doc_stride=40"],
        cwd=str(REPO), capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO)))
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("run_squad.py")]
    assert errors == ["run_squad.py: error: The max_seq_length (32) must be greater than "
                      "max_query_length (64) + 3"], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


# --- dynamic padding ------------------------------------------------------------------------------

def predict_lengths(task, tmp_path):
    """The sequence lengths of the prediction batches (of 4, in length order) a Trainer of
    `task` reads."""
    trainer = Trainer(golden_config(), task, options(tmp_path, padding_width=1))
    stream = trainer.input_stream([PREDICT], BATCH_SIZE, is_training=False,
                                  pad_final_batch=True, sort_by_length=True)
    count = -(-EXPECTED["counts"]["predict"]["features"] // BATCH_SIZE)
    return [stream.get_next()["input_ids"].shape[1] for _ in range(count)]


def test_training_batches_keep_max_seq_length_and_why(tmp_path, init_checkpoint):
    """SQuAD's loss is a softmax over every position, padding included (the original's): the
    logits at padded positions are not zero, so cutting a batch would change the loss. Its
    training batches are never cut; its prediction batches only with predict_dynamic_padding
    (the original's n-best ranks the padded positions too: the test below)."""
    trainer = Trainer(golden_config(), SquadTask(MAX_SEQ_LENGTH),
                      options(tmp_path, init_checkpoint=init_checkpoint, padding_width=1))
    stream = trainer.input_stream([TRAIN], BATCH_SIZE, is_training=True)
    assert [stream.get_next()["input_ids"].shape[1] for _ in range(9)] == [32] * 9
    assert set(predict_lengths(SquadTask(MAX_SEQ_LENGTH), tmp_path)) == {MAX_SEQ_LENGTH}
    assert min(predict_lengths(SquadTask(MAX_SEQ_LENGTH, predict_dynamic_padding=True),
                               tmp_path)) < MAX_SEQ_LENGTH
    features = read_features(TRAIN, is_training=True)
    short = np.flatnonzero(features["input_mask"].numpy().sum(axis=1) < MAX_SEQ_LENGTH)
    padded = {k: tf.gather(v, short) for k, v in features.items()}
    longest = int(tf.reduce_max(tf.reduce_sum(padded["input_mask"], axis=1)))
    assert len(short) >= 2 and longest < MAX_SEQ_LENGTH
    cut = {k: v[:, :longest] if v.shape.rank == 2 else v for k, v in padded.items()}
    trainer.restore()
    count = tf.constant([float(len(short))])
    losses = [trainer.task.compute_loss(trainer.model(f, training=False), f, count)
              for f in (padded, cut)]
    assert abs(float(losses[0]["total_loss"]) - float(losses[1]["total_loss"])) > 1e-3


def predict_runs(tmp_path, checkpoint, runs):
    """{name: output_dir} of run_squad's prediction (SQuAD 2.0, windows of max_seq_length
    64, so of varied lengths, batches of 3) with `checkpoint`, one per {name: overrides}."""
    v2_file = squad_v2(tmp_path / "squad_v2.json")
    out = {}
    for name, overrides in runs.items():
        out[name] = tmp_path / name
        run(golden_config(), squad_options(
            tmp_path, output_dir=str(out[name]), predict_file=v2_file,
            version_2_with_negative=True, init_checkpoint=str(checkpoint),
            max_seq_length=64, predict_batch_size=3, **overrides), do_predict=True)
    return out


def padding_in_n_best(model, record_file, max_seq_length, n_best_size=20):
    """[windows] how many padded positions each window of `record_file` has among its
    `n_best_size` highest start and end logits of `model` at max_seq_length (as the
    original's n-best ranks them)."""
    features = read_features(record_file, is_training=False, max_seq_length=max_seq_length)
    outputs = model(features, training=False)
    padded = features["input_mask"].numpy() == 0
    counts = 0
    for key in ("start_logits", "end_logits"):
        best = np.argsort(-outputs[key].numpy(), axis=1, kind="stable")[:, :n_best_size]
        counts = counts + np.take_along_axis(padded, best, axis=1).sum(axis=1)
    return counts


@pytest.mark.slow  # ~10 s: three predictions of the golden model
def test_default_prediction_is_the_originals_n_best_with_a_head_that_ranks_padding(
        tmp_path, init_checkpoint):
    """A fresh span head (random weights, the initializer's scale) ranks padded positions
    among a window's 20 best start and end logits. The default prediction (dynamic padding
    on) keeps them, as the original's n-best does: its three files equal, byte for byte,
    those of batches padded to max_seq_length (--dynamic_padding=false, whose logits are the
    original model_fn's: test_forward_matches_the_original; and write_predictions is the
    original's: test_squad_predictions.py). Cut batches (--predict_dynamic_padding) rank
    real positions in those slots and give other n-best lists."""
    model = SquadTask(64).build_model(golden_config())
    load_original_checkpoint(model, init_checkpoint)
    rng = np.random.default_rng(31)
    model.head.output_weights.assign(rng.normal(
        0.0, golden_config().initializer_range, model.head.output_weights.shape))
    checkpoint = save_original_checkpoint(model, tmp_path / "fresh_head" / "model.ckpt")
    out = predict_runs(tmp_path, checkpoint, {
        "padded": dict(dynamic_padding=False), "default": dict(padding_width=4),
        "cut": dict(padding_width=4, predict_dynamic_padding=True)})
    ranked = padding_in_n_best(model, str(out["padded"] / "eval.tf_record"), 64)
    assert (ranked > 0).sum() >= 2, ranked  # the head ranks padding: the test can fail
    for name in ("predictions.json", "nbest_predictions.json", "null_odds.json"):
        assert (out["default"] / name).read_bytes() == (out["padded"] / name).read_bytes(), name
    cut, padded = (json.loads((out[k] / "nbest_predictions.json").read_text())
                   for k in ("cut", "padded"))
    assert list(cut) == list(padded)
    differ = [q for q in padded if [e["text"] for e in cut[q]] != [e["text"] for e in padded[q]]]
    assert differ, "the cut run gave the padded run's n-best: the head ranks no padding"


@pytest.mark.slow
def test_predictions_in_length_order_equal_the_padded_run(tmp_path, init_checkpoint):
    """With the recording's head, whose n-best no padded position changes on these windows:
    predictions.json, nbest_predictions.json and null_odds.json with
    --predict_dynamic_padding (windows in length order, batches cut) equal those of windows
    padded to max_seq_length."""
    out = predict_runs(tmp_path, init_checkpoint, {
        "padded": dict(dynamic_padding=False),
        "cut": dict(padding_width=4, predict_dynamic_padding=True)})
    records = read_features(str(out["cut"] / "eval.tf_record"), is_training=False,
                            max_seq_length=64)
    lengths = records["input_mask"].numpy().sum(axis=1)
    assert len(set(lengths.tolist())) > 3 and lengths.min() < 56  # some batches are cut
    assert (out["cut"] / "predictions.json").read_text() == \
        (out["padded"] / "predictions.json").read_text()
    for name in ("nbest_predictions.json", "null_odds.json"):
        cut, padded = (json.loads((out[k] / name).read_text()) for k in ("cut", "padded"))
        assert list(cut) == list(padded)
        if name == "null_odds.json":
            np.testing.assert_allclose([cut[k] for k in cut], [padded[k] for k in padded],
                                       rtol=1e-6, atol=1e-6)
            continue
        for qas_id, entries in padded.items():
            assert [e["text"] for e in cut[qas_id]] == [e["text"] for e in entries], qas_id
            for key in ("probability", "start_logit", "end_logit"):
                np.testing.assert_allclose([e[key] for e in cut[qas_id]],
                                           [e[key] for e in entries], rtol=1e-6, atol=1e-6,
                                           err_msg=f"{qas_id} {key}")


# -- ALBERT: the SentencePiece model as --vocab_file ----------------------------------------------

@pytest.mark.slow  # ~40 s on 2 shared cores: trains 2.0 and predicts, then predicts twice
def test_albert_checkpoint_trains_and_predicts_the_same_padded_and_cut(tmp_path):
    """run_squad on an ALBERT checkpoint (Google's albert_config.json, model.ckpt-best) with
    its SentencePiece model, SQuAD 2.0 on contexts of accents, digits with commas and
    whitespace runs spanning several windows: trains from the encoder and predicts; every
    answer is a stretch of its context's characters; predictions.json, nbest_predictions.json
    and null_odds.json with batches padded to max_seq_length equal those of cut batches in
    length order."""
    from albert_fixtures import SPM_MODEL, squad_json, write_checkpoint, write_squad

    from bert_tf import families

    config_file, prefix = write_checkpoint(tmp_path / "albert_base")
    config = families.read_config(config_file)
    squad_file = write_squad(tmp_path / "squad.json", version_2=True)

    def squad_run(output_dir, **overrides):
        values = dict(vocab_file=SPM_MODEL, output_dir=str(tmp_path / output_dir),
                      init_checkpoint=prefix, train_file=squad_file, predict_file=squad_file,
                      version_2_with_negative=True, max_seq_length=40, doc_stride=8,
                      max_query_length=12, train_batch_size=4, predict_batch_size=5,
                      num_train_epochs=1.0, learning_rate=1e-3, save_checkpoints_steps=100,
                      iterations_per_loop=100)
        values.update(overrides)
        return SquadOptions(**values)

    out = run(config, squad_run("train"), do_train=True, do_predict=True)
    # 14 questions, batch 4, 1 epoch: int(14 / 4) = 3 steps.
    assert out["checkpoint"] == str(tmp_path / "train" / "model.ckpt-3")
    names = set(tf.train.load_checkpoint(out["checkpoint"]).get_variable_to_shape_map())
    assert {"bert/encoder/embedding_hidden_mapping_in/kernel/adam_v", "cls/squad/output_weights",
            "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/key/kernel"} <= names
    assert not [n for n in names if n.startswith("bert/pooler/") and "adam" in n]
    assert out["eval_results"]["total"] == 14
    contexts = {qa["id"]: paragraph["context"] for paragraph in squad_json(True)["data"][0][
        "paragraphs"] for qa in paragraph["qas"]}
    nbest = json.loads((tmp_path / "train" / "nbest_predictions.json").read_text())
    for qas_id, entries in nbest.items():
        for entry in entries:
            assert entry["text"] in contexts[qas_id] and entry["text"] == entry["text"].strip()
    outputs = {}
    for name, overrides in {"padded": dict(dynamic_padding=False),
                            "cut": dict(padding_width=4, predict_dynamic_padding=True)}.items():
        outputs[name] = tmp_path / name
        run(config, squad_run(name, init_checkpoint=out["checkpoint"], **overrides),
            do_predict=True)
    records = read_features(str(outputs["cut"] / "eval.tf_record"), is_training=False,
                            max_seq_length=40)
    lengths = records["input_mask"].numpy().sum(axis=1)
    assert len(set(lengths.tolist())) > 3 and lengths.min() < 36  # some batches are cut
    assert (outputs["cut"] / "predictions.json").read_text() == \
        (outputs["padded"] / "predictions.json").read_text()
    for name in ("nbest_predictions.json", "null_odds.json"):
        cut, padded = (json.loads((outputs[k] / name).read_text()) for k in ("cut", "padded"))
        assert list(cut) == list(padded)
        if name == "null_odds.json":
            np.testing.assert_allclose([cut[k] for k in cut], [padded[k] for k in padded],
                                       rtol=1e-6, atol=1e-6)
            continue
        for qas_id, entries in padded.items():
            assert [e["text"] for e in cut[qas_id]] == [e["text"] for e in entries], qas_id
            for key in ("probability", "start_logit", "end_logit"):
                np.testing.assert_allclose([e[key] for e in cut[qas_id]],
                                           [e[key] for e in entries], rtol=1e-6, atol=1e-6,
                                           err_msg=f"{qas_id} {key}")
