#!/usr/bin/env bash
# The full test suite, on a fresh machine: for each Python asked for, make a virtualenv, install
# the package with its test dependencies, then run pytest (extra arguments are passed to
# pytest). The Jaeger end-to-end tests build Jaeger with the machine's Go on first use (cached
# outside the repo).
#
# The interpreters: python3, then Python 3.9 (EL9's system Python, where GlideinWMS runs:
# python3.9 on PATH, else pyenv's), or GLIDEIN_TRACING_PYTHONS (space-separated) instead.
# GLIDEIN_TRACING_REQUIRE_PY39=1 (CI) fails when no Python 3.9 is found. Each interpreter gets
# its own virtualenv: .venv for the first, .venv-pyX.Y for the others (e.g. .venv-py3.9), and
# its own pytest run (once per version); the exit code is the first non-zero one, after every
# run. GLIDEIN_TRACING_VENV: the first one's virtualenv instead of .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
# the HTML report tests render in headless Chromium, the node's redaction is tested under
# gawk (EL9's awk) beside mawk (Debian's), the forwarder's metrics are scraped by a real
# Prometheus (its promtool checks them and the alert rules), and every shipped shell script
# must pass shellcheck: all from Debian's packages when missing; Jaeger is built by the test
# harness itself with the machine's Go
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v gawk >/dev/null 2>&1 || missing+=(gawk)
{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || missing+=(prometheus)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if [ "${#missing[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: installing ${missing[*]} for the tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
        || echo "tests/run.sh: could not install ${missing[*]}; the tests that need them will say so" >&2
fi
find_python39() {    # the first that runs: pyenv's shim for python3.9 is on PATH but may not
    local candidate
    for candidate in "$(command -v python3.9 || true)" \
            $(ls -d "$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"/versions/3.9*/bin/python3.9 2>/dev/null); do
        if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 9)' 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
}
if [ -n "${GLIDEIN_TRACING_PYTHONS:-}" ]; then
    read -r -a PYTHONS <<< "$GLIDEIN_TRACING_PYTHONS"
else
    PYTHONS=("${PYTHON:-python3}")
    PY39="$(find_python39 || true)"
    if [ -n "$PY39" ]; then
        PYTHONS+=("$PY39")
    elif [ "${GLIDEIN_TRACING_REQUIRE_PY39:-0}" = 1 ]; then
        echo "tests/run.sh: no Python 3.9 (python3.9 on PATH, or pyenv's), and CI needs it" >&2
        exit 2
    else
        echo "tests/run.sh: no Python 3.9 here (python3.9 on PATH, or pyenv's): python3 only" >&2
    fi
fi
status=0
summary=()
failed() { [ "$status" != 0 ] || status=$1; }    # the exit code is the first failure's
for index in "${!PYTHONS[@]}"; do
    python="${PYTHONS[$index]}"
    if ! version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); then
        echo "tests/run.sh: $python is not a runnable Python" >&2
        summary+=("$python: not found")
        failed 2
        continue
    fi
    if [[ " ${done_versions:-} " == *" $version "* ]]; then
        continue        # e.g. python3 is 3.9 already
    fi
    done_versions="${done_versions:-} $version"
    if [ "$index" = 0 ]; then venv="${GLIDEIN_TRACING_VENV:-.venv}"; else venv=".venv-py$version"; fi
    if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$version" ]; then
        echo "tests/run.sh: $venv is not Python $version: set GLIDEIN_TRACING_VENV, or remove $venv" >&2
        summary+=("Python $version ($venv): wrong virtualenv")
        failed 2
        continue
    fi
    echo "tests/run.sh: Python $version ($python), virtualenv $venv" >&2
    started=$SECONDS
    if ! { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } \
            || ! "$venv/bin/python" -m pip install --quiet --upgrade pip \
            || ! "$venv/bin/python" -m pip install --quiet -e '.[test]'; then
        summary+=("Python $version ($venv): the install failed")
        failed 2
        continue
    fi
    echo "tests/run.sh: installed in $((SECONDS - started)) s" >&2
    started=$SECONDS
    if "$venv/bin/python" -m pytest -ra "$@"; then
        summary+=("Python $version ($venv): passed in $((SECONDS - started)) s")
    else
        code=$?
        summary+=("Python $version ($venv): pytest exit $code after $((SECONDS - started)) s")
        failed "$code"
    fi
done
printf 'tests/run.sh: %s\n' "${summary[@]}" >&2
exit "$status"
