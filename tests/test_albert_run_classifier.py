"""`python -m bert_tf.albert.run_classifier` against google-research/albert's run_classifier.py
run unmodified (main() with stand-ins for the Estimator TF 2 lacks), recorded by
tests/data/albert_classifier/make_expected.py: on MRPC (AdamW) and STS-B (regression, LAMB, 2
warmup steps), 3 steps from the same checkpoint with a checkpoint after each, then --do_eval
(every checkpoint, best_trial.txt, the pruning, model.ckpt-best) and --do_predict
(test_results.tsv, submit_results.tsv): the records, the weights and Adam moments after the 3
steps, and every output file. The eval loop's bookkeeping on scripted results; bad flags and
files refused in one line."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert import classifier_task
from bert_tf.albert.classifier_task import (AlbertClassifierOptions, evaluate_checkpoints,
                                            run)
from bert_tf.albert.config import AlbertConfig
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.training import precision
from conftest import load_recorder
from rounding_bounds import RoundingErrorBounds, assert_within_bounds
from test_training_helpers import (REPO, assert_adam_steps_match, assert_steps_match, env,
                                   read_checkpoint)

DATA = Path(__file__).resolve().parent / "data" / "albert_classifier"
GLUE = DATA / "glue"
MODEL = DATA / "model"
SPM = Path(__file__).resolve().parent / "data" / "albert_spm" / "albert.model"
RECORDER = load_recorder("albert_classifier")
# Ours adds these to the original's eval results (documented in docs/albert.md).
ADDED_KEYS = {"eval_f1", "spearman"}


def expected(task):
    return json.loads((DATA / "runs" / task / "expected.json").read_text())


def init_checkpoint(tmp_path, task):
    return RECORDER.write_init_checkpoint(task, str(tmp_path / "init" / "model.ckpt"))


def command_flags(task, tmp_path):
    """The recorded run's flags, for our command (file order, no head dropout: see
    make_expected.py)."""
    flags = dict(expected(task)["flags"], data_dir=GLUE, spm_model_file=SPM,
                 albert_config_file=MODEL / "albert_config.json",
                 init_checkpoint=init_checkpoint(tmp_path, task),
                 output_dir=tmp_path / "output", shuffle_buffer_size=0, classifier_dropout=0)
    return [f"--{k}={v}" for k, v in flags.items()] + ["--do_train", "--do_eval", "--do_predict"]


def run_in_process(task, tmp_path, steps):
    """The same run as the command's, through classifier_task.run; appends each step's values
    to `steps`."""
    flags = expected(task)["flags"]
    options = AlbertClassifierOptions(
        data_dir=str(GLUE), task_name=flags["task_name"], spm_model_file=str(SPM),
        output_dir=str(tmp_path / "output"), init_checkpoint=init_checkpoint(tmp_path, task),
        max_seq_length=flags["max_seq_length"], train_batch_size=flags["train_batch_size"],
        eval_batch_size=flags["eval_batch_size"],
        predict_batch_size=flags["predict_batch_size"], learning_rate=flags["learning_rate"],
        num_train_steps=flags["train_step"], num_warmup_steps=flags["warmup_step"],
        save_checkpoints_steps=flags["save_checkpoints_steps"], optimizer=flags["optimizer"],
        shuffle_buffer_size=0, classifier_dropout=0.0)
    config = AlbertConfig.from_json_file(MODEL / "albert_config.json")
    return run(config, options, do_train=True, do_eval=True, do_predict=True,
               step_callback=lambda step, values: steps.append((step, values)))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{task: (output_dir, per-step values or None)}: MRPC through the command line, STS-B
    through classifier_task.run (each run once for the module)."""
    done = {}

    def get(task):
        if task not in done:
            tmp_path = tmp_path_factory.mktemp(task)
            if task == "mrpc":
                proc = subprocess.run(
                    [sys.executable, "-m", "bert_tf.albert.run_classifier",
                     *command_flags(task, tmp_path)],
                    capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=900)
                assert proc.returncode == 0, proc.stderr[-4000:]
                done[task] = tmp_path / "output", None
            else:
                steps = []
                run_in_process(task, tmp_path, steps)
                done[task] = tmp_path / "output", steps
        return done[task]

    return get


