"""bert_tf/flags.py: the shared trainer flags reach TrainerOptions (in a subprocess: absl's
global FLAGS must not leak into other tests)."""

import json
import subprocess
import sys

import pytest
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
