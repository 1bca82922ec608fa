"""Shared test fixtures: the golden outputs of the original code in ../shared, tiny configs."""

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
GOLDEN_DIR = SHARED_DIR / "golden"
# A copy of google-research/albert for the tests that compare with it live (they skip, saying
# so, without one).
ALBERT_ORIGINAL_REPO = Path(os.environ.get("ALBERT_ORIGINAL_REPO", "/tmp/orig_albert"))


def golden_path(*parts):
    """A file of ../shared/golden, or skip the test saying why when it is absent."""
    path = GOLDEN_DIR.joinpath(*parts)
    if not path.exists() and not Path(str(path) + ".index").exists():
        pytest.skip(f"golden fixture {path} is absent (../shared/golden comes with CI, not with a clone)")
    return path


def tiny_config_dict(**overrides):
    config = dict(
        vocab_size=37, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=24, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=20, type_vocab_size=2,
        initializer_range=0.02,
    )
    config.update(overrides)
    return config


def shared_random_draws(weights, prefix=8):
    """Pairs of names of `weights` (Keras variables) whose random initial values repeat each
    other: the same first `prefix` values, flattened. Constant weights (zero biases, LayerNorm)
    are left out. The original draws every weight independently, so a model should have none.
    """
    import numpy as np

    values = [(w.path, np.asarray(w.numpy(), np.float32).reshape(-1)) for w in weights]
    values = [(name, v[:prefix]) for name, v in values if v.size >= prefix and np.ptp(v) > 0]
    return [(a, b) for i, (a, va) in enumerate(values) for b, vb in values[i + 1:]
            if np.array_equal(va, vb)]


def load_recorder(topic):
    """tests/data/<topic>/make_expected.py (the script that recorded the original's outputs)
    as module `make_expected_<topic>`: every topic has a recorder of that file name, so none
    may be imported by the bare name."""
    import importlib.util
    import sys

    name = f"make_expected_{topic}"
    if name not in sys.modules:
        path = Path(__file__).resolve().parent / "data" / topic / "make_expected.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_GROUP = pytest.StashKey[str]()  # an item's xdist group (its node id when it has none)
# A slow test costs about this many fast ones (slow: 5 to 30 s; most others well under 1 s).
SLOW_WEIGHT = 20


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (scripts/test.sh runs `-n 2 --dist loadgroup
    --no-loadscope-reorder`): the tests of a module that has a module-scoped fixture (a
    trained model, exported SavedModels, traced tokenizers) form one group, run by one worker,
    so that the fixture is built once rather than once per worker; and the costliest groups
    are handed out first (a group's cost: SLOW_WEIGHT a slow test, 1 another; an ungrouped
    test is a group of its own), so that no worker is left finishing a long group alone while
    the other is idle. xdist hands the groups out in the order of their first test here
    (--no-loadscope-reorder; its default would order them by their number of tests, which
    puts every grouped module, slow or not, before every slow ungrouped test). A run without
    xdist keeps the file order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    shared = {item.module.__name__ for item in items
              if any(defs[-1].scope == "module"
                     for defs in item._fixtureinfo.name2fixturedefs.values())}
    groups = {}
    for item in items:
        if item.module.__name__ in shared:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
            group = item.module.__name__
        else:
            group = item.nodeid
        cost = SLOW_WEIGHT if item.get_closest_marker("slow") else 1
        groups[group] = groups.get(group, 0) + cost
        item.stash[_GROUP] = group
    first = {}
    for index, item in enumerate(items):
        first.setdefault(item.stash[_GROUP], index)
    # Stable: a group's tests keep their file order.
    items.sort(key=lambda item: (-groups[item.stash[_GROUP]], first[item.stash[_GROUP]]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With BERT_TF_TEST_CPU_LOG=<file>: one line per test appended to <file>, "<CPU seconds>
    <wall seconds> <node id>" (tab-separated; CPU of this process's threads and of the
    subprocesses it waited for, setup and teardown included), to find the costliest tests of a
    run (`sort -rn <file> | head`). Under xdist every worker appends its own lines."""
    path = os.environ.get("BERT_TF_TEST_CPU_LOG")
    if not path:
        yield
        return
    import resource
    import time

    def cpu():
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    cpu_start, wall_start = cpu(), time.monotonic()
    yield
    line = f"{cpu() - cpu_start:.2f}\t{time.monotonic() - wall_start:.2f}\t{item.nodeid}\n"
    with open(path, "a") as f:  # one write of one line: workers' lines do not interleave
        f.write(line)
