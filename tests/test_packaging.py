"""Packages by host: the core (hooks, journal, converter, exporters) and the Frontend's
instrumentor pull no analysis or HTCondor libraries; a verb whose extra is missing says which."""

import json
import re
import subprocess
import sys
from importlib.metadata import requires

from glidein_tracing import __version__

HEAVY = ("numpy", "matplotlib", "msgspec", "duckdb", "pyarrow", "htcondor", "tqdm")
CORE_MODULES = ("glidein_tracing.core.converter", "glidein_tracing.core.journal", "glidein_tracing.core.sections",
                "glidein_tracing.exporters.otlp", "glidein_tracing.exporters.store",
                "glidein_tracing.exporters.otlp_json", "glidein_tracing.core.sampling",
                "glidein_tracing.cli.export", "glidein_tracing.cli.main", "frontend_hooks")


def declared(extra=None):
    """The distribution names the installed package requires, for the core or one extra."""
    out = set()
    for line in requires("glidein_tracing") or ():
        requirement, _, marker = line.partition(";")
        in_extra = re.search(r'extra\s*==\s*"([^"]+)"', marker)
        if (in_extra.group(1) if in_extra else None) == extra:
            out.add(re.split(r"[<>=!~\[ ]", requirement.strip(), 1)[0].lower())
    return out


def test_core_and_frontend_declare_no_analysis_or_htcondor_dependency():
    core = declared()
    assert {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} <= core
    for host in (core, declared("frontend")):
        assert not [name for name in host if name.startswith(HEAVY)], host
    assert {"numpy", "matplotlib"} <= declared("analysis")
    assert "htcondor" in declared("factory")
    assert declared("test") >= declared("factory") | declared("analysis") | declared("frontend")


def test_importing_the_core_and_the_frontend_hooks_loads_no_heavy_library():
    code = (f"import importlib, json, sys\nfor m in {CORE_MODULES!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY + ("htcondor2", "classad2")]


def test_a_verb_whose_extra_is_missing_names_the_extra(tmp_path):
    """As on a Frontend host: DuckDB cannot be imported; `analyze` says what to install."""
    code = ("import sys\n"
            "class NoNumpy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'duckdb':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoNumpy())\n"
            "from glidein_tracing.cli.main import main\n"
            f"sys.exit(main(['analyze', {str(tmp_path)!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    # the wheel built from the checkout, into this interpreter: no package index is claimed
    assert (f"{sys.executable} -m pip install 'dist/glidein_tracing-{__version__}-py3-none-any.whl[analysis]'"
            in done.stderr)
    assert "Traceback" not in done.stderr


def test_the_demo_runs_without_the_frontend_extra(tmp_path):
    """README: `[factory]` runs the demo. Its Frontend cycle uses frontend_hooks (in the
    wheel), not the instrumentation package the [frontend] extra adds."""
    code = ("import sys\n"
            "class NoInstrumentation:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'opentelemetry.instrumentation' or name.startswith('opentelemetry.instrumentation.'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoInstrumentation())\n"
            "from glidein_tracing.cli.main import main\n"
            f"sys.exit(main(['demo', '--glideins', '1', '--store', {str(tmp_path / 'store')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 glidein traces sent to" in done.stdout, done.stderr


def test_why_without_the_htcondor_bindings_names_the_extra(tmp_path):
    """A user's host with the core only: `why` of an ads file or of a job at its schedd names the
    [factory] extra (the bindings), not "no job ad in it" or "cannot ask schedd"."""
    ads = tmp_path / "my-jobs.ads"
    ads.write_text('ClusterId = 15\nProcId = 0\nJobStatus = 1\nMyType = "Job"\n')
    code = ("import sys\n"
            "class NoBindings:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('htcondor', 'htcondor2', 'classad', 'classad2'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoBindings())\n"
            "from glidein_tracing.cli.main import main\n"
            "sys.exit(main(['why', sys.argv[1]]))\n")
    for job in (str(ads), "1234.0@submit01.example.org"):
        done = subprocess.run([sys.executable, "-c", code, job], capture_output=True, text=True)
        assert done.returncode == 2, done.stderr
        assert "which this installation lacks" in done.stderr and "[factory]'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_the_cli_module_run_as_a_script_runs_the_command():
    """`python -m glidein_tracing.cli.main` runs the command as `python -m glidein_tracing`
    does (it exited 0 doing nothing)."""
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing.cli.main", "why", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: glidein-tracing why")
