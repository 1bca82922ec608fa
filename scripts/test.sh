#!/usr/bin/env bash
# Installs bert_tf with its pinned dependencies and runs the test suite.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m "not slow"`).
# The tests run in TEST_WORKERS pytest-xdist processes (default 2, one per core of the CI
# machine; tests/conftest.py keeps a module's expensive fixtures on one of them):
# `TEST_WORKERS=0` or a later `-n 0` runs them in this process, as does `-p no:xdist`.
# --no-loadscope-reorder: xdist hands out the groups in the order conftest.py sorted them
# (costliest first), not by their number of tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m pip install --quiet --disable-pip-version-check -r requirements.txt
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
workers=(-n "${TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder)
for arg in "$@"; do
    case "$arg" in
        no:xdist | -pno:xdist) workers=() ;;
    esac
done
exec "$PYTHON" -m pytest -q -ra "${workers[@]}" "$@"
