"""Records what the ORIGINAL google-research/albert squad_utils.py does on the fixtures here.

Run once with a copy of the original repository (imported unmodified by
`tools.original.load_albert_module`):

    python3 tests/data/albert_squad/make_expected.py --original_repo=/tmp/orig_albert

Writes, next to this file, the two SQuAD files built from PARAGRAPHS below (squad_v1.json: the
possible questions without `is_impossible` keys; squad_v2.json: every question, with them) and
expected.json.gz:
  read:     read_squad_examples(file, is_training) of both files, both modes (every attribute);
  features: convert_examples_to_features for each SETTINGS entry x do_lower_case x
            {v1/train, v2/train, v2/predict} (training examples in file order): the sha256 of
            the features (`features_digest`: every InputFeatures attribute,
            token_is_max_context as [position, flag] pairs) and their number; the number of
            "MISMATCH DETECTED!" lines logged; for RECORDED_SETTINGS the features themselves and
            the records the original's FeatureWriter wrote, parsed (name -> values).
The tokenizer is the original FullTokenizer over ../albert_spm/albert.model.

The paragraphs: a long one that spans several windows (answers at its start, middle and end; a
question longer than the shortest max_query_length), accents and other letters NFKD changes,
digits with commas, one whose pieces align only on the original's retry (8 leading spaces
and 8 ligatures: the first band is too narrow), two whose alignment fails (16 leading spaces
and 16 ligatures; ligatures only), and impossible questions (v2).
"""

import argparse
import gzip
import hashlib
import json
import logging
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, REPO)

from tools.original import load_albert_module  # noqa: E402

SPM_MODEL = os.path.join(REPO, "tests", "data", "albert_spm", "albert.model")
FILES = {"v1": os.path.join(HERE, "squad_v1.json"), "v2": os.path.join(HERE, "squad_v2.json")}
EXPECTED = os.path.join(HERE, "expected.json.gz")

# (max_seq_length, doc_stride, max_query_length)
SETTINGS = ((64, 24, 12), (40, 8, 6), (40, 200, 6), (384, 128, 64))
# The settings whose features are kept whole, with the records the original's FeatureWriter
# wrote (the others: a sha256 of the features).
RECORDED_SETTINGS = ((64, 24, 12), (384, 128, 64))
RUNS = ("v1/train", "v2/train", "v2/predict")

LONG = (
    "The city museum opened in 1895 in a former grain store by the river. Its first director, "
    "a chemist named Anna Berg, bought the building with money from a public subscription and "
    "filled the ground floor with minerals, maps and old tools. During the war the collection "
    "was moved to a school outside the city, and the empty building served as a hospital. "
    "After the war the council rebuilt the roof, added a glass hall for the trains and opened "
    "a library on the top floor. Today the museum has about forty rooms, a garden with a small "
    "railway, and a shop that sells copies of the oldest maps. Every summer it holds a night "
    "of music in the glass hall, and every winter the children of the city build a model "
    "town there, which is shown until the spring.")
ACCENTS = (
    "Ångström and Café Müller met in Zürich; the naïve résumé of São Paulo's façade was read "
    "aloud by Zoë Ødegaard, who said Straße and İstanbul twice.")
DIGITS = (
    "About 1,234,567 people paid 12,5 euros each in 1990, and 3,000 more came in 1991, "
    "when the price was 0,5 euros.")
RETRY = (" " * 8 + "The museum opened in 1895 and was rebuilt after the war by the city "
         "council. Its \ufb01rst \ufb02oor had \ufb01ve \ufb01ne \ufb01les and \ufb01fty "
         "\ufb02ags \ufb01xed.")
FAILS = (" " * 16 + "The museum opened in 1895 and was rebuilt after the war by the city "
         "council. Its " + " ".join(["\ufb01ve \ufb01ne"] * 8) + ".")
LIGATURES = "\ufb01\ufb01\ufb01\ufb01 \ufb02\ufb02\ufb02\ufb02 \ufb01\ufb01\ufb01 \ufb03\ufb03"

# (context, [(id, question, answer text or None for impossible, occurrence of the answer)])
PARAGRAPHS = [
    (LONG, [
        ("long-start", "When did the city museum open?", "1895", 0),
        ("long-middle", "What did the building serve as during the war?", "a hospital", 0),
        ("long-end", "What do the children of the city build every winter?", "a model town",
         0),
        ("long-query", "Which room of the museum was added by the council after the war, and "
         "what is held there every summer when the music plays at night?", "a glass hall", 0),
        ("long-impossible", "Who was the second director of the museum?", None, 0),
    ]),
    (ACCENTS, [
        ("accents-cafe", "Who met Ångström in Zürich?", "Café Müller", 0),
        ("accents-sao", "Whose façade was in the résumé?", "São Paulo's", 0),
        ("accents-zoe", "Who read it aloud?", "Zoë Ødegaard", 0),
        ("accents-impossible", "Where is Straße?", None, 0),
    ]),
    (DIGITS, [
        ("digits-people", "How many people paid?", "1,234,567", 0),
        ("digits-price", "What was the price in 1991?", "0,5 euros", 0),
        ("digits-year", "When did 3,000 more come?", "1991", 0),
    ]),
    (RETRY, [
        ("retry-year", "When did the museum open?", "1895", 0),
        ("retry-ligature", "What had the first floor?", "\ufb01ve \ufb01ne \ufb01les", 0),
    ]),
    (FAILS, [("fails-year", "When did the museum open?", "1895", 0)]),
    (LIGATURES, [("ligatures", "What comes first?", "\ufb01\ufb01\ufb01\ufb01", 0)]),
]


