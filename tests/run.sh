#!/usr/bin/env bash
# The full test suite, on a fresh machine: make a virtualenv, install the package with its
# test dependencies, then run pytest (extra arguments are passed to pytest). The Jaeger
# end-to-end tests build Jaeger with the machine's Go on first use (cached outside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GLIDEIN_TRACING_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e '.[test]'
exec "$VENV/bin/python" -m pytest -ra "$@"
