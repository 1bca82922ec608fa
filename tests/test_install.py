"""The wheel: built from the checkout, installed into a fresh virtualenv, every command runs as
`python -m bert_tf.<command>` from a directory outside the checkout.

The virtualenv is made with --system-site-packages, so TensorFlow and the other dependencies
come from this machine (nothing is downloaded), and the wheel goes in with --no-deps. The
checkout must not be what runs: PYTHONPATH is dropped from the commands' environment and their
working directory is outside it. An editable install of bert_tf in the system site-packages
(`pip install -e .`) puts its finder at the end of sys.meta_path, after the path finder that
finds the virtualenv's own copy first (the venv's site-packages precede the system's on
sys.path); `test_the_venv_imports_the_wheels_package` checks that this holds.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import tiny_config_dict

pytestmark = pytest.mark.slow  # a wheel build, a virtualenv, a dozen processes

REPO = Path(__file__).resolve().parents[1]

# A corpus of 32 words (with the 5 special tokens, the 37 of conftest.tiny_config_dict).
WORDS = ("the a cat dog sat ran on under mat log red blue big small old new one two three "
         "four and or but then it is was saw see ate fed hid").split()
VOCAB = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n"

# Every other command, with flags its --help must list.
HELP = {
    "create_pretraining_data": ("input_file", "dupe_factor"),
    "run_pretraining": ("input_file", "num_train_steps"),
    "run_classifier": ("task_name", "data_dir"),
    "run_squad": ("train_file", "doc_stride"),
    "run_tagging": ("data_dir", "tagging_dropout"),
    "extract_features": ("input_file", "layers"),
    "export": ("task", "checkpoint"),
    "predict": ("export_dir", "batch_size"),
    "hf": ("hf_dir", "checkpoint"),
    "vocab": ("input_file", "vocab_size"),
    "evaluation.squad_eval": ("na_prob_file", "out_file"),
    "electra.build_pretraining_dataset": ("corpus-dir", "vocab-file"),
    "electra.run_pretraining": ("data-dir", "model-name", "hparams"),
    "albert.run_pretraining": ("albert_config_file", "poly_power", "start_warmup_step",
                               r"\[no\]init_from_group0", "masked_lm_budget", "optimizer",
                               "keep_checkpoint_max"),
    "albert.export_checkpoints": ("albert_directory", "checkpoint_name", "export_path"),
    "albert.run_classifier": ("albert_config_file", "spm_model_file", "train_step",
                              "warmup_step", "cached_dir", "optimizer", "keep_checkpoint_max"),
    "albert.run_squad_v1": ("albert_config_file", "spm_model_file", "predict_feature_left_file",
                            "n_best_size", "keep_checkpoint_max"),
    "albert.run_squad_v2": ("spm_model_file", "predict_feature_left_file", "start_n_top",
                            "end_n_top", "dropout_prob", "keep_checkpoint_max"),
    "albert.run_race": ("spm_model_file", "max_qa_length", "train_step", "warmup_step",
                        r"\[no\]high_only", "num_keep_checkpoint", "keep_checkpoint_max"),
}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """(python of a fresh virtualenv holding the wheel, the wheel's path, a working directory
    outside the checkout). The wheel is built from a copy of the checkout (as a clone holds
    it), so the build leaves nothing in the checkout and no stale build/ reaches the wheel."""
    root = tmp_path_factory.mktemp("install")
    assert REPO not in root.parents
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".*", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", "venv", "demo_output",
        "_work"))
    wheels = root / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--quiet", str(source), "-w", str(wheels)], cwd=root)
    (wheel,) = wheels.glob("bert_tf-*.whl")
    # --without-pip: the machine's pip (a system site-package) installs into the venv.
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
         str(root / "venv")], cwd=root)
    python = str(root / "venv" / "bin" / "python")
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
         "--disable-pip-version-check", "--quiet", str(wheel)], cwd=root)
    work = root / "work"
    work.mkdir()
    return python, wheel, work


def command_env():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


def run(args, cwd, timeout=300, check=True):
    proc = subprocess.run(args, cwd=str(cwd), env=command_env(), capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


def test_the_wheel_holds_the_package_and_nothing_else(venv):
    _, wheel, _ = venv
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = re.compile(r"bert_tf-[^/]+\.dist-info/")
    assert all(n.startswith("bert_tf/") or dist_info.match(n) for n in names), names
    # every module of the package and its subpackages, no tests, benchmarks or scripts
    package = sorted(str(p.relative_to(REPO)) for p in (REPO / "bert_tf").rglob("*.py"))
    assert sorted(n for n in names if n.startswith("bert_tf/")) == package


def test_the_venv_imports_the_wheels_package(venv):
    python, _, work = venv
    out = run([python, "-c", "import bert_tf; print(bert_tf.__file__)"], cwd=work).stdout
    installed = Path(out.strip())
    assert Path(python).parents[1] in installed.parents, installed
    assert REPO not in installed.parents


def test_pretraining_data_then_pretraining_from_outside_the_checkout(venv):
    python, _, work = venv
    lines = []
    for doc in range(10):
        for sentence in range(6):
            n = 5 + (doc + sentence) % 4
            lines.append(" ".join(WORDS[(doc * 7 + sentence * 3 + i * 5) % len(WORDS)]
                                  for i in range(n)))
        lines.append("")
    (work / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "vocab.txt").write_text(VOCAB, encoding="utf-8")
    (work / "bert_config.json").write_text(json.dumps(tiny_config_dict()), encoding="utf-8")

    run([python, "-m", "bert_tf.create_pretraining_data", "--input_file=corpus.txt",
         "--output_file=records.tfrecord", "--vocab_file=vocab.txt", "--max_seq_length=16",
         "--max_predictions_per_seq=3", "--dupe_factor=2"], cwd=work)
    assert (work / "records.tfrecord").stat().st_size > 0

    proc = run([python, "-m", "bert_tf.run_pretraining", "--bert_config_file=bert_config.json",
                "--input_file=records.tfrecord", "--output_dir=model", "--do_train",
                "--do_eval", "--max_seq_length=16", "--max_predictions_per_seq=3",
                "--train_batch_size=4", "--eval_batch_size=4", "--num_train_steps=2",
                "--num_warmup_steps=1", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
                "--max_eval_steps=2", "--learning_rate=1e-3"], cwd=work)
    assert (work / "model" / "model.ckpt-2.index").exists(), proc.stderr[-3000:]
    results = (work / "model" / "eval_results.txt").read_text(encoding="utf-8")
    assert "global_step = 2" in results and "masked_lm_accuracy = " in results, results


def test_electras_data_builder_from_outside_the_checkout(venv):
    python, _, work = venv
    corpus = work / "electra_corpus"
    corpus.mkdir()
    (corpus / "part.txt").write_text(
        "\n\n".join(" ".join(WORDS[i:i + 12]) + "\n" + " ".join(WORDS[i + 3:i + 15])
                     for i in range(0, 16, 2)) + "\n", encoding="utf-8")
    (work / "electra_vocab.txt").write_text(VOCAB, encoding="utf-8")
    run([python, "-m", "bert_tf.electra.build_pretraining_dataset",
         "--corpus-dir=electra_corpus", "--vocab-file=electra_vocab.txt",
         "--output-dir=electra_records", "--max-seq-length=16"], cwd=work)
    assert list((work / "electra_records").glob("pretrain_data.tfrecord*"))


@pytest.mark.parametrize("command", sorted(HELP))
def test_every_command_prints_its_flags(venv, command):
    """absl's --help exits with 1 (its HelpFlag), argparse's with 0."""
    python, _, work = venv
    proc = run([python, "-m", f"bert_tf.{command}", "--help"], cwd=work, timeout=120,
               check=False)
    argparse = proc.stdout.startswith("usage: ")
    assert proc.returncode == (0 if argparse else 1), proc.stderr[-3000:]
    if not argparse:
        assert "Try --helpfull to get a list of all flags." in proc.stdout
    for flag in HELP[command]:
        assert re.search(rf"^\s+--{flag}\b", proc.stdout, re.M), (flag, proc.stdout)