def parse_eval_results(text):
    """eval_results.txt as a list of blocks, each {key: str value} (a value may span lines:
    numpy's printing of an array)."""
    blocks, block, key = [], {}, None
    for line in text.splitlines():
        if line == "=" * 50:
            blocks.append(block)
            block, key = {}, None
        elif " = " in line and not line.startswith(" "):
            key, value = line.split(" = ", 1)
            block[key] = value
        else:
            block[key] += " " + line.strip()
    assert not block, "a block without its separator"
    return blocks


def values_of(text):
    return np.array([float(x) for x in text.strip("[]").split()], np.float64)


def assert_values_close(ours, original, what):
    ours, original = values_of(ours), values_of(original)
    assert ours.shape == original.shape, what
    np.testing.assert_allclose(ours, original, rtol=1e-5, atol=1e-6, err_msg=what)


def read_records(path):
    """Each record's features as {name: (kind, values)}."""
    out = []
    for raw in tf.data.TFRecordDataset(str(path)):
        features = tf.train.Example.FromString(raw.numpy()).features.feature
        out.append({name: (f.WhichOneof("kind"), list(getattr(f, f.WhichOneof("kind")).value))
                    for name, f in features.items()})
    return out


def key_of(task):
    return classifier_task.best_key(task)


def pearson_tolerance(ours, original):
    """How far our Pearson correlation may be from the original's, given the two prediction
    vectors (eval_results' `pred`): r is the cosine of the centered predictions p and scores;
    the unit vector p/|p| moves by at most 2|dp|/|p| when p moves by dp, and r with it. Nearly
    constant predictions (|p| small) make r ill-conditioned; the float32 rounding of r adds
    its own part."""
    ours, original = values_of(ours), values_of(original)
    centered = original - original.mean()
    delta = (ours - original) - (ours - original).mean()
    return 2 * np.linalg.norm(delta) / np.linalg.norm(centered) + 1e-6


def key_biases(names):
    # Their gradient is 0 in real arithmetic (softmax ignores a constant added to a query's
    # scores), so Adam turns rounding noise into their moves.
    return {n for n in names if "/key/bias" in n}


@pytest.mark.slow  # a command run: 3 steps, 4 evals, a prediction of a tiny model
@pytest.mark.parametrize("task", ["mrpc", "sts-b"])
def test_three_steps_match_the_original(task, outputs):
    output_dir, steps = outputs(task)
    want = expected(task)
    if steps is not None:
        assert_steps_match(steps, want["steps"])
    ours = read_checkpoint(output_dir / "model.ckpt-3")
    original = dict(np.load(DATA / "runs" / task / "after_3_steps.npz"))
    assert sorted(ours) == sorted(original)
    assert int(ours["global_step"]) == int(original["global_step"]) == 3
    assert_adam_steps_match(ours, original, read_checkpoint(output_dir / "model.ckpt-0"),
                            want["steps"], key_biases(original), v_as_gradients=True)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["mrpc", "sts-b"])