def squad_json(version):
    """The SQuAD file of `version` ("v1": possible questions, no is_impossible keys)."""
    paragraphs = []
    for context, questions in PARAGRAPHS:
        qas = []
        for qid, question, answer, occurrence in questions:
            if answer is None and version == "v1":
                continue
            qa = {"id": qid, "question": question}
            if answer is None:
                qa["answers"] = []
            else:
                start = -1
                for _ in range(occurrence + 1):
                    start = context.index(answer, start + 1)
                qa["answers"] = [{"text": answer, "answer_start": start}]
            if version == "v2":
                qa["is_impossible"] = answer is None
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    return {"version": version, "data": [{"title": "fixture", "paragraphs": paragraphs}]}


EXAMPLE_ATTRIBUTES = ("qas_id", "question_text", "paragraph_text", "orig_answer_text",
                      "start_position", "end_position", "is_impossible")
FEATURE_ATTRIBUTES = ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                      "tok_end_to_orig_index", "token_is_max_context", "tokens", "input_ids",
                      "input_mask", "segment_ids", "paragraph_len", "p_mask", "start_position",
                      "end_position", "is_impossible")


def example_record(example):
    return {name: getattr(example, name) for name in EXAMPLE_ATTRIBUTES}


def feature_record(feature):
    out = {}
    for name in FEATURE_ATTRIBUTES:
        value = getattr(feature, name)
        if name == "token_is_max_context":
            value = [[int(k), bool(v)] for k, v in value.items()]
        elif isinstance(value, list):
            value = list(value)
        out[name] = value
    return out


def features_digest(records):
    """sha256 of a list of feature_record dicts (canonical JSON)."""
    text = json.dumps(records, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_name(run, settings, do_lower_case):
    return "/".join([run, *map(str, settings), "lower" if do_lower_case else "cased"])


def parse_records(path):
    """The records of a TFRecord file as lists of {name: list of ints}."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    out = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        out.append({name: list(feature.int64_list.value)
                    for name, feature in sorted(example.features.feature.items())})
    return out


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_repo", required=True)
    args = parser.parse_args()
    for version, path in FILES.items():
        with open(path, "w", encoding="utf-8") as f:
            json.dump(squad_json(version), f, indent=1, ensure_ascii=False)
            f.write("\n")

    squad_utils = load_albert_module(args.original_repo, "squad_utils")
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    capture = Capture()
    logging.getLogger("tensorflow").addHandler(capture)

    expected = {"read": {}, "features": {}}
    for version, path in FILES.items():
        for is_training in (True, False):
            examples = squad_utils.read_squad_examples(path, is_training)
            name = f"{version}/{'train' if is_training else 'predict'}"
            expected["read"][name] = [example_record(e) for e in examples]

    with tempfile.TemporaryDirectory() as tmp:
        for do_lower_case in (True, False):
            tokenizer = squad_utils.tokenization.FullTokenizer(None, do_lower_case, SPM_MODEL)
            for run in RUNS:
                version, mode = run.split("/")
                is_training = mode == "train"
                for settings in SETTINGS:
                    max_seq_length, doc_stride, max_query_length = settings
                    examples = squad_utils.read_squad_examples(FILES[version], is_training)
                    record_file = os.path.join(tmp, "records.tfrecord")
                    writer = squad_utils.FeatureWriter(record_file, is_training)
                    features = []

                    def output(feature, writer=writer, features=features):
                        features.append(feature_record(feature))
                        writer.process_feature(feature)

                    capture.messages.clear()
                    squad_utils.convert_examples_to_features(
                        examples=examples, tokenizer=tokenizer, max_seq_length=max_seq_length,
                        doc_stride=doc_stride, max_query_length=max_query_length,
                        is_training=is_training, output_fn=output,
                        do_lower_case=do_lower_case)
                    writer.close()
                    entry = expected["features"][run_name(run, settings, do_lower_case)] = {
                        "sha256": features_digest(features),
                        "num_features": len(features),
                        "mismatches": capture.messages.count("MISMATCH DETECTED!"),
                    }
                    if settings in RECORDED_SETTINGS:
                        entry["features"] = features
                        entry["records"] = parse_records(record_file)
                    print(run_name(run, settings, do_lower_case), len(features), "features",
                          entry["mismatches"], "mismatches")
    with gzip.open(EXPECTED, "wt", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, sort_keys=True)
    print("wrote", EXPECTED)


if __name__ == "__main__":
    main()
