#!/usr/bin/env bash
# Installs bert_tf with its pinned dependencies and runs the test suite.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m "not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m pip install --quiet --disable-pip-version-check -r requirements.txt
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
exec "$PYTHON" -m pytest -q -ra "$@"
