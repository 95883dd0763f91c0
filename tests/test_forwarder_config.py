"""The forwarder as a service: every setting from one YAML file, each bad key or value named
with its line, the standard OTEL_EXPORTER_OTLP_* variables honoured, flags over the file over
the variables."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from glidein_tracing.cli import forward
from glidein_tracing.cli.main import build_parser
from glidein_tracing.factory import settings

from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein
from tests.support.unprivileged import as_nobody
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "factory_config" / "forwarder.yaml"


def parsed(*argv):
    return build_parser().parse_args(["forward", *argv])


def test_the_example_config_sets_every_key_and_passes_the_check():
    text = EXAMPLE.read_text()
    for key in settings.SETTINGS:          # every key is shown (set or commented)
        assert f"\n{key}:" in text or f"\n# {key}:" in text, key
    _, conf = forward.settings_of(parsed("--config", str(EXAMPLE)))
    assert conf.factory == "gfactory_service" and conf.follow is True
    assert conf.logs == ("/var/log/gwms-factory/client",)


def test_every_key_reaches_the_forwarder_settings(tmp_path):
    values = {"logs": [str(tmp_path)], "factory": "f1", "schedd": "s@f", "factory_config": "/x.xml",
              "entry_schedds": {"E": "s2@f"}, "endpoint": "http://127.0.0.1:1", "headers": {"a": "b"},
              "certificate": "/ca.pem", "compression": "gzip", "timeout": 3.5, "max_request_bytes": 1000,
              "query": "http://127.0.0.1:2", "store": str(tmp_path / "s"), "state": str(tmp_path / "l"),
              "store_max_days": 14.0, "store_max_gb": 2.5,
              "table": str(tmp_path / "t"),
              "grace": 7.0, "sampling_ratio": 0.25, "redact": ["x.y"], "batch_spans": 9,
              "service_name": "svc", "follow": True, "interval": 30.0, "metrics_listen": "127.0.0.1:9101",
              "failure_rules": str(tmp_path / "rules"), "downtimes": [str(tmp_path / "d.xml")]}
    assert set(values) == set(settings.SETTINGS)
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(values))
    _, conf = forward.settings_of(parsed("--config", str(path)))
    assert {k: getattr(conf, k) for k in values} == {k: tuple(v) if isinstance(v, list) else v
                                                     for k, v in values.items()}


def test_every_flag_reaches_the_forwarder_settings(tmp_path):
    given = {"logs": (str(tmp_path),), "factory": "f1", "schedd": "s@f", "factory_config": "/x.xml",
             "entry_schedds": {"E": "s2@f", "F": "s3@f"}, "endpoint": "http://127.0.0.1:1", "timeout": 3.5,
             "max_request_bytes": 1000, "query": "http://127.0.0.1:2", "store": str(tmp_path / "s"),
             "state": str(tmp_path / "l"), "table": str(tmp_path / "t"), "grace": 7.0, "sampling_ratio": 0.25,
             "follow": True, "interval": 30.0, "metrics_listen": "[::1]:9101"}
    assert set(given) == {key for key, setting in settings.SETTINGS.items() if setting.flag}
    argv = [*given["logs"], "--entry-schedd", "E=s2@f", "--entry-schedd", "F=s3@f", "--follow"]
    for key, value in given.items():
        if key not in ("logs", "entry_schedds", "follow"):
            argv += [settings.SETTINGS[key].flag, str(value)]
    _, conf = forward.settings_of(parsed(*argv))
    assert {key: getattr(conf, key) for key in given} == given
    with pytest.raises(settings.ConfigError, match="--entry-schedd wants ENTRY=SCHEDD, not 'E'"):
        forward.settings_of(parsed(str(tmp_path), "--factory", "f", "--entry-schedd", "E"))


def test_flags_override_the_file(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(f"factory: from_file\nlogs: [{tmp_path}]\ngrace: 5\nendpoint: http://file:4318\n")
    _, conf = forward.settings_of(parsed("--config", str(path), "--factory", "from_flag", "--grace", "9"))
    assert (conf.factory, conf.grace, conf.endpoint) == ("from_flag", 9.0, "http://file:4318")


def test_each_bad_key_or_value_is_named_with_its_line(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("factory: f\n"
                    "logs: /not/a/list\n"          # line 2: wrong type
                    "grace: -1\n"                  # line 3: out of range
                    "colour: blue\n"               # line 4: unknown key
                    "sampling_ratio: 2\n"          # line 5: out of range
                    "compression: zip\n")          # line 6: not a choice
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--check-config",
                           "--config", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    for line, words in ((2, "logs: must be a list"), (3, "grace: must be at least"), (4, "unknown key 'colour'"),
                        (5, "sampling_ratio: must be at most 1.0"), (6, "compression: must be one of")):
        assert f"{path}:{line}: {words}" in done.stderr, done.stderr
    # the forwarder refuses to start with the same messages
    started = subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(path)],
                             capture_output=True, text=True)
    assert started.returncode == 2 and f"{path}:4: unknown key 'colour'" in started.stderr


def test_a_file_that_is_not_yaml_says_where(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("factory: f\nlogs: [a, b\ngrace: 3\n")
    with pytest.raises(settings.ConfigError) as caught:
        settings.load(path)
    assert f"{path}:" in str(caught.value) and "not valid YAML" in str(caught.value)


def one_glidein(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 100, 0, T0, returned_stderr(journal_text(layout, 100, 0, T0)))
    return layout


def run_forward(tmp_path, layout, env, *flags):
    config = tmp_path / "f.yaml"
    if not config.exists():
        config.write_text(f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{layout.logs}]\ngrace: 5\n"
                          f"state: {tmp_path / 'ledger.sqlite'}\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(config),
                           "--no-progress", *flags], env={**clean, **env}, capture_output=True, text=True,
                          timeout=120)


def test_the_standard_otel_variables_choose_the_endpoint_and_its_headers(tmp_path, collector):
    layout = one_glidein(tmp_path)
    done = run_forward(tmp_path, layout, {"OTEL_EXPORTER_OTLP_ENDPOINT": collector,
                                          "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=cms"})
    assert done.returncode == 0, done.stderr
    assert {t for t, _ in CountingCollector.received} == {identity(layout, 100, 0).trace_id}
    assert all(h.get("x-tenant") == "cms" for h in CountingCollector.headers_seen)
    assert CountingCollector.headers_seen


def test_the_file_beats_the_variables_and_a_flag_beats_the_file(tmp_path, collector):
    layout = one_glidein(tmp_path)
    config = tmp_path / "f.yaml"
    config.write_text(f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{layout.logs}]\ngrace: 5\n"
                      f"state: {tmp_path / 'ledger.sqlite'}\nendpoint: {collector}\nheaders: {{x-vo: dune}}\n")
    # the variables name a closed port and another value of the header: the file's win (the
    # SDK adds the variables' other headers, as it does for headers given in code)
    done = run_forward(tmp_path, layout, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                                          "OTEL_EXPORTER_OTLP_HEADERS": "x-vo=cms"})
    assert done.returncode == 0, done.stderr
    assert len(CountingCollector.received) > 3
    assert CountingCollector.headers_seen
    assert all(h.get("x-vo") == "dune" for h in CountingCollector.headers_seen)
    # a flag beats the file: --endpoint to a closed port fails the export, nothing more arrives
    before = len(CountingCollector.received)
    (tmp_path / "ledger.sqlite").unlink()
    failed = run_forward(tmp_path, layout, {}, "--endpoint", "http://127.0.0.1:9", "--timeout", "2")
    assert failed.returncode == 1 and len(CountingCollector.received) == before


@pytest.mark.parametrize("key, text", [("sampling_ratio", ".nan"), ("interval", ".nan"), ("timeout", ".inf"),
                                       ("grace", "-.inf"), ("max_request_bytes", ".inf")])
def test_nan_and_infinity_are_refused_in_the_file(tmp_path, key, text):
    path = tmp_path / "f.yaml"
    path.write_text(f"factory: f\nlogs: [{tmp_path}]\n{key}: {text}\n")
    with pytest.raises(settings.ConfigError) as caught:
        settings.load(path)
    assert caught.value.problems[0].startswith(f"{path}:3: {key}: must be ")


@pytest.mark.parametrize("flag, value", [("--timeout", "nan"), ("--interval", "nan"), ("--sampling-ratio", "nan"),
                                         ("--grace", "inf"), ("--timeout", "1e999")])
def test_nan_and_infinity_are_refused_on_the_command_line(tmp_path, flag, value):
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--check-config", "--factory", "f",
                           str(tmp_path), flag, value], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{flag}: must be a finite number" in done.stderr, done.stderr


@pytest.mark.parametrize("argv", [["export", "--journal", "j.gtj", "--timeout", "nan"],
                                  ["export", "--journal", "j.gtj", "--sampling-ratio", "inf"],
                                  ["analyze", "--lost-budget", "nan"], ["status", "--older-than", "9" * 400]])
def test_other_verbs_refuse_nan_and_infinity_with_a_message(tmp_path, argv):
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", *argv], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "finite number" in done.stderr or "not a duration" in done.stderr, done.stderr


def test_the_otel_timeout_variable_is_finite_or_the_default():
    from glidein_tracing.exporters.otlp import otel_timeout_s
    assert otel_timeout_s({"OTEL_EXPORTER_OTLP_TIMEOUT": "inf"}) == 10.0
    assert otel_timeout_s({"OTEL_EXPORTER_OTLP_TIMEOUT": "nan"}) == 10.0
    assert otel_timeout_s({"OTEL_EXPORTER_OTLP_TIMEOUT": "2.5"}) == 2.5


def check_config(tmp_path, config_text, unprivileged=False):
    path = tmp_path / "f.yaml"
    (tmp_path / "logs" / "user_fe" / "glidein_v1" / "entry_E1").mkdir(parents=True, exist_ok=True)
    path.write_text(f"factory: f\nlogs: [{tmp_path / 'logs'}]\n" + config_text)
    cmd = [sys.executable, "-m", "glidein_tracing", "forward", "--check-config", "--config", str(path)]
    if unprivileged:
        cmd = as_nobody(cmd)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})


def test_check_config_refuses_a_state_or_store_it_cannot_write(tmp_path):
    import shutil
    import tempfile
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    done = check_config(tmp_path, f"state: {a_file}/forwarder.sqlite\nstore: {tmp_path / 'store'}\n")
    assert done.returncode == 2
    assert f"state: {a_file}/forwarder.sqlite cannot be created: {a_file} is not a directory" in done.stderr
    # a directory this user may not write (root writes anywhere: check as an unprivileged user)
    root = Path(tempfile.mkdtemp(prefix="gt-check-"))
    try:
        root.chmod(0o755)
        locked = root / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        (root / "f").mkdir()
        (root / "f").chmod(0o777)
        done = check_config(root / "f", f"state: {root / 'f' / 'ledger.sqlite'}\nstore: {locked}/store\n", True)
        assert done.returncode == 2, done.stderr
        assert f"store: {locked}/store cannot be created: {locked} is not writable by this user" in done.stderr
        assert "state:" not in done.stderr
        good = check_config(root / "f", f"state: {root / 'f' / 'ledger.sqlite'}\nstore: {root / 'f' / 's'}\n", True)
        assert good.returncode == 0 and "settings good" in good.stdout, good.stderr
    finally:
        shutil.rmtree(root)


def test_an_endpoint_with_credentials_and_a_bad_port_is_refused_without_its_password(tmp_path):
    done = check_config(tmp_path, f"state: {tmp_path / 'l.sqlite'}\nendpoint: http://gwms:s3cr3t@127.0.0.1:99999\n")
    assert done.returncode == 2 and "endpoint: not a usable URL" in done.stderr
    assert "s3cr3t" not in done.stderr


def test_an_otel_endpoint_variable_with_credentials_and_a_bad_port_is_logged_without_its_password(tmp_path):
    layout = one_glidein(tmp_path)
    done = run_forward(tmp_path, layout, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://gwms:s3cr3t@127.0.0.1:99999"},
                       "--timeout", "2")
    assert done.returncode == 1
    assert "Failed to parse: http://gwms:REDACTED@127.0.0.1:99999" in done.stderr
    assert "s3cr3t" not in done.stderr
