"""What the tests of bert_tf's own fine-tuning scripts on ALBERT share (test_run_classifier,
test_tagging, test_squad, test_data_squad, test_squad_predictions): a tiny ALBERT checkpoint
laid out as Google ships one, and SentencePiece-hard texts.

`write_checkpoint(directory)` writes `albert_config.json` (Google's keys, no `model_type`) and
`model.ckpt-best.*` (the original's variable names) of a random tiny ALBERT (vocab 2000, the
pieces of tests/data/albert_spm/albert.model, `SPM_MODEL`, given as --vocab_file; E=8, H=16,
2 layers sharing one group of 2 inner blocks). The texts mix what SentencePiece and
`preprocess_text` change: accents precomposed and decomposed, capitals, digits with commas
(the digit-comma rule's lone "▁"), punctuation inside words, and whitespace runs, tabs,
newlines and NBSP (a SQuAD word separator only for space, tab, CR, LF and U+202F).
"""

import json
from pathlib import Path

SPM_MODEL = str(Path(__file__).resolve().parent / "data" / "albert_spm" / "albert.model")

CONFIG = dict(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=2,
              num_hidden_groups=1, inner_group_num=2, num_attention_heads=2,
              intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, max_position_embeddings=64, type_vocab_size=2,
              initializer_range=0.2)


def write_checkpoint(directory, seed=3):
    """albert_config.json and model.ckpt-best in `directory`; returns (config path, prefix)."""
    import tensorflow as tf

    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.model import AlbertModel
    from bert_tf.checkpoints import save_original_checkpoint

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tf.keras.utils.set_random_seed(seed)
    model = AlbertModel(AlbertConfig(**CONFIG))
    prefix = save_original_checkpoint(model, directory / "model.ckpt-best", update_state=False)
    for extra in ("bert_config.json", "checkpoint"):  # not in Google's folders
        (directory / extra).unlink(missing_ok=True)
    config_file = directory / "albert_config.json"
    config_file.write_text(json.dumps(CONFIG, indent=2) + "\n")
    return str(config_file), str(prefix)


# -- SQuAD ---------------------------------------------------------------------------------------

CONTEXTS = [
    "In 1990, about 1,000 people  paid 2,5 euros in Zürich.\tThe Café naïve (1895-1943) was "
    "run by Ångström, who said: \"Not here\".",
    "São\u00a0Paulo is big; its   population was 12,325,232 in 2020,\nsays the re\u0301sume\u0301 "
    "of ÅNGSTRÖM. Later, 3,000,000 more came to São Paulo.",
]
# (id, question, context index, answer text): every answer occurs once in its context.
ANSWERS = [
    ("a1", "How many people?", 0, "1,000"),
    ("a2", "Where?", 0, "Zürich"),
    ("a3", "Who ran the café?", 0, "Ångström"),
    ("a4", "When was it founded?", 0, "1895"),
    ("a5", "What did they do?", 0, "1,000 people  paid"),
    ("a6", "What did he say?", 0, "Not here"),
    ("a7", "How much?", 0, "2,5 euros"),
    ("b1", "Population?", 1, "12,325,232"),
    ("b2", "Which city?", 1, "Paulo is big"),
    ("b3", "Says what?", 1, "re\u0301sume\u0301"),
    ("b4", "In which year?", 1, "2020"),
    ("b5", "Of whom?", 1, "ÅNGSTRÖM"),
    ("b6", "How many more?", 1, "3,000,000"),
]


def squad_json(version_2=False):
    """The SQuAD dict of CONTEXTS and ANSWERS (2.0: each with is_impossible false, plus one
    unanswerable question)."""
    paragraphs = []
    for c, context in enumerate(CONTEXTS):
        qas = []
        for qas_id, question, index, text in ANSWERS:
            if index == c:
                qa = {"id": qas_id, "question": question,
                      "answers": [{"text": text, "answer_start": context.index(text)}]}
                if version_2:
                    qa["is_impossible"] = False
                qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    if version_2:
        paragraphs[0]["qas"].append({"id": "none", "question": "What did the monk eat?",
                                     "answers": [], "is_impossible": True})
    return {"version": "v2.0" if version_2 else "1.1",
            "data": [{"title": "albert", "paragraphs": paragraphs}]}


def write_squad(path, version_2=False):
    Path(path).write_text(json.dumps(squad_json(version_2), ensure_ascii=False),
                          encoding="utf-8")
    return str(path)


# -- CoNLL ---------------------------------------------------------------------------------------

PEOPLE = ["Müller", "Ångström", "Zoë"]
PLACES = ["Zürich", "São", "Kraków"]


def conll_text(rng, num_sentences):
    """Template sentences whose tags follow from the words (a model can learn them)."""
    lines = ["-DOCSTART- -X- O", ""]
    for _ in range(num_sentences):
        person, place = rng.choice(PEOPLE), rng.choice(PLACES)
        templates = [
            [(person, "B-PER"), ("lives", "O"), ("in", "O"), (place, "B-LOC")],
            [(person, "B-PER"), ("paid", "O"), ("1,000", "O"), ("euros", "O"), ("in", "O"),
             (place, "B-LOC")],
            [("the", "O"), ("Café", "B-ORG"), ("naïve", "I-ORG"), ("of", "O"), (person, "B-PER"),
             ("(1895-1943).", "O")],
        ]
        lines += [f"{word} X {tag}" for word, tag in templates[rng.randint(len(templates))]]
        lines.append("")
    return "\n".join(lines) + "\n"


# -- classification ------------------------------------------------------------------------------

WORDS = ["the", "Café", "naïve", "1,000", "people", "paid", "Zürich", "re\u0301sume\u0301",
         "ÅNGSTRÖM", "in", "2020,", "euros"]