def test_eval_and_predict_outputs_match_the_original(task, outputs):
    output_dir, _ = outputs(task)
    recorded = DATA / "runs" / task
    ours = parse_eval_results((output_dir / "eval_results.txt").read_text())
    original = parse_eval_results((recorded / "eval_results.txt").read_text())
    assert len(ours) == len(original) == 4  # model.ckpt-0 (training's start) to -3
    # The tolerance of each checkpoint's best-metric value (see pearson_tolerance).
    tolerance = {}
    for block, want in zip(ours, original):
        assert set(block) - set(want) == (ADDED_KEYS & set(block))
        assert set(want) <= set(block)
        step = want["global_step"]
        tolerance[step] = (pearson_tolerance(block["pred"], want["pred"]) if task == "sts-b"
                           else 0.0)
        for key, value in want.items():
            if key == "global_step":
                assert block[key] == value
            elif key == "pearson":
                assert abs(float(block[key]) - float(value)) <= tolerance[step], step
            elif key != "best":
                assert_values_close(block[key], value, f"{key} of step {step}")
    step, best_step, best = (recorded / "best_trial.txt").read_text().split(":")
    our_step, our_best_step, our_best = (output_dir / "best_trial.txt").read_text().split(":")
    assert (our_step, our_best_step) == (step, best_step)
    assert abs(float(our_best) - float(best)) <= tolerance[best_step]
    # Each block's `best` is the best value before it (-1 before the first): the value of
    # the best step so far, by the original's strict ">".
    best_step_so_far, best_value = None, -1.0
    for block, want in zip(ours, original):
        if best_step_so_far is None:
            assert block["best"] == want["best"] == "-1"
        else:
            assert abs(float(block["best"]) - float(want["best"])) <= tolerance[best_step_so_far]
        if float(want[key_of(task)]) > best_value:
            best_step_so_far, best_value = want["global_step"], float(want[key_of(task)])

    rows = [line.split("\t") for line in (output_dir / "test_results.tsv").read_text().splitlines()]
    want = [line.split("\t") for line in (recorded / "test_results.tsv").read_text().splitlines()]
    np.testing.assert_allclose(np.array(rows, float), np.array(want, float), rtol=1e-5, atol=1e-6)
    ours = (output_dir / "submit_results.tsv").read_text().splitlines()
    want = (recorded / "submit_results.tsv").read_text().splitlines()
    assert ours[0] == want[0] == "index\tprediction"
    assert [r.split("\t")[0] for r in ours] == [r.split("\t")[0] for r in want]
    if task == "sts-b":
        assert_values_close(" ".join(r.split("\t")[1] for r in ours[1:]),
                            " ".join(r.split("\t")[1] for r in want[1:]), "predictions")
    else:
        assert ours == want


@pytest.mark.slow
@pytest.mark.parametrize("task", ["mrpc", "sts-b"])
def test_files_left_and_records_match_the_original(task, outputs):
    """The checkpoints the eval removes are the original's; the best is copied (the original
    moves it); the cached records are the original's."""
    output_dir, _ = outputs(task)
    original = expected(task)["files"]
    best_step = int((output_dir / "best_trial.txt").read_text().split(":")[1])

    def steps(names):
        found = (re.match(r"model\.ckpt-(\w+)\.index$", n) for n in names)
        return sorted({m.group(1) for m in found if m})

    ours = os.listdir(output_dir)
    assert steps(ours) == sorted(steps(original) + [str(best_step)])
    best, source = read_checkpoint(output_dir / "model.ckpt-best"), read_checkpoint(
        output_dir / f"model.ckpt-{best_step}")
    assert sorted(best) == sorted(source)
    for name in best:
        np.testing.assert_array_equal(best[name], source[name])
    name = expected(task)["flags"]["task_name"].lower()
    for ours_file, split in ((f"{name}_train.tf_record", "train"),
                             (f"{name}_eval.tf_record", "dev"), ("predict.tf_record", "test")):
        assert ours_file in original
        assert read_records(output_dir / ours_file) == read_records(
            DATA / "records" / f"{name}_{split}.tf_record"), ours_file


class ScriptedTrainer:
    """What evaluate_checkpoints uses of a trainer, with the scripted results of the recorded
    eval loop (runs/loop) by the loaded checkpoint's step."""

    def __init__(self, results):
        self.results = results
        self.model = None
        self.is_chief = True
        self.global_step = tf.Variable(0, dtype=tf.int64)
        self.evaluated = []

    def evaluate(self, input_files, pad_final_batch, results_file):
        assert pad_final_batch and results_file is None
        step = int(self.global_step.numpy())
        self.evaluated.append(step)
        accuracy, loss = self.results[str(step)]
        return {"eval_accuracy": np.float32(accuracy), "eval_loss": np.float32(loss),
                "loss": np.float32(loss), "global_step": step}


class ScriptedTask:
    task_name = "mrpc"


