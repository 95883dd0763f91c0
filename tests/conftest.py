"""Shared pytest fixtures.

Jaeger (tests/support/jaeger_harness.py): tests marked ``jaeger`` use the session fixture ``jaeger``
(a real Jaeger v2 on loopback ports, memory storage) and ``jaeger_query`` (its query client).
Without Go or a cached build they skip with the reason; with ``CI=true`` they fail instead.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.support import jaeger_harness, leftovers


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "jaeger: needs a real Jaeger v2 (built from the Go module with the machine's Go, cached "
        "outside the repo); skipped when it cannot be had, failed instead under CI=true")
    jaeger_harness.set_announcer(_past_capture(config))


def pytest_sessionstart(session):
    """Mark the session's processes (leftovers.py): every child keeping its environment has it."""
    os.environ[leftovers.SESSION_MARK] = f"{os.getpid()}-{time.time_ns()}"


def pytest_sessionfinish(session, exitstatus):
    """No process outlives the suite: any the session left behind (a child, one carrying its
    mark, one in its temporary directories) is listed, killed, and fails the run."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    dirs = [str(factory.getbasetemp())] if factory is not None and factory._basetemp is not None else []
    left = leftovers.check_and_end(os.getpid(), os.environ.get(leftovers.SESSION_MARK, ""), dirs)
    if left:
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        lines = ["processes the test session left behind (now killed):"] + ["  " + line for line in left]
        if reporter is not None:
            reporter.write_sep("=", "left behind", red=True)
            for line in lines:
                reporter.write_line(line)
        else:
            print("\n".join(lines))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _past_capture(config):
    """A writer of lines to the real stderr while pytest captures the tests' output: a
    Jaeger build of tens of minutes says what it does and where its log is, -s or not."""
    import sys

    capture = config.pluginmanager.getplugin("capturemanager")

    def write(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture is not None else _nothing():
            sys.stderr.write(line)
            sys.stderr.flush()
    return write


def _nothing():
    import contextlib
    return contextlib.nullcontext()


_jaeger_failure: list = []


jaeger_unavailable = jaeger_harness.unavailable


@pytest.fixture(scope="session")
def jaeger_binary():
    """Path of a runnable Jaeger binary (built once and cached)."""
    if _jaeger_failure:
        jaeger_unavailable(_jaeger_failure[0])
    try:
        return jaeger_harness.ensure_jaeger()
    except jaeger_harness.JaegerUnavailable as exc:
        _jaeger_failure.append(str(exc))
        jaeger_unavailable(str(exc))


@pytest.fixture(scope="session")
def jaeger(jaeger_binary, tmp_path_factory):
    """A Jaeger running factory_config/jaeger-test.yaml for the whole session."""
    process = jaeger_harness.JaegerProcess(jaeger_binary,
                                           log_dir=tmp_path_factory.mktemp("jaeger"))
    try:
        process.start()
    except jaeger_harness.JaegerUnavailable as exc:
        _jaeger_failure.append(str(exc))
        jaeger_unavailable(str(exc))
    yield process
    process.stop()


@pytest.fixture
def jaeger_query(jaeger):
    return jaeger.query()


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory):
    """A copy of the checkout with ``dist/`` holding the wheel the docs' own command built
    (docs/operators.md, section 1), for the install tests (tests/support/install.py)."""
    from tests.support import install

    checkout = install.copy_checkout(tmp_path_factory.mktemp("checkout") / "glidein_tracing")
    block = install.shell_blocks("operators.md", "## 1. Install")[0]
    install.run_block(block, checkout, {"python3 ": install.this_python() + " "})
    return checkout


@pytest.fixture(autouse=True)
def every_span_within_its_parent(monkeypatch):
    """Every trace any test makes with the converter (in this process) is checked: each span
    lies within its parent (span_nesting). A test whose conversions break the rule errors."""
    from glidein_tracing.core.converter import build as converter_build
    from tests.support.span_nesting import outside_parent

    problems: list = []
    build = converter_build.build

    def checked_build(draft, resource_defaults):
        spans = build(draft, resource_defaults)
        problems.extend(outside_parent(spans))
        return spans

    monkeypatch.setattr(converter_build, "build", checked_build)
    yield
    assert not problems, "spans outside their parent:\n" + "\n".join(problems[:20])
