#!/usr/bin/env bash
# The full test suite, on a fresh machine: make a virtualenv, install the package with its
# test dependencies, then run pytest (extra arguments are passed to pytest). The Jaeger
# end-to-end tests build Jaeger with the machine's Go on first use (cached outside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${GLIDEIN_TRACING_VENV:-.venv}"
# the HTML report test renders in headless Chromium (Debian's package); Jaeger is built by
# the test harness itself with the machine's Go
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: installing chromium for the report test" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "tests/run.sh: could not install chromium; the report test will say so" >&2
fi
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e '.[test]'
exec "$VENV/bin/python" -m pytest -ra "$@"