@pytest.fixture
def scripted_loop(tmp_path, monkeypatch):
    """(output_dir, trainer, write(step)): checkpoint files without content, listed in the
    state file as our trainer lists them, loaded as checkpoints of their step."""
    from bert_tf import checkpoints

    recorded = json.loads((DATA / "runs" / "loop" / "expected.json").read_text())
    trainer = ScriptedTrainer(recorded["results"])
    monkeypatch.setattr(checkpoints, "load_original_checkpoint",
                        lambda model, prefix: type("Report", (), {"global_step": int(
                            prefix.rsplit("-", 1)[1])}))

    def write(step):
        prefix = tmp_path / f"model.ckpt-{step}"
        for ext in ("index", "data-00000-of-00001", "input-0-of-1.index"):
            Path(f"{prefix}.{ext}").write_text(f"{step}.{ext}")
        listed = sorted(classifier_task.numbered_checkpoints(str(tmp_path)).items())
        checkpoints.write_checkpoint_state(str(tmp_path), str(prefix), [p for _, p in listed])

    return tmp_path, trainer, write, recorded


def test_the_eval_loop_keeps_removes_and_writes_as_the_original(scripted_loop):
    """On the recorded loop's scripted results: the same eval_results.txt and best_trial.txt,
    byte for byte, and the same checkpoints removed; the best is copied to model.ckpt-best
    (the original moves it), and the state file lists what is left."""
    from bert_tf import checkpoints

    output_dir, trainer, write, recorded = scripted_loop
    for step in range(6):
        write(step)
    evaluate_checkpoints(trainer, ScriptedTask(), "eval.tf_record", str(output_dir), 5)
    assert trainer.evaluated == [0, 1, 2, 3, 4, 5]
    for name in ("eval_results.txt", "best_trial.txt"):
        assert (output_dir / name).read_text() == (DATA / "runs" / "loop" / name).read_text()
    kept = {n.split(".")[1].split("-")[1] for n in recorded["files"]}
    assert sorted(classifier_task.numbered_checkpoints(str(output_dir))) == sorted(
        int(s) for s in kept - {"best"} | {"3"})
    assert (output_dir / "model.ckpt-best.index").read_text() == "3.index"
    assert (output_dir / "model.ckpt-best.data-00000-of-00001").read_text() == (
        "3.data-00000-of-00001")
    assert not list(output_dir.glob("model.ckpt-2.*"))  # the input position went with it
    assert [os.path.basename(p) for p in checkpoints.checkpoint_prefixes(str(output_dir))] == [
        "model.ckpt-0", "model.ckpt-1", "model.ckpt-3", "model.ckpt-4", "model.ckpt-5"]


def test_a_second_eval_continues_from_best_trial(scripted_loop):
    """Ours goes on where the original fails (its candidate count reads int("best") of
    model.ckpt-best.index): after two more checkpoints, the earlier ones that are not the best
    and have two newer ones are removed, only the new ones are evaluated, eval_results.txt
    holds this run's blocks, and a better checkpoint replaces model.ckpt-best."""
    output_dir, trainer, write, recorded = scripted_loop
    for step in range(6):
        write(step)
    evaluate_checkpoints(trainer, ScriptedTask(), "eval.tf_record", str(output_dir), 5)
    trainer.results.update({"6": (0.8, 0.5), "7": (0.75, 0.55)})
    write(6)
    write(7)
    trainer.evaluated.clear()
    evaluate_checkpoints(trainer, ScriptedTask(), "eval.tf_record", str(output_dir), 7)
    assert trainer.evaluated == [6, 7]
    assert sorted(classifier_task.numbered_checkpoints(str(output_dir))) == [3, 6, 7]
    assert (output_dir / "best_trial.txt").read_text() == "7:6:0.800000011920929"
    blocks = parse_eval_results((output_dir / "eval_results.txt").read_text())
    assert [(b["global_step"], b["best"]) for b in blocks] == [("6", "0.699999988079071"),
                                                               ("7", "0.800000011920929")]
    assert (output_dir / "model.ckpt-best.index").read_text() == "6.index"
    # A third run finds nothing new: the files stay as they are.
    text = (output_dir / "eval_results.txt").read_text()
    trainer.evaluated.clear()
    evaluate_checkpoints(trainer, ScriptedTask(), "eval.tf_record", str(output_dir), 7)
    assert trainer.evaluated == [] and (output_dir / "eval_results.txt").read_text() == text


