"""Records what google-research/albert's model computes (tests/test_albert_model.py).

Run once, with a copy of google-research/albert:

    python3 tests/data/albert_model/make_expected.py --original_repo=/tmp/albert

For each case of CASES (tiny configs, dropout 0), the original's `modeling.AlbertModel`
(is_training False) and its pretraining heads (`run_pretraining.get_masked_lm_output` on the
model's embedding table, `get_sentence_order_output` on the pooled output) are built in a TF1
graph through `tools.original.load_albert_module`, unmodified. The weights start from the
original's initializers (graph seed SEED) with every LayerNorm gamma/beta and bias moved by
N(0, 0.1) so none is trivially 1 or 0. Outputs, per case, in <case>/:
  model.ckpt.*: the weights, written by tf.compat.v1.train.Saver under the original's names
    (as a Google release holds them);
  albert_config.json: the original's AlbertConfig.to_json_string();
  forward.npz: the fed `input_ids`, `input_mask`, `segment_ids` [B, S], `masked_lm_positions`
    [B, P], and `embedding_output` [B, S, E], `all_encoder_layers` [L * inner, B, S, H],
    `sequence_output`, `pooled_output` [B, H], `mlm_log_probs` [B * P, V],
    `sop_log_probs` [B, 2];
  variables.json: [name, shape] of every variable of the graph, in creation order.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from tools.original import load_albert_module  # noqa: E402

SEED = 1234
B, S, P, V = 3, 12, 4, 40
BASE = dict(vocab_size=V, num_attention_heads=2, intermediate_size=24, hidden_act="gelu",
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            max_position_embeddings=16, type_vocab_size=2, initializer_range=0.2)
# name -> the AlbertConfig keys of the case
CASES = {
    # The grouped model: L=4 over 2 groups of 2 inner blocks, E != H.
    "grouped": dict(BASE, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                    num_hidden_groups=2, inner_group_num=2),
    # int(l / 3 * 2) = 0, 0, 1: the float division; E == H, so no embedding_hidden_mapping_in.
    "uneven": dict(BASE, embedding_size=16, hidden_size=16, num_hidden_layers=3,
                   num_hidden_groups=2, inner_group_num=1),
    # More groups than layers: group 2 is never used and never created.
    "sparse_groups": dict(BASE, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_hidden_groups=3, inner_group_num=1),
}


def inputs(rng):
    input_ids = rng.integers(5, V, size=(B, S)).astype(np.int32)
    input_mask = np.ones((B, S), np.int32)
    input_mask[1, 9:] = 0
    input_mask[2, 5:] = 0
    input_ids[input_mask == 0] = 0
    segment_ids = np.zeros((B, S), np.int32)
    segment_ids[0, 6:] = 1
    segment_ids[1, 4:9] = 1
    positions = np.array([[1, 3, 7, 10], [2, 5, 8, 0], [1, 4, 0, 0]], np.int32)
    return dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                masked_lm_positions=positions)


def record(rp, name, keys, feed_values, out_dir):
    import tensorflow as tf

    v1 = tf.compat.v1
    config = rp.modeling.AlbertConfig.from_dict(keys)
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(SEED)
        ph = {k: v1.placeholder(tf.int32, [B, S if k != "masked_lm_positions" else P], name=k)
              for k in feed_values}
        model = rp.modeling.AlbertModel(
            config=config, is_training=False, input_ids=ph["input_ids"],
            input_mask=ph["input_mask"], token_type_ids=ph["segment_ids"],
            use_one_hot_embeddings=False)
        zeros = tf.zeros([B * P], tf.int32)
        _, _, mlm_log_probs = rp.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(),
            ph["masked_lm_positions"], zeros, tf.ones([B * P]))
        _, _, sop_log_probs = rp.get_sentence_order_output(
            config, model.get_pooled_output(), tf.zeros([B], tf.int32))
        variables = v1.global_variables()
        saver = v1.train.Saver(variables)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            rng = np.random.default_rng(SEED)
            for var in variables:
                if var.op.name.endswith(("gamma", "beta", "bias")):
                    value = sess.run(var)
                    sess.run(var.assign(value + rng.normal(0, 0.1, value.shape).astype(np.float32)))
            fetched = sess.run(dict(
                embedding_output=model.get_embedding_output(),
                all_encoder_layers=model.get_all_encoder_layers(),
                sequence_output=model.get_sequence_output(),
                pooled_output=model.get_pooled_output(),
                mlm_log_probs=mlm_log_probs, sop_log_probs=sop_log_probs),
                feed_dict={ph[k]: v for k, v in feed_values.items()})
            os.makedirs(out_dir, exist_ok=True)
            saver.save(sess, os.path.join(out_dir, "model.ckpt"), write_meta_graph=False)
    os.remove(os.path.join(out_dir, "checkpoint"))
    fetched["all_encoder_layers"] = np.stack(fetched["all_encoder_layers"])
    np.savez_compressed(os.path.join(out_dir, "forward.npz"), **feed_values, **fetched)
    with open(os.path.join(out_dir, "albert_config.json"), "w") as f:
        f.write(config.to_json_string())
    with open(os.path.join(out_dir, "variables.json"), "w") as f:
        json.dump([[v.op.name, v.shape.as_list()] for v in variables], f, indent=0)
    print(name, len(variables), "variables")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    rp = load_albert_module(args.original_repo, "run_pretraining")
    feed_values = inputs(np.random.default_rng(7))
    for name, keys in CASES.items():
        record(rp, name, keys, feed_values, os.path.join(HERE, name))


if __name__ == "__main__":
    main()
