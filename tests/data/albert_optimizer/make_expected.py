"""Records what google-research/albert's optimizers and learning-rate schedule compute
(tests/test_training_lamb.py, tests/test_training_schedule.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_optimizer/make_expected.py --original_repo=/tmp/orig_albert

Its `optimization.py` (and the `lamb_optimizer.py` it imports) is loaded unmodified through
`tools.original.load_albert_module` and run in a TF1 graph:

  - `lamb_optimizer.LAMBOptimizer` and `optimization.AdamWeightDecayOptimizer`, built as
    `create_optimizer` builds them (weight_decay_rate 0.01, betas 0.9 / 0.999, epsilon 1e-6,
    exclusions LayerNorm, layer_norm, bias), each apply 3 steps of fed gradients and learning
    rates to the variables of VARIABLES: original ALBERT names that hit each exclusion, one
    that starts at zero (trust ratio 1 at step 1) and one whose gradient is always zero (its
    update is the weight decay alone: trust ratio 1 / 0.01);
  - `create_optimizer`'s learning rate (captured from the optimizer it constructs) at
    global steps 0..SCHEDULE_STEPS for each schedule of SCHEDULES (poly_power,
    start_warmup_step, num_warmup_steps).

Output optimizer.json: the initial values and per step the gradients and learning rate;
for "lamb" and "adamw" every variable of the graph after each step (weights and their
`<name>/adam_m`, `<name>/adam_v` slots); and schedule.json: per schedule its arguments and
the learning rates.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tools.original import load_albert_module  # noqa: E402

v1 = tf.compat.v1

# name -> (shape, scale of its gradient; 0: the gradient is always zero)
VARIABLES = {
    "bert/embeddings/word_embeddings": ((6, 4), 1e-2),
    "bert/encoder/embedding_hidden_mapping_in/kernel": ((4, 5), 1e-1),
    "bert/encoder/embedding_hidden_mapping_in/bias": ((5,), 1e-3),
    "bert/encoder/transformer/group_0/inner_group_0/LayerNorm/gamma": ((5,), 1e-2),
    "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel":
        ((3, 5), 1e-1),
    "cls/predictions/output_bias": ((6,), 1e-1),
    "cls/seq_relationship/output_weights": ((2, 5), 0.0),
    "other/layer_norm/beta": ((5,), 1e-2),
}
ZERO_AT_START = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel"
LEARNING_RATES = (1e-3, 2e-3, 1.5e-3)
SEED = 28

SCHEDULE_STEPS = 24
SCHEDULES = {
    "linear": dict(init_lr=0.00176, num_train_steps=20, num_warmup_steps=5, poly_power=1.0,
                   start_warmup_step=0),
    "power_2_start_3": dict(init_lr=0.00176, num_train_steps=20, num_warmup_steps=5,
                            poly_power=2.0, start_warmup_step=3),
    "power_half_start_8": dict(init_lr=1e-3, num_train_steps=17, num_warmup_steps=4,
                               poly_power=0.5, start_warmup_step=8),
    "no_warmup_power_3": dict(init_lr=1e-3, num_train_steps=16, num_warmup_steps=0,
                              poly_power=3.0, start_warmup_step=2),
}


def make_inputs(rng):
    init, grads = {}, [{} for _ in LEARNING_RATES]
    for name, (shape, scale) in VARIABLES.items():
        value = rng.normal(size=shape)
        if name.endswith(("gamma",)):
            value = 1.0 + 0.1 * value
        if name == ZERO_AT_START:
            value = np.zeros(shape)
        init[name] = value.astype(np.float32)
        for step in grads:
            step[name] = (scale * rng.normal(size=shape)).astype(np.float32)
    return init, grads


def run_optimizer(optimization, kind, init, grads):
    graph = tf.Graph()
    with graph.as_default():
        variables = {name: v1.get_variable(name, initializer=tf.constant(value))
                     for name, value in init.items()}
        fed = {name: v1.placeholder(tf.float32, value.shape) for name, value in init.items()}
        lr = v1.placeholder(tf.float32, [])
        kwargs = dict(learning_rate=lr, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
                      epsilon=1e-6, exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
        if kind == "lamb":
            optimizer = optimization.lamb_optimizer.LAMBOptimizer(**kwargs)
        else:
            optimizer = optimization.AdamWeightDecayOptimizer(**kwargs)
        train_op = optimizer.apply_gradients([(fed[n], variables[n]) for n in init])
        everything = {v.op.name: v for v in v1.global_variables()}
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            states = []
            for step_grads, rate in zip(grads, LEARNING_RATES):
                feed = {fed[n]: g for n, g in step_grads.items()}
                feed[lr] = rate
                session.run(train_op, feed)
                states.append({k: v.tolist() for k, v in session.run(everything).items()})
    return states


def record_schedule(optimization, args):
    captured = {}
    cls = optimization.lamb_optimizer.LAMBOptimizer
    original_init = cls.__init__

    def recording_init(optimizer, learning_rate, **kwargs):
        captured["learning_rate"] = learning_rate
        original_init(optimizer, learning_rate, **kwargs)

    graph = tf.Graph()
    with graph.as_default():
        weight = v1.get_variable("w", initializer=tf.constant([1.0, 2.0]))
        cls.__init__ = recording_init
        try:
            optimization.create_optimizer(
                tf.reduce_sum(weight), args["init_lr"], args["num_train_steps"],
                args["num_warmup_steps"], use_tpu=False, optimizer="lamb",
                poly_power=args["poly_power"], start_warmup_step=args["start_warmup_step"])
        finally:
            cls.__init__ = original_init
        global_step = v1.train.get_global_step()
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            rates = []
            for step in range(SCHEDULE_STEPS + 1):
                global_step.load(step, session)
                rates.append(float(session.run(captured["learning_rate"])))
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    optimization = load_albert_module(args.original_repo, "optimization")
    init, grads = make_inputs(np.random.RandomState(SEED))
    recorded = {
        "init": {k: v.tolist() for k, v in init.items()},
        "steps": [{"learning_rate": rate, "grads": {k: v.tolist() for k, v in g.items()}}
                  for rate, g in zip(LEARNING_RATES, grads)],
    }
    for kind in ("lamb", "adamw"):
        recorded[kind] = run_optimizer(optimization, kind, init, grads)
    with open(os.path.join(HERE, "optimizer.json"), "w") as f:
        json.dump(recorded, f, indent=1)
        f.write("\n")
    schedules = {name: dict(args=schedule, learning_rates=record_schedule(optimization, schedule))
                 for name, schedule in SCHEDULES.items()}
    with open(os.path.join(HERE, "schedule.json"), "w") as f:
        json.dump(schedules, f, indent=1)
        f.write("\n")
    print("recorded", sorted(recorded["lamb"][-1]), {k: v["learning_rates"][:6]
                                                      for k, v in schedules.items()})


if __name__ == "__main__":
    main()