def record_options(tmp_path, **overrides):
    values = dict(data_dir=str(GLUE), task_name="mrpc", spm_model_file=str(SPM),
                  output_dir=str(tmp_path / "output"), max_seq_length=32)
    values.update(overrides)
    return AlbertClassifierOptions(**values)


def test_cached_records_are_reused_as_the_original_and_checked(tmp_path):
    """--cached_dir: a record file without our sidecar (e.g. the original's) is reused as the
    original reuses it, after its first record parses with this run's features; ours are
    reused while made from the same files and flags, else rewritten."""
    from bert_tf.albert import classifier_data
    from bert_tf.albert.tokenization import FullTokenizer
    from bert_tf.data.classifier import ClassifierDataError

    processor = classifier_data.get_processor("mrpc")
    examples = processor.get_train_examples(str(GLUE))
    tokenizer = FullTokenizer(None, True, spm_model_file=str(SPM))
    task = classifier_task.AlbertClassificationTask("mrpc", processor.get_labels(), 32)
    source = processor.input_file(str(GLUE), "train")
    path = tmp_path / "mrpc_train.tf_record"

    def make(options):
        return classifier_task.records(str(path), examples, processor.get_labels(), options,
                                       tokenizer, source, task)

    path.write_bytes((DATA / "records" / "sts-b_train.tf_record").read_bytes())
    with pytest.raises(ClassifierDataError, match=r"mrpc_train.tf_record: its records are not "
                       r"this run's \(max_seq_length 32, int label_ids\)"):
        make(record_options(tmp_path))
    original = (DATA / "records" / "mrpc_train.tf_record").read_bytes()
    path.write_bytes(original)
    make(record_options(tmp_path))
    assert path.read_bytes() == original and not Path(f"{path}.meta.json").exists()
    path.unlink()
    make(record_options(tmp_path))
    written = path.stat().st_mtime_ns
    make(record_options(tmp_path))
    assert path.stat().st_mtime_ns == written
    make(record_options(tmp_path, max_seq_length=24))
    assert json.loads(Path(f"{path}.meta.json").read_text())["meta"]["max_seq_length"] == 24
    assert len(read_records(path)[0]["input_ids"][1]) == 24


def run_command(tmp_path, *extra, data_dir=GLUE, task="mrpc"):
    flags = [f"--data_dir={data_dir}", f"--task_name={task}", f"--spm_model_file={SPM}",
             f"--albert_config_file={MODEL / 'albert_config.json'}",
             f"--output_dir={tmp_path / 'output'}", "--max_seq_length=32", "--train_step=2",
             "--train_batch_size=4", *extra]
    return subprocess.run([sys.executable, "-m", "bert_tf.albert.run_classifier", *flags],
                          capture_output=True, text=True, env=env(), cwd=str(REPO), timeout=600)


