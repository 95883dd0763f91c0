"""Installing as operators do: docs/operators.md's commands, as written, build the wheel from
the checkout and install it with the [factory] extra into a fresh virtualenv of the Python
running the tests (3.9 in CI's 3.9 run, as EL9's system python3); the forwarder installed so
forwards a glidein, and the systemd unit's ExecStart, run from that virtualenv, stops for good
on a configuration error (RestartPreventExitStatus= holds its exit codes)."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from glidein_tracing import __version__
from glidein_tracing.core.errors import EXIT_LEDGER, EXIT_USAGE
from glidein_tracing.exporters.store import read_store
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from tests.support import install
from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein

UNIT = install.ROOT / "factory_config" / "glidein-tracing-forwarder.service"
OPT = "/opt/glidein-tracing"           # where docs/operators.md puts the forwarder's virtualenv


def unit_settings() -> dict:
    """The unit file's settings, name -> values (continuation lines joined)."""
    out: dict = {}
    for line in UNIT.read_text().replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            name, _, value = line.partition("=")
            out.setdefault(name.strip(), []).append(" ".join(value.split()))
    return out


@pytest.fixture(scope="module")
def factory_venv(built_wheel, tmp_path_factory):
    """docs/operators.md's install block, run as written with /opt moved under tmp."""
    opt = tmp_path_factory.mktemp("opt") / "glidein-tracing"
    block = install.shell_blocks("operators.md", "## 1. Install")[1]
    done = install.run_block(block, built_wheel, {OPT: str(opt), "python3 -m venv": install.this_python() + " -m venv"})
    assert __version__ in done.stdout
    return opt


def test_the_unit_stops_retrying_on_the_configuration_exit_codes_only():
    unit = unit_settings()
    assert unit["Restart"] == ["on-failure"]
    prevented = {int(code) for code in unit["RestartPreventExitStatus"][0].split()}
    assert prevented == {EXIT_USAGE, EXIT_LEDGER}
    # systemd applies RestartPreventExitStatus= to the main process only: a check in
    # ExecStartPre= that fails would be retried every RestartSec
    assert "ExecStartPre" not in unit


def test_the_docs_install_gives_a_forwarder_that_forwards(factory_venv, tmp_path):
    venv_bin = factory_venv / "venv" / "bin"
    imported = subprocess.run([str(venv_bin / "python"), "-c",
                               "import htcondor2, classad2, pyarrow, duckdb, re2, msgspec, yaml, tqdm"],
                              capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 100, 0, T0, returned_stderr(journal_text(layout, 100, 0, T0)))
    done = subprocess.run([str(venv_bin / "glidein-tracing"), "forward", str(layout.logs), "--factory", FACTORY,
                           "--schedd", SCHEDD, "--store", str(tmp_path / "store"),
                           "--state", str(tmp_path / "ledger.sqlite"), "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert identity(layout, 100, 0).trace_id in read_store(tmp_path / "store")


def test_the_units_execstart_runs_the_docs_venv_and_ends_with_a_prevented_code(factory_venv, tmp_path):
    unit = unit_settings()
    prevented = {int(code) for code in unit["RestartPreventExitStatus"][0].split()}
    (exec_start,) = unit["ExecStart"]
    assert exec_start.startswith(f"{OPT}/venv/bin/glidein-tracing forward --config ")
    argv = [arg.replace(OPT, str(factory_venv)) for arg in shlex.split(exec_start)]
    config = argv.index("--config") + 1

    # the shipped forwarder.yaml with its placeholders unfilled: a configuration error
    argv[config] = str(install.ROOT / "factory_config" / "forwarder.yaml")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE and done.returncode in prevented, done.stderr

    # a ledger that is not one: the other code an operator must act on
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 100, 0, T0, returned_stderr(journal_text(layout, 100, 0, T0)))
    (tmp_path / "ledger.sqlite").write_text("not a ledger\n")
    (tmp_path / "forwarder.yaml").write_text(
        f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{tmp_path / 'logs'}]\nstore: {tmp_path / 'store'}\n"
        f"state: {tmp_path / 'ledger.sqlite'}\n")
    argv[config] = str(tmp_path / "forwarder.yaml")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_LEDGER and done.returncode in prevented, done.stderr


def test_the_docs_upgrade_replaces_a_wheel_of_the_same_version(factory_venv, tmp_path):
    """docs/operators.md's upgrade block, after a new build of the same version number (pip
    keeps an installed version as it is without --force-reinstall): the new code is what runs."""
    checkout = install.copy_checkout(tmp_path / "glidein_tracing")
    marker = "# a later build of the same version"
    with open(checkout / "glidein_tracing" / "__init__.py", "a") as init:
        init.write(f"\n{marker}\n")
    install.run_block(install.shell_blocks("operators.md", "## 1. Install")[0], checkout,
                      {"python3 ": install.this_python() + " "})
    block = install.shell_blocks("operators.md", "## 1. Install")[2]
    install.run_block(block, checkout, {OPT: str(factory_venv), "systemctl restart glidein-tracing-forwarder": "true"})
    python = factory_venv / "venv" / "bin" / "python"
    code = "import glidein_tracing; print(open(glidein_tracing.__file__).read())"   # -I: not the checkout in cwd
    installed = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert marker in installed
