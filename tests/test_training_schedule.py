"""The learning-rate schedule against google-research/albert's `create_optimizer`, recorded by
tests/data/albert_optimizer/make_expected.py: poly_power and start_warmup_step (before the
start step the original's warmup rate is negative, and so is ours)."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.schedule import WarmupLinearDecay

RECORDED = json.loads(
    (Path(__file__).resolve().parent / "data" / "albert_optimizer" / "schedule.json").read_text())
UNIT_ROUNDOFF = 2.0 ** -24


def pow_tolerance(args, steps):
    """Relative bound of the rounding of the decay factor (1 - f) ** power: the original's graph
    computes the power (even power 1) as exp(power * log(1 - f)), whose log rounds by
    ~u * |power * log(1 - f)| after the exp and whose exp and log approximations add a few ulps;
    8 u per term for those few ulps and the products around them."""
    n = args["num_train_steps"]
    remaining = 1.0 - np.minimum(steps, n) / n
    with np.errstate(divide="ignore"):
        log_term = np.abs(args["poly_power"] * np.log(np.where(remaining > 0, remaining, 1.0)))
    return 8 * UNIT_ROUNDOFF * (1.0 + log_term)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_albert_schedule_matches_the_originals(name):
    args = RECORDED[name]["args"]
    schedule = WarmupLinearDecay(args["init_lr"], args["num_train_steps"],
                                 args["num_warmup_steps"], power=args["poly_power"],
                                 start_warmup_step=args["start_warmup_step"])
    want = np.asarray(RECORDED[name]["learning_rates"], np.float32)
    steps = np.arange(len(want))
    traced = tf.function(schedule)  # as the trainer calls it
    got = np.asarray([traced(tf.constant(step, tf.int64)).numpy() for step in steps])
    bound = pow_tolerance(args, steps) * np.abs(want)
    assert np.all(np.abs(got - want) <= bound), (name, got - want, bound)
    if args["start_warmup_step"] and args["num_warmup_steps"]:
        assert want[0] < 0  # the original's rate before the start step


def test_start_warmup_step_is_not_an_option_of_electras_schedule():
    with pytest.raises(ValueError, match="start_warmup_step"):
        WarmupLinearDecay(1e-3, 10, 2, warmup_multiplies=True, start_warmup_step=1)