def assert_one_line(proc, message):
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if re.search(message, line)]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # two prediction runs of a tiny model and a traced bound
def test_predict_precision_bfloat16_within_rounding_bound_of_float32(outputs, tmp_path):
    """--predict_precision=bfloat16 (the trainer's prediction model, as BERT's
    run_classifier.py; tests/test_predict_precision.py): model.ckpt-best's test_results.tsv
    within the bound derived from bfloat16's rounding of the float32 run's (the sensitivities
    of the same checkpoint under mixed_bfloat16, whose arithmetic is the bfloat16 model's op
    for op, plus the embedding tables' roundings: tests/rounding_bounds.py)."""
    output_dir, _ = outputs("mrpc")
    flags = expected("mrpc")["flags"]
    config = AlbertConfig.from_json_file(MODEL / "albert_config.json")
    results = {}
    for name in ("float32", "bfloat16"):
        copy = tmp_path / name  # the fixture's outputs stay as the other tests read them
        shutil.copytree(output_dir, copy)
        options = AlbertClassifierOptions(
            data_dir=str(GLUE), task_name="mrpc", spm_model_file=str(SPM), output_dir=str(copy),
            max_seq_length=flags["max_seq_length"],
            predict_batch_size=flags["predict_batch_size"], shuffle_buffer_size=0,
            classifier_dropout=0.0, predict_precision=name)
        out = run(config, options, do_predict=True)
        results[name] = np.loadtxt(out["test_results"], ndmin=2)
    assert results["float32"].shape == results["bfloat16"].shape
    assert np.any(results["bfloat16"] != results["float32"]), "bfloat16 equals float32"

    task = classifier_task.AlbertClassificationTask("mrpc", ["0", "1"],
                                                    flags["max_seq_length"], dropout_rate=0.0)
    with precision.dtype_policy("bf16"):
        mixed = task.build_model(config)
    load_original_checkpoint(mixed, str(tmp_path / "bfloat16" / "model.ckpt-best"))
    length = flags["max_seq_length"]
    spec = {k: tf.io.FixedLenFeature([length], tf.int64)
            for k in ("input_ids", "input_mask", "segment_ids")}
    rows = [tf.io.parse_single_example(r, spec)
            for r in tf.data.TFRecordDataset(str(tmp_path / "bfloat16" / "predict.tf_record"))]
    features = {k: tf.cast(tf.stack([r[k] for r in rows]), tf.int32) for k in spec}
    # The embedding tables, stored bfloat16 by the prediction model, are read in float32 by
    # the mixed stand-in: their roundings are counted as weights stored rounded.
    bound = RoundingErrorBounds(lambda x: mixed(x, training=False), "bfloat16",
                                mixed.bert.embeddings.tables)(
        features, ("probabilities",))["probabilities"]
    assert_within_bounds(results["bfloat16"], results["float32"], bound,
                         "ALBERT run_classifier --predict_precision=bfloat16")


@pytest.mark.parametrize("extra, message", [
    (["--do_train", "--train_steps=3"], r"Unknown command line flag 'train_steps'"),
    (["--do_train", "--albert_hub_module_handle=https://tfhub.dev/google/albert_base/1"],
     r"^run_classifier.py: error: --albert_hub_module_handle: TF-Hub modules are not supported"),
    (["--do_train", "--export_dir=/tmp/x"],
     r"^run_classifier.py: error: --export_dir: not supported here"),
    (["--do_predict", "--predict_precision=int8"],
     r"^run_classifier.py: error: --predict_precision='int8': expected one of float32, "
     r"bfloat16, auto$"),
])
def test_flags_refused_by_name(tmp_path, extra, message):
    assert_one_line(run_command(tmp_path, *extra), message)
    assert not (tmp_path / "output").exists()


@pytest.mark.slow  # each imports TensorFlow
@pytest.mark.parametrize("case", ["missing_dev", "bad_label", "too_long"])
def test_bad_input_refused_in_one_line_before_training(tmp_path, case):
    glue = tmp_path / "glue"
    (glue / "MRPC").mkdir(parents=True)
    train = (GLUE / "MRPC" / "train.tsv").read_text(encoding="utf-8")
    extra = ["--do_train", "--do_eval"]
    if case == "missing_dev":
        (glue / "MRPC" / "train.tsv").write_text(train, encoding="utf-8")
        message = r"^run_classifier.py: error: .*MRPC/dev.tsv: no such file \(task 'mrpc'"
    else:
        (glue / "MRPC" / "dev.tsv").write_text(train, encoding="utf-8")
        lines = train.splitlines()
        lines[2] = "2" + lines[2][1:]
        (glue / "MRPC" / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        message = r"^run_classifier.py: error: .*MRPC/train.tsv line 3: label '2' is not one"
    if case == "too_long":
        extra.append("--max_seq_length=64")
        message = (r"^run_classifier.py: error: Cannot use sequence length 64 because the "
                   r"ALBERT model was only trained up to sequence length 32")
    proc = run_command(tmp_path, *extra, data_dir=glue)
    assert_one_line(proc, message)
    assert not list((tmp_path / "output").glob("model.ckpt*"))
