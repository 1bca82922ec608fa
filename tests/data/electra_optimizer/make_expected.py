"""Records 3 steps of the ORIGINAL ELECTRA optimizer with layer-wise learning-rate decay.

    git clone <google-research/electra> /tmp/electra
    python3 tests/data/electra_optimizer/make_expected.py --original_repo=/tmp/electra

Imports the original's model/optimization.py unmodified and runs, in a TF1 graph: variables
named as ELECTRA's fine-tuning model names them (embeddings, embeddings_project, 2 layers,
a task_specific head), learning rates from its `_get_layer_lrs(lr, 0.8, 2)`, its
`AdamWeightDecayOptimizer` (weight decay 0.01, its exclusions), 3 steps of
`apply_gradients` with fed gradients and a fed base learning rate. Writes expected.npz next to
this file: `init/<name>`, `grad<k>/<name>`, `lr` (the 3 base rates), `final/<name>`,
`adam_m/<name>`, `adam_v/<name>`.
"""

import argparse
import importlib.util
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DECAY, LAYERS = 0.8, 2
SHAPES = {
    "electra/embeddings/word_embeddings": (6, 4),
    "electra/embeddings/LayerNorm/gamma": (4,),
    "electra/embeddings_project/kernel": (4, 8),
    "electra/embeddings_project/bias": (8,),
    "electra/encoder/layer_0/attention/self/query/kernel": (8, 8),
    "electra/encoder/layer_0/attention/self/query/bias": (8,),
    "electra/encoder/layer_0/output/LayerNorm/beta": (8,),
    "electra/encoder/layer_1/intermediate/dense/kernel": (8, 16),
    "electra/encoder/layer_1/output/dense/kernel": (16, 8),
    "task_specific/classifier/kernel": (8, 3),
    "task_specific/classifier/bias": (3,),
}
LEARNING_RATES = (1e-3, 8e-4, 5e-4)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location(
        "original_electra_optimization", os.path.join(args.original_repo, "model", "optimization.py"))
    optimization = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(optimization)
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel

    rng = np.random.RandomState(0)
    out = {"lr": np.array(LEARNING_RATES, np.float32)}
    for name, shape in SHAPES.items():
        out[f"init/{name}"] = rng.normal(0, 0.5, shape).astype(np.float32)
        for k in range(len(LEARNING_RATES)):
            out[f"grad{k}/{name}"] = rng.normal(0, 0.1, shape).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        tvars = [tf.get_variable(name, initializer=out[f"init/{name}"]) for name in SHAPES]
        grads = [tf.placeholder(tf.float32, shape) for shape in SHAPES.values()]
        lr = tf.placeholder(tf.float32, [])
        optimizer = optimization.AdamWeightDecayOptimizer(
            learning_rate=optimization._get_layer_lrs(lr, DECAY, LAYERS),  # pylint: disable=protected-access
            weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
            exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
        train_op = optimizer.apply_gradients(zip(grads, tvars))
        sess.run(tf.global_variables_initializer())
        for k, rate in enumerate(LEARNING_RATES):
            feed = {g: out[f"grad{k}/{name}"] for g, name in zip(grads, SHAPES)}
            feed[lr] = rate
            sess.run(train_op, feed)
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    for name in SHAPES:
        out[f"final/{name}"] = values[name]
        out[f"adam_m/{name}"] = values[f"{name}/adam_m"]
        out[f"adam_v/{name}"] = values[f"{name}/adam_v"]
    np.savez_compressed(os.path.join(HERE, "expected.npz"), **out)
    print(f"wrote {os.path.join(HERE, 'expected.npz')}")


if __name__ == "__main__":
    main()
