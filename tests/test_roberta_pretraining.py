"""RoBERTa's pretraining model, loss, masks in the input pipeline, optimizer and schedule
(bert_tf/roberta/pretraining.py, pretraining_task.py):

- the model is the encoder + the masked-LM head under cls/predictions, tied to the word
  embeddings, no next-sentence head: exactly the variables of RobertaForMaskedLM's Hub rows;
- the loss on a fixed, dynamically masked batch equals a float64 NumPy reference (Transformers'
  RoBERTa forward, tests/hub_fixtures.py) within the float32 bound derived below;
- the input pipeline gives every record its (epoch, index): every row read equals the masks of
  (seed, epoch, record_index) drawn alone, epochs differ, every reading mode; a checkpointed
  iterator resumes with the same masks;
- three trainer steps equal a NumPy transcription of fairseq's Adam (bias correction, decoupled
  weight decay on every parameter, betas (0.9, 0.98), epsilon 1e-6, no clipping) with
  fairseq's polynomial_decay learning rates, under the bound rule of
  test_training_helpers.assert_adam_steps_match.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import hub_fixtures as hub
from bert_tf import checkpoints
from bert_tf.hf import names
from bert_tf.hf.convert import import_snapshot
from bert_tf.roberta import hub_names, masking
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.pretraining import RobertaPretrainingModel, mlm_loss
from bert_tf.roberta.pretraining_task import (
    RobertaPretrainer, RobertaPretrainingOptions, RobertaPretrainingTask, read_vocab, run,
)
from bert_tf.training import input_pipeline
from bert_tf.training.optimizer import AdamWeightDecay, clip_by_global_norm
from bert_tf.training.schedule import WarmupLinearDecay
from test_training_helpers import assert_adam_steps_match, read_checkpoint, trainer_state

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = REPO / "tests" / "data" / "roberta_tokenizer"
VOCAB, MERGES = TOKENIZER / "vocab.json", TOKENIZER / "merges.txt"
SEQ = 32  # max_position_embeddings 34 - pad id 1 - 1
PREDICTIONS = masking.max_predictions(SEQ)  # 5
FLOAT32_U = 2.0 ** -24
# A RoBERTa of the committed 1036-entry vocabulary (<s> 0, <pad> 1, </s> 2, <unk> 3,
# <mask> 1035), dropout off.
TINY = dict(vocab_size=1036, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=24, hidden_act="gelu_exact", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, max_position_embeddings=SEQ + 2,
            type_vocab_size=1, initializer_range=0.02, model_type="roberta", pad_token_id=1,
            layer_norm_eps=1e-5)


def write_records(path, lengths, seq_length=SEQ, seed=0):
    """RoBERTa records (`input_ids` only): `<s>` random non-special tokens `</s>`, padded with
    `<pad>`, one of each length in `lengths`. Returns the path."""
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for length in lengths:
            ids = np.ones(seq_length, np.int64)
            ids[0], ids[length - 1] = 0, 2
            ids[1:length - 1] = rng.randint(4, 1035, length - 2)
            feature = {"input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids))}
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())
    return str(path)


def write_config(path, **overrides):
    Path(path).write_text(json.dumps(dict(TINY, **overrides)))
    return str(path)


def options(output_dir, input_files, **overrides):
    args = dict(input_files=[str(f) for f in input_files], output_dir=str(output_dir),
                vocab_file=str(VOCAB), max_seq_length=SEQ, train_batch_size=4,
                eval_batch_size=4, learning_rate=1e-3, num_train_steps=3, num_warmup_steps=0,
                save_checkpoints_steps=3, iterations_per_loop=3, shuffle_buffer_size=0, seed=7)
    args.update(overrides)
    return RobertaPretrainingOptions(**args)


def vocab():
    return read_vocab(options("unused", []))


def test_model_is_the_encoder_and_the_tied_masked_lm_head():
    """Exactly RobertaForMaskedLM's rows (+ the pooler our encoder has), shapes included; no
    next-sentence head, no decoder of its own: logits = transform(x) @ word_embeddings^T + b."""
    config = RobertaConfig.from_dict(TINY)
    model = RobertaPretrainingModel(config)
    variables = checkpoints.original_variable_map(model)
    table = names.HubTable(hub_names)
    rows = table.rows_for("RobertaForMaskedLM", config, pooler=True)
    sizes = names.sizes_of(config, None)
    assert {original: tuple(names.hub_shape(letters[::-1] if transposed else letters, sizes))
            for _, original, transposed, letters in rows} == {
        name: tuple(v.shape) for name, v in variables.items()}
    assert not [n for n in variables if "seq_relationship" in n]
    feats = {"input_ids": tf.constant([[0, 50, 60, 2, 1]]),
             "input_mask": tf.constant([[1] * 4 + [0]]),
             "segment_ids": tf.zeros([1, 5], tf.int32),
             "masked_lm_positions": tf.constant([[1, 2]])}
    out = model(feats)
    assert "nsp_log_probs" not in out and out["mlm_log_probs"].shape == (2, 1036)
    before = out["mlm_log_probs"].numpy()
    table_var = variables["roberta/embeddings/word_embeddings"]
    # Only the output side: change rows no input reads; the logits of those tokens move.
    table_var.assign(tf.tensor_scatter_nd_update(table_var, [[7]], [tf.ones([16])]))
    after = model(feats)["mlm_log_probs"].numpy()
    assert not np.allclose(after[:, 7], before[:, 7])


def _snapshot_model(tmp_path):
    """A random RobertaForMaskedLM snapshot (Transformers' names, every weight drawn at the
    scale of a trained model) imported and loaded into RobertaPretrainingModel: (its Hub
    config, tensors, the model)."""
    config = hub.roberta_hub_config("RobertaForMaskedLM", max_position_embeddings=SEQ + 2,
                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    tensors = hub.roberta_state_dict(config)
    folder = hub.write_roberta_snapshot(str(tmp_path / "hub"), config, tensors)
    import_snapshot(folder, tmp_path / "google")
    from bert_tf import families

    model = RobertaPretrainingModel(families.read_config(tmp_path / "google/bert_config.json"))
    checkpoints.load_original_checkpoint(model, tmp_path / "google")
    return config, tensors, model


def test_loss_equals_a_float64_reference(tmp_path):
    """Four records masked by DynamicMasking (seed 3, epoch 0): our log-probabilities at the
    drawn positions within 1e-5 of Transformers' RoBERTa forward in float64 (the forward
    conformance bound of docs/roberta.md), so the loss sum(w * nll) / (sum(w) + 1e-5) is
    within 1e-5 (a weighted mean of terms each within 1e-5) plus float32's rounding of the
    n-term sum ((n - 1) u of the sum of the terms: (n - 1) u loss (sum(w) + 1e-5) / sum(w)) and
    of the division (u loss): tolerance 1e-5 + (n + 1) u loss (1 + 1e-5)."""
    config, tensors, model = _snapshot_model(tmp_path)
    lengths = [32, 20, 11, 27]
    records = write_records(tmp_path / "r.tfrecord", lengths)
    masker = masking.DynamicMasking.for_vocab(vocab(), SEQ, seed=3)
    raw = [tf.io.parse_single_example(r, {"input_ids": tf.io.FixedLenFeature([SEQ], tf.int64)})
           ["input_ids"] for r in tf.data.TFRecordDataset(records)]
    batch = masker(tf.stack(raw), epoch=0, index=tf.range(4))
    out = model(batch)
    losses = mlm_loss(out, batch)

    ref = hub.roberta_reference_outputs(config, tensors, batch["input_ids"].numpy(),
                                        batch["segment_ids"].numpy(),
                                        batch["input_mask"].numpy().astype(np.float64))
    positions = batch["masked_lm_positions"].numpy()
    log_probs = hub.log_softmax(np.take_along_axis(ref["mlm_logits"], positions[..., None], 1))
    log_probs = log_probs.reshape(-1, log_probs.shape[-1])
    np.testing.assert_allclose(out["mlm_log_probs"].numpy(), log_probs, atol=1e-5, rtol=0)
    ids = batch["masked_lm_ids"].numpy().reshape(-1)
    weights = batch["masked_lm_weights"].numpy().reshape(-1).astype(np.float64)
    n = int(weights.sum())
    assert n >= 8  # int(0.15 n + U) of 32, 20, 11, 27 real tokens: at least 4 + 3 + 1 + 4 - 4
    nll = -log_probs[np.arange(len(ids)), ids]
    want = float(np.sum(weights * nll) / (weights.sum() + 1e-5))
    got = float(losses["total_loss"])
    assert abs(got - want) <= 1e-5 + (n + 1) * FLOAT32_U * want * (1 + 1e-5), (got, want)
    assert float(losses["masked_lm_loss"]) == got
    # fairseq's mean over the masked tokens, up to the 1e-5 of the denominator.
    assert want == pytest.approx(float(np.mean(nll[weights > 0])), rel=1e-5 / n + 1e-12)
    # No masked token: 0, not NaN.
    empty = dict(batch, masked_lm_weights=tf.zeros_like(batch["masked_lm_weights"]))
    assert float(mlm_loss(out, empty)["total_loss"]) == 0.0


def _originals(row):
    """The unmasked input_ids of a masked row (its labels put back)."""
    ids = np.array(row["input_ids"])
    drawn = row["masked_lm_weights"] > 0
    ids[row["masked_lm_positions"][drawn]] = row["masked_lm_ids"][drawn]
    return tuple(ids.tolist())


def _rows(dataset, count):
    rows = []
    for batch in dataset.take(count):
        batch = {k: v.numpy() for k, v in batch.items()}
        rows += [{k: v[i] for k, v in batch.items()} for i in range(len(batch["input_ids"]))]
    return rows


def _same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("shuffle_buffer_size", [0, input_pipeline.PERMUTE_EACH_EPOCH, 4])
def test_pipeline_masks_from_seed_epoch_and_record_index(tmp_path, shuffle_buffer_size):
    """Two files (5 and 3 records) read for 32 records: every row is the masks drawn alone for
    its record's (seed, epoch, record_index) (file number * 2**32 + number in the file); in
    file order and permuted per epoch every record is read once in each of epochs 0..3, in
    order; with the buffer shuffle of interleaved files each read of a record has its own
    epoch, 0, 1, 2, ... (a file's pass over it). A record's masks differ from one epoch to the
    next. Eval reads epoch 0."""
    files = [write_records(tmp_path / "a.tfrecord", [32, 30, 28, 31, 26], seed=1),
             write_records(tmp_path / "b.tfrecord", [29, 32, 27], seed=2)]
    masker = masking.DynamicMasking.for_vocab(vocab(), SEQ, seed=11)
    task = RobertaPretrainingTask(masker)
    index_of = {}
    for number, path in enumerate(files):
        for k, record in enumerate(tf.data.TFRecordDataset(path)):
            ids = tf.io.parse_single_example(record, task.feature_spec(True))["input_ids"]
            index_of[tuple(ids.numpy().tolist())] = (input_pipeline.record_index(number, k), ids)
    assert len(index_of) == 8

    def dataset(is_training):
        return input_pipeline.make_dataset(
            files, None, None, batch_size=2, is_training=is_training,
            shuffle_buffer_size=shuffle_buffer_size, seed=5, spec=task.feature_spec(True),
            record_parser=task.record_parser(is_training))

    epochs_of = {}
    for row in _rows(dataset(True), 16):
        index, ids = index_of[_originals(row)]
        found = [e for e in range(6)
                 if _same({k: v.numpy() for k, v in masker(ids, e, index).items()}, row)]
        assert len(found) == 1, (index, found)
        epochs_of.setdefault(index, []).append(found[0])
    assert sorted(epochs_of) == sorted(i for i, _ in index_of.values())
    for index, epochs in epochs_of.items():
        if shuffle_buffer_size <= 0:
            assert epochs == [0, 1, 2, 3], index
        else:  # the files interleaved: the shorter one's records come round more often
            assert sorted(epochs) == list(range(len(epochs))) and len(epochs) >= 3, index
    for index, ids in index_of.values():
        draws = [masker(ids, e, index) for e in range(4)]
        for a, b in zip(draws, draws[1:]):
            assert not _same({k: v.numpy() for k, v in a.items()},
                             {k: v.numpy() for k, v in b.items()})
    for row in _rows(dataset(False), 4):
        index, ids = index_of[_originals(row)]
        assert _same({k: v.numpy() for k, v in masker(ids, 0, index).items()}, row)


@pytest.mark.parametrize("shuffle_buffer_size", [input_pipeline.PERMUTE_EACH_EPOCH, 4])
def test_a_restored_iterator_draws_the_same_masks(tmp_path, shuffle_buffer_size):
    """The iterator saved after 5 batches (inside the second epoch) and restored into a new
    pipeline gives the next 7 batches of the uninterrupted one, masks included."""
    files = [write_records(tmp_path / "a.tfrecord", [32, 30, 28, 31, 26], seed=1),
             write_records(tmp_path / "b.tfrecord", [29, 32, 27], seed=2)]
    task = RobertaPretrainingTask(masking.DynamicMasking.for_vocab(vocab(), SEQ, seed=11))

    def iterator():
        return iter(input_pipeline.make_dataset(
            files, None, None, batch_size=2, is_training=True,
            shuffle_buffer_size=shuffle_buffer_size, seed=5, spec=task.feature_spec(True),
            record_parser=task.record_parser(True)))

    def take(it, n):
        return [{k: v.numpy() for k, v in next(it).items()} for _ in range(n)]

    whole = take(iterator(), 12)
    first = iterator()
    take(first, 5)
    path = tf.train.Checkpoint(iterator=first).write(str(tmp_path / "it" / "ckpt"))
    second = iterator()
    tf.train.Checkpoint(iterator=second).read(path).assert_consumed()
    for a, b in zip(take(second, 7), whole[5:], strict=True):
        assert _same(a, b)


def fairseq_lr(step, peak, warmup, total):
    """fairseq v0.12.2 PolynomialDecayLRSchedule.step_update(num_updates=step), power 1,
    end_learning_rate 0: the rate of update `step` (from 0)."""
    if warmup > 0 and step <= warmup:
        return step / float(warmup) * peak
    if step >= total:
        return 0.0
    return peak * (1 - (step - warmup) / (total - warmup))


@pytest.mark.parametrize("warmup", [0, 3])
def test_schedule_is_fairseqs_polynomial_decay(warmup):
    schedule = WarmupLinearDecay(5e-4, num_train_steps=10, num_warmup_steps=warmup,
                                 decay_after_warmup=True)
    for step in range(13):
        assert float(schedule(step)) == pytest.approx(fairseq_lr(step, 5e-4, warmup, 10),
                                                      rel=1e-6, abs=1e-12), step
    with pytest.raises(ValueError, match="must be below"):
        WarmupLinearDecay(1e-3, 10, 10, decay_after_warmup=True)


def fairseq_adam_step(p, g, m, v, t, lr, beta_1=0.9, beta_2=0.98, eps=1e-6, weight_decay=0.01):
    """fairseq v0.12.2 `Adam.step` for one parameter, float64: (p, m, v) after step t (from 1)."""
    m = beta_1 * m + (1 - beta_1) * g
    v = beta_2 * v + (1 - beta_2) * g * g
    denom = np.sqrt(v) + eps
    step_size = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
    p = p - weight_decay * lr * p
    p = p - step_size * m / denom
    return p, m, v


def test_three_trainer_steps_equal_fairseqs_adam(tmp_path):
    """The command's run (3 steps of 4 records in file order, peak lr 1e-3 with no warmup,
    dynamic padding) against a NumPy float64 run of fairseq's Adam fed with the gradients
    TensorFlow computes at the NumPy run's own weights: weights and moments within
    assert_adam_steps_match's rule (1e-5 of the tensor's largest value, scaled where Adam
    divides by a small sqrt(v)); the key biases, whose gradient is 0 in real arithmetic,
    within the largest move of bias-corrected Adam of betas (0.9, 0.98). Every parameter is
    decayed (the LayerNorm ones and biases too, as fairseq), nothing is clipped."""
    records = write_records(tmp_path / "r.tfrecord", [32, 20, 11, 27, 30, 16, 25, 9, 32, 14,
                                                      22, 31], seed=4)
    config = RobertaConfig.from_dict(TINY)
    opts = options(tmp_path / "run", [records])
    reference = RobertaPretrainer(config, options(tmp_path / "unused", [records]))
    start = trainer_state(reference)
    stream = reference.input_stream(opts.input_files, 4, is_training=True)
    names_ = reference.variable_names
    w = {n: start[n].astype(np.float64) for n in names_}
    m = {n: np.zeros_like(w[n]) for n in names_}
    v = {n: np.zeros_like(w[n]) for n in names_}
    steps = []
    for t in range(3):
        batch = stream.get_next()
        for name, var in zip(names_, reference.train_variables):
            var.assign(w[name].astype(np.float32))
        _, grads = reference._micro_batch_gradients(batch,
                                                    reference.task.local_normalizers(batch))
        lr = float(reference.schedule(t))
        assert lr == pytest.approx(fairseq_lr(t, 1e-3, 0, 3), rel=1e-6)
        steps.append({"learning_rate": lr})
        for name, g in zip(names_, grads):
            w[name], m[name], v[name] = fairseq_adam_step(
                w[name], np.asarray(g, np.float64), m[name], v[name], t + 1, lr)
    expected = dict(w)
    expected.update({f"{n}/adam_m": m[n] for n in names_})
    expected.update({f"{n}/adam_v": v[n] for n in names_})

    history = []
    prefix, _ = run(config, opts, do_train=True,
                    step_callback=lambda step, values: history.append(values))
    assert prefix.endswith("model.ckpt-3")
    np.testing.assert_allclose([h["learning_rate"] for h in history],
                               [s["learning_rate"] for s in steps], rtol=1e-7)
    ours = read_checkpoint(prefix)
    assert int(ours["global_step"]) == 3
    # The pooler is not trained (fairseq's masked LM has none): its start, no slots.
    np.testing.assert_array_equal(
        ours["roberta/pooler/dense/kernel"],
        checkpoints.original_variable_map(reference.model)["roberta/pooler/dense/kernel"])
    assert "roberta/pooler/dense/kernel/adam_m" not in ours
    key_biases = {n for n in names_ if n.endswith("/attention/self/key/bias")}
    assert len(key_biases) == 2
    assert_adam_steps_match(ours, expected, start, steps, key_biases, beta_1=0.9, beta_2=0.98,
                            bias_corrected=True)
    # The LayerNorm parameters were decayed: a gamma of 1 with a tiny gradient moved by ~lr*wd.
    assert not np.array_equal(ours["roberta/embeddings/LayerNorm/gamma"],
                              start["roberta/embeddings/LayerNorm/gamma"])



@pytest.mark.parametrize("jit_compile", [False, True])
def test_bias_corrected_adam_on_fed_gradients_is_fairseqs(jit_compile):
    """AdamWeightDecay(bias_correction=True), fairseq's settings, three steps of fed float32
    gradients (a LayerNorm gamma and a bias decayed too; one element's gradient 1e-9, far below
    epsilon) against fairseq's `Adam.step` in float64: each step adds to
    a weight's bound 16 u of the weight and of the step it took, to a moment's 4 u of the term
    it adds ((1 - beta) |g| or g**2), the rule of test_training_lamb.albert_bounds."""
    rng = np.random.RandomState(3)
    shapes = {"l/dense/kernel": (3, 4), "l/dense/bias": (4,), "l/LayerNorm/gamma": (4,)}
    init = {n: rng.randn(*s).astype(np.float32) for n, s in shapes.items()}
    init["l/LayerNorm/gamma"][:] = 1.0
    variables = {n: tf.Variable(v) for n, v in init.items()}
    opt = AdamWeightDecay(beta_1=0.9, beta_2=0.98, epsilon=1e-6, bias_correction=True,
                          exclude_from_weight_decay=(), jit_compile=jit_compile)
    opt.build(variables)
    ref = {n: (v.astype(np.float64), np.zeros(v.shape), np.zeros(v.shape))
           for n, v in init.items()}
    bounds = {n: np.zeros(v.shape) for n, v in init.items()}
    m_bounds = {n: np.zeros(v.shape) for n, v in init.items()}
    v_bounds = {n: np.zeros(v.shape) for n, v in init.items()}
    for t, lr in enumerate([np.float32(1e-3), np.float32(6e-4), np.float32(2e-4)], start=1):
        grads = {n: (rng.randn(*s) * 0.1).astype(np.float32) for n, s in shapes.items()}
        grads["l/dense/bias"][0] = np.float32(1e-9)
        opt.apply_gradients([tf.constant(grads[n]) for n in shapes], tf.constant(lr),
                            step=tf.constant(t, tf.int64))
        for n in shapes:
            before = ref[n][0]
            ref[n] = fairseq_adam_step(*ref[n][:1], grads[n].astype(np.float64), *ref[n][1:],
                                       t, float(lr))
            bounds[n] += FLOAT32_U * (16 * np.abs(ref[n][0]) + 16 * np.abs(ref[n][0] - before))
            m_bounds[n] += 4 * FLOAT32_U * 0.1 * np.abs(grads[n])
            v_bounds[n] += 4 * FLOAT32_U * 0.02 * np.square(grads[n].astype(np.float64))
    state = opt.get_state()
    for n in shapes:
        assert np.all(np.abs(variables[n].numpy() - ref[n][0]) <= bounds[n]), n
        assert np.all(np.abs(state["adam_m"][n] - ref[n][1]) <= m_bounds[n]), n
        assert np.all(np.abs(state["adam_v"][n] - ref[n][2]) <= v_bounds[n]), n


def test_clip_norm_zero_clips_nothing():
    """fairseq's --clip-norm 0: the gradients as they are, with their global norm (dense and
    with IndexedSlices rows counted)."""
    grads = [tf.constant([3.0, 4.0]), tf.constant([[12.0]])]
    out, norm = clip_by_global_norm(grads, 0.0)
    assert float(norm) == 13.0
    for a, b in zip(out, grads):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    out, norm = clip_by_global_norm(grads, 0.0, sparse=[False, True], sparse_norm_sq=25.0)
    assert float(norm) == np.float32(np.sqrt(50.0))  # sqrt(3**2 + 4**2 + 25), in float32
    np.testing.assert_array_equal(out[1].numpy(), grads[1].numpy())
    clipped, _ = clip_by_global_norm(grads, 1.0)
    assert float(tf.linalg.global_norm(clipped)) == pytest.approx(1.0)
