"""bert_tf/flags.py: the shared trainer flags reach TrainerOptions (in a subprocess: absl's
global FLAGS must not leak into other tests)."""

import dataclasses
import json
import subprocess
import sys

import pytest
from absl import flags

from bert_tf import flags as shared_flags
from test_training_helpers import REPO, env

SNIPPET = r"""
import json, sys
from absl import flags
from bert_tf import flags as shared_flags
shared_flags.define_fine_tuning_flags()
shared_flags.define_trainer_flags()
flags.DEFINE_integer("train_batch_size", 32, "")
FLAGS = flags.FLAGS
FLAGS(sys.argv)
kwargs = shared_flags.trainer_kwargs(FLAGS, None)
print(json.dumps({k: kwargs[k] for k in ("dynamic_padding", "padding_width", "group_by_length")}))
"""


def trainer_flags(*argv):
    out = subprocess.run([sys.executable, "-c", SNIPPET, *argv], capture_output=True,
                         text=True, env=env(), cwd=str(REPO), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two processes that import TensorFlow
def test_padding_flags_default_and_reach_the_trainer_options():
    assert trainer_flags() == {"dynamic_padding": True, "padding_width": 16,
                               "group_by_length": False}
    assert trainer_flags("--nodynamic_padding", "--padding_width=64", "--group_by_length") == {
        "dynamic_padding": False, "padding_width": 64, "group_by_length": True}


@dataclasses.dataclass(frozen=True)
class _Options:
    input_file: str
    max_seq_length: int = 128
    masked_lm_prob: float = 0.15
    progress_seconds: float = 5.0  # no flag of that name: keeps its default


def test_options_from_flags_takes_same_named_flags():
    # Its own FlagValues, so absl's global FLAGS stay untouched.
    values = flags.FlagValues()
    flags.DEFINE_string("input_file", None, "", flag_values=values)
    flags.DEFINE_integer("max_seq_length", 512, "", flag_values=values)
    flags.DEFINE_float("masked_lm_prob", 0.15, "", flag_values=values)
    flags.DEFINE_integer("dupe_factor", 10, "", flag_values=values)  # not a field: ignored
    values(["prog", "--input_file=a.txt", "--masked_lm_prob=0.2"])
    assert shared_flags.options_from_flags(_Options, values) == _Options(
        input_file="a.txt", max_seq_length=512, masked_lm_prob=0.2, progress_seconds=5.0)
    assert shared_flags.options_from_flags(
        _Options, values, max_seq_length=64, progress_seconds=0.5) == _Options(
            input_file="a.txt", max_seq_length=64, masked_lm_prob=0.2, progress_seconds=0.5)
    with pytest.raises(TypeError, match="input_file"):  # a required field no flag fills
        shared_flags.options_from_flags(_Options, flags.FlagValues())
