"""A real Jaeger v2 for the test suite: build it once, run it for a session, query it.

Build: Jaeger is a Go program; we build the pinned module version with the machine's Go into a
cache outside the repository and reuse it. ``go install module/cmd/jaeger@version`` refuses
modules whose go.mod has ``replace`` directives (Jaeger's has one), so the harness writes a
throwaway wrapper module (go.mod requiring Jaeger with the same replace lines, a tools.go that
imports the command, Jaeger's own go.sum plus the pinned hashes of the Jaeger module itself)
and runs ``go build`` in it. The checksum database is not reachable from every build host, so
the build runs with GOSUMDB=off and relies on the go.sum: Jaeger's own, for its dependencies,
and the two hashes pinned below for the Jaeger module. After the build the harness checks that
Go added nothing unverified to that go.sum.

Run: :class:`JaegerProcess` starts the binary with a config (default
``factory_config/jaeger-test.yaml``) whose listeners all bind to 127.0.0.1 on free ports
passed in the environment, in its own process group, with a parent-death signal, an atexit
hook and a watchdog timer, so it never outlives the test session.

Query: :class:`JaegerQuery` reads ``/api/services``, ``/api/traces/{id}`` (v1 JSON) and
``/api/v3/traces/{id}`` (OTLP JSON), retrying (bounded) until the expected spans arrive.

Environment:
- ``GLIDEIN_TRACING_JAEGER_BIN``: use this binary, build nothing.
- ``GLIDEIN_TRACING_CACHE``: cache root (default ``$XDG_CACHE_HOME`` or ``~/.cache``, then
  ``glidein_tracing/jaeger-<version>/jaeger``).
- ``GLIDEIN_TRACING_JAEGER_BUILD=0``: never build; use the cache or give up.
- ``GLIDEIN_TRACING_JAEGER_BUILD_TIMEOUT`` (s, default 3600),
  ``GLIDEIN_TRACING_JAEGER_MAX_LIFETIME`` (s, default 3600: the watchdog kills Jaeger then).
- ``CI=true``: tests that need Jaeger fail instead of skipping when it cannot be had.

Command line: ``python -m tests.support.jaeger_harness build`` (build or show the cached binary),
``python -m tests.support.jaeger_harness run`` (run the test config in the foreground, print ports).
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST_CONFIG = REPO / "factory_config" / "jaeger-test.yaml"

JAEGER_MODULE = "github.com/jaegertracing/jaeger"
JAEGER_PACKAGE = JAEGER_MODULE + "/cmd/jaeger"
# v1.76.0 is the Go module version of Jaeger v2.13.0 (Jaeger tags each release twice; plain
# v2.x tags are not valid Go module versions for this module path). Pinned, with its hashes.
JAEGER_VERSION = "v1.76.0"
JAEGER_RELEASE = "v2.13.0"
JAEGER_SUM = "h1:sWCOOF1dr+NL0PLil7mFo3BqqQL8k4WiM7aguFbc14g="
JAEGER_GOMOD_SUM = "h1:hqcuJlLDTv7G2x5eFd/BhwcPdLxj3N+90aKhIzdOcKo="
WRAPPER_MODULE = "jaegerbuild"

LOOPBACK = "127.0.0.1"


class JaegerUnavailable(Exception):
    """Jaeger cannot be built or started here (the reason is the message)."""


# ---------------------------------------------------------------------------------------------
# Telling the person waiting: a cold build takes up to tens of minutes

_announcer = None            # how a line reaches the person (conftest: past pytest's capture)
BUILD_NEWS_S = 60.0          # while a build runs, a line this often on a terminal ...
BUILD_NEWS_QUIET_S = 300.0   # ... and this often in a log (CI)


def set_announcer(write) -> None:
    """Lines for the person waiting go through ``write(line)`` (tests/conftest.py passes one
    that suspends pytest's capture, so they reach the terminal even without ``-s``)."""
    global _announcer
    _announcer = write


def announce(text: str) -> None:
    """One line on stderr, for the person waiting on a build (even under pytest)."""
    line = f"jaeger harness: {text}\n"
    if _announcer is not None:
        _announcer(line)
        return
    sys.stderr.write(line)
    sys.stderr.flush()


class _BuildNews:
    """While a build step runs: a line now, then one every so often with the time it has
    taken and the build log's last line, so a long build is not taken for a hung one."""

    def __init__(self, what: str, doing: str, log_path: Path, started: float):
        self.what, self.doing, self.log_path, self.started = what, doing, log_path, started
        self._stop = threading.Event()
        try:
            every = BUILD_NEWS_S if sys.__stderr__ is not None and sys.__stderr__.isatty() else BUILD_NEWS_QUIET_S
        except ValueError:
            every = BUILD_NEWS_QUIET_S
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)

    def __enter__(self):
        announce(f"{self.what} (log: {self.log_path})")
        self._thread.start()
        return self

    def _run(self, every: float):
        while not self._stop.wait(every):
            last = _log_tail(self.log_path, 1).strip()[:120]
            minutes = (time.monotonic() - self.started) / 60
            announce(f"still {self.doing}: {minutes:.0f} min so far"
                     + (f"; log's last line: {last}" if last else "") + f" (log: {self.log_path})")

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str):
    """Skip the current test because Jaeger cannot be had, or, under CI=true, fail it."""
    import pytest
    if in_ci():
        pytest.fail(f"Jaeger is required under CI=true: {reason}", pytrace=False)
    pytest.skip(f"Jaeger unavailable: {reason}")


# ---------------------------------------------------------------------------------------------
# Build

def cache_root() -> Path:
    root = os.environ.get("GLIDEIN_TRACING_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "glidein_tracing"


def cached_binary_path(version: str = JAEGER_VERSION) -> Path:
    return cache_root() / f"jaeger-{version}" / "jaeger"


def find_go() -> str | None:
    found = shutil.which("go")
    if found:
        return found
    for candidate in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def binary_works(path: Path) -> bool:
    """True when ``path`` is an executable Jaeger that answers ``jaeger version``."""
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        done = subprocess.run([str(path), "version"], capture_output=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        return done.returncode == 0 and "gitVersion" in json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError, TypeError):
        return False


def _go_env(go: str) -> dict:
    env = dict(os.environ)
    env.update({
        # -mod=mod: the wrapper's go.mod lists only Jaeger; Go fills in the module graph.
        "GOFLAGS": "-mod=mod",
        # The checksum database is not reachable from every build host; go.sum is the source
        # of integrity (Jaeger's own go.sum and the pinned Jaeger hashes), checked afterwards.
        "GOSUMDB": "off",
        "GOTOOLCHAIN": "local",
        "GOWORK": "off",
    })
    go_dir = str(Path(go).parent)
    env["PATH"] = go_dir + os.pathsep + env.get("PATH", "")
    return env


def _run_go(go, args, cwd, env, log, timeout):
    log.write(f"$ go {' '.join(args)}\n")
    log.flush()
    try:
        done = subprocess.run([go, *args], cwd=cwd, env=env, stdout=log,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise JaegerUnavailable(f"go {args[0]} timed out after {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise JaegerUnavailable(f"go {' '.join(args)} failed (exit {done.returncode})")


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def _replace_lines(gomod_text: str) -> list[str]:
    """The ``replace`` directives of a go.mod, one ``old => new`` string each."""
    result, block = [], False
    for raw in gomod_text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if block:
            if line == ")":
                block = False
            elif line:
                result.append(line)
        elif line == "replace (":
            block = True
        elif line.startswith("replace "):
            result.append(line[len("replace "):].strip())
    return result


def build_jaeger(dest: Path, *, go: str | None = None, timeout: float | None = None) -> dict:
    """Build the pinned Jaeger into ``dest`` (atomically) and return build facts."""
    go = go or find_go()
    if not go:
        raise JaegerUnavailable("no Go toolchain (go) found to build Jaeger")
    if timeout is None:
        timeout = float(os.environ.get("GLIDEIN_TRACING_JAEGER_BUILD_TIMEOUT", "3600"))
    deadline = time.monotonic() + timeout
    dest.parent.mkdir(parents=True, exist_ok=True)
    env = _go_env(go)
    log_path = dest.parent / "build.log"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jaegerbuild-") as work, \
            open(log_path, "w") as log:
        work_dir = Path(work)
        # 1. Fetch the Jaeger module itself (verified against the pinned hash by Go, since the
        #    hash is in the go.sum we write before the download).
        (work_dir / "go.mod").write_text(f"module {WRAPPER_MODULE}\n\ngo 1.21\n")
        (work_dir / "go.sum").write_text(
            f"{JAEGER_MODULE} {JAEGER_VERSION} {JAEGER_SUM}\n"
            f"{JAEGER_MODULE} {JAEGER_VERSION}/go.mod {JAEGER_GOMOD_SUM}\n")
        info_path = work_dir / "download.json"
        with open(info_path, "w") as info_out, \
                _BuildNews(f"downloading {JAEGER_MODULE}@{JAEGER_VERSION}", "downloading",
                           log_path, started):
            try:
                done = subprocess.run(
                    [go, "mod", "download", "-json", f"{JAEGER_MODULE}@{JAEGER_VERSION}"],
                    cwd=work, env=env, stdout=info_out, stderr=log,
                    stdin=subprocess.DEVNULL, timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                raise JaegerUnavailable("go mod download timed out") from exc
        try:
            info = json.loads(info_path.read_text())
        except ValueError:
            info = {}
        if done.returncode != 0 or info.get("Error") or not info.get("Dir"):
            raise JaegerUnavailable(
                f"cannot download {JAEGER_MODULE}@{JAEGER_VERSION}: "
                f"{info.get('Error') or _log_tail(log_path, 5)}")
        if info.get("Sum") != JAEGER_SUM or info.get("GoModSum") != JAEGER_GOMOD_SUM:
            raise JaegerUnavailable(
                f"{JAEGER_MODULE}@{JAEGER_VERSION} hash mismatch: got {info.get('Sum')} "
                f"{info.get('GoModSum')}, pinned {JAEGER_SUM} {JAEGER_GOMOD_SUM}")
        module_dir = Path(info["Dir"])
        jaeger_gomod = Path(info["GoMod"]).read_text()
        jaeger_gosum = (module_dir / "go.sum").read_text()

        # 2. The wrapper module: requires Jaeger, repeats its replace directives and its go
        #    version (any Go at least that new can build it; GOTOOLCHAIN=local: no download).
        replaces = _replace_lines(jaeger_gomod)
        go_line = next((line.strip() for line in jaeger_gomod.splitlines()
                        if line.startswith("go ")), "go 1.24")
        gomod = [f"module {WRAPPER_MODULE}", "", go_line, "",
                 f"require {JAEGER_MODULE} {JAEGER_VERSION}", ""]
        gomod += [f"replace {line}" for line in replaces]
        (work_dir / "go.mod").write_text("\n".join(gomod) + "\n")
        (work_dir / "tools.go").write_text(
            "//go:build tools\n\npackage tools\n\nimport _ \"" + JAEGER_PACKAGE + "\"\n")
        trusted = jaeger_gosum.rstrip("\n") + "\n" + \
            f"{JAEGER_MODULE} {JAEGER_VERSION} {JAEGER_SUM}\n" + \
            f"{JAEGER_MODULE} {JAEGER_VERSION}/go.mod {JAEGER_GOMOD_SUM}\n"
        (work_dir / "go.sum").write_text(trusted)

        # 3. Build into a temporary name, then move into place.
        partial = dest.with_name(dest.name + f".partial-{os.getpid()}")
        try:
            stamp = f"-X {JAEGER_MODULE}/internal/version.latestVersion={JAEGER_RELEASE}"
            with _BuildNews(f"building Jaeger {JAEGER_RELEASE} with {go} into {dest} (a first build takes "
                            "10 to 40 minutes)", "building Jaeger", log_path, started):
                _run_go(go, ["build", "-ldflags", stamp, "-o", str(partial), JAEGER_PACKAGE],
                        work, env, log,
                        max(1.0, deadline - time.monotonic()))
            added = set((work_dir / "go.sum").read_text().splitlines()) - \
                set(trusted.splitlines())
            if added:
                raise JaegerUnavailable(
                    "the build used module hashes not in Jaeger's go.sum (unverified with "
                    "GOSUMDB=off): " + ", ".join(sorted(added)[:5]))
            if not binary_works(partial):
                raise JaegerUnavailable(f"the built binary {partial} does not run")
            os.replace(partial, dest)
        finally:
            if partial.exists():
                partial.unlink()
    facts = {
        "module": f"{JAEGER_MODULE}@{JAEGER_VERSION}",
        "release": JAEGER_RELEASE,
        "go": subprocess.run([go, "version"], capture_output=True, text=True).stdout.strip(),
        "build_seconds": round(time.monotonic() - started, 1),
        "size_bytes": dest.stat().st_size,
        "replaces": replaces,
    }
    (dest.parent / "build-info.json").write_text(json.dumps(facts, indent=1) + "\n")
    return facts


def ensure_jaeger(*, build: bool | None = None) -> Path:
    """Return a runnable Jaeger binary: the override, the cache, or a fresh build."""
    override = os.environ.get("GLIDEIN_TRACING_JAEGER_BIN")
    if override:
        path = Path(override)
        if not binary_works(path):
            raise JaegerUnavailable(f"GLIDEIN_TRACING_JAEGER_BIN={override} does not run")
        return path
    dest = cached_binary_path()
    if binary_works(dest):
        return dest
    if build is None:
        build = os.environ.get("GLIDEIN_TRACING_JAEGER_BUILD", "1").strip() not in ("0", "no")
    if not build:
        raise JaegerUnavailable(f"no Jaeger at {dest} and building is off "
                                "(GLIDEIN_TRACING_JAEGER_BUILD=0)")
    if not find_go():
        raise JaegerUnavailable(
            f"no Go toolchain to build Jaeger {JAEGER_RELEASE} ({JAEGER_MODULE}@"
            f"{JAEGER_VERSION}) and no cached binary at {dest}; install Go or set "
            "GLIDEIN_TRACING_JAEGER_BIN")
    dest.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time (pytest-xdist workers, parallel sessions).
    with open(dest.parent / ".build.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with _BuildNews(f"another process is building Jaeger into {dest}: waiting for it",
                            "waiting for the other build", dest.parent / "build.log", time.monotonic()):
                fcntl.flock(lock, fcntl.LOCK_EX)
        if binary_works(dest):
            return dest
        started = time.monotonic()
        try:
            facts = build_jaeger(dest)
        except JaegerUnavailable as exc:
            tail = _log_tail(dest.parent / "build.log")
            announce(f"the build failed after {(time.monotonic() - started) / 60:.0f} min: {exc}")
            raise JaegerUnavailable(f"{exc}\n--- {dest.parent / 'build.log'} (tail):\n{tail}")
        announce(f"built {dest} in {facts['build_seconds'] / 60:.1f} min; later sessions reuse it")
    return dest


# ---------------------------------------------------------------------------------------------
# Run

def free_loopback_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 right now (held together while choosing)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _set_parent_death_signal():  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort; atexit and the watchdog remain
        pass


@dataclass
class Socket:
    proto: str       # tcp, tcp6, udp, udp6
    address: str     # textual IP
    port: int
    state: str       # LISTEN, ESTABLISHED, ... (UDP: UNCONN or ESTABLISHED)

    @property
    def loopback(self) -> bool:
        return self.address.startswith("127.") or self.address in ("::1",
                                                                    "::ffff:127.0.0.1")


_TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "06": "TIME_WAIT", "07": "CLOSE",
               "08": "CLOSE_WAIT", "0A": "LISTEN"}


def _decode_address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    # IPv6 in /proc is four little-endian 32-bit words.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def process_sockets(pid: int) -> list[Socket]:
    """The TCP/UDP sockets that process ``pid`` holds, from /proc (no ss needed)."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for entry in fd_dir.iterdir():
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{proto}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10 or cols[9] not in inodes:
                continue
            addr, port = cols[1].rsplit(":", 1)
            state = cols[3]
            if proto.startswith("udp"):
                state_name = "ESTABLISHED" if state == "01" else "UNCONN"
            else:
                state_name = _TCP_STATES.get(state, state)
            found.append(Socket(proto, _decode_address(addr), int(port, 16), state_name))
    return found


class JaegerProcess:
    """One running Jaeger; use as a context manager or call start()/stop()."""

    def __init__(self, binary: Path, config: Path = TEST_CONFIG, *, log_dir: Path | None = None,
                 extra_env: dict | None = None, max_lifetime: float | None = None,
                 max_traces: int = 10000, ready_timeout: float = 60.0,
                 tls_ca: Path | None = None):
        """``tls_ca``: the config serves OTLP and the query API over TLS with a certificate
        this CA file verifies (URLs become https)."""
        self.binary = Path(binary)
        self.config = Path(config)
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="jaeger-"))
        self.extra_env = dict(extra_env or {})
        if max_lifetime is None:
            max_lifetime = float(os.environ.get("GLIDEIN_TRACING_JAEGER_MAX_LIFETIME", "3600"))
        self.max_lifetime = max_lifetime
        self.max_traces = max_traces
        self.ready_timeout = ready_timeout
        self.tls_ca = Path(tls_ca) if tls_ca else None
        self.scheme = "https" if tls_ca else "http"
        self.proc: subprocess.Popen | None = None
        self.ports: dict = {}
        self.log_path = self.log_dir / "jaeger.log"
        self._watchdog: threading.Timer | None = None

    # URLs
    @property
    def otlp_endpoint(self) -> str:
        """OTLP/HTTP base URL (the SDK exporter appends /v1/traces)."""
        return f"{self.scheme}://{LOOPBACK}:{self.ports['otlp_http']}"

    @property
    def query_url(self) -> str:
        return f"{self.scheme}://{LOOPBACK}:{self.ports['query_http']}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def query(self) -> "JaegerQuery":
        return JaegerQuery(self.query_url, ca_file=self.tls_ca)

    def log_tail(self, lines: int = 30) -> str:
        return _log_tail(self.log_path, lines)

    def start(self) -> "JaegerProcess":
        last_error = None
        for _attempt in range(3):  # a chosen port can be taken before Jaeger binds it
            try:
                self._start_once()
                return self
            except JaegerUnavailable as exc:
                last_error = exc
                self.stop()
                if "address already in use" not in str(exc):
                    break
        raise last_error

    def _start_once(self):
        otlp, query_http, query_grpc = free_loopback_ports(3)
        self.ports = {"otlp_http": otlp, "query_http": query_http, "query_grpc": query_grpc}
        env = dict(os.environ)
        env.update({
            "GT_JAEGER_OTLP_HTTP": f"{LOOPBACK}:{otlp}",
            "GT_JAEGER_QUERY_HTTP": f"{LOOPBACK}:{query_http}",
            "GT_JAEGER_QUERY_GRPC": f"{LOOPBACK}:{query_grpc}",
            "GT_JAEGER_MAX_TRACES": str(self.max_traces),
        })
        # Jaeger's own SDK must not try to export anywhere.
        for name in list(env):
            if name.startswith("OTEL_"):
                del env[name]
        env.update(self.extra_env)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [str(self.binary), "--config", f"file:{self.config}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=str(self.log_dir), start_new_session=True,
                preexec_fn=_set_parent_death_signal)
        finally:
            log.close()
        atexit.register(self.stop)
        if self.max_lifetime > 0:
            self._watchdog = threading.Timer(self.max_lifetime, self._kill_group,
                                             args=(signal.SIGKILL,))
            self._watchdog.daemon = True
            self._watchdog.start()
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + self.ready_timeout
        client = self.query()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise JaegerUnavailable(
                    f"Jaeger exited with {code} during start-up:\n{self.log_tail()}")
            try:
                client.services()
                with socket.create_connection((LOOPBACK, self.ports["otlp_http"]), timeout=1):
                    pass
                return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise JaegerUnavailable(
                    f"Jaeger not ready after {self.ready_timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.2)

    def _kill_group(self, sig):
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)  # its own session: the group id is its pid
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 10.0) -> int | None:
        """Terminate, then kill; return the exit status (None when never started)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._kill_group(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_group(signal.SIGKILL)
                proc.wait(timeout)
        try:
            atexit.unregister(self.stop)
        except Exception:  # noqa: BLE001
            pass
        return proc.returncode

    def sockets(self) -> list[Socket]:
        return process_sockets(self.proc.pid)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------------------------
# Query

class JaegerQuery:
    """A small client of Jaeger's query API (v1 JSON and v3 OTLP JSON)."""

    def __init__(self, base_url: str, timeout: float = 10.0, ca_file=None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None

    def get(self, path: str, params: dict | None = None):
        """GET a JSON document; return (status, parsed body or None)."""
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=self.timeout,
                                        context=self.context) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            body = exc.read()
            try:
                return exc.code, json.loads(body)
            except ValueError:
                return exc.code, None

    def services(self) -> list[str]:
        status, body = self.get("/api/services")
        if status != 200 or not isinstance(body, dict):
            raise ValueError(f"/api/services answered {status}")
        return body.get("data") or []

    def wait_for_services(self, names, *, timeout: float = 30.0) -> list[str]:
        """Poll /api/services until it lists every name (Jaeger indexes what it receives
        asynchronously: right after an export the services may not be listed yet)."""
        deadline = time.monotonic() + timeout
        while True:
            listed = self.services()
            if set(names) <= set(listed) or time.monotonic() > deadline:
                return listed
            time.sleep(0.25)

    def trace_v1(self, trace_id: str, *, raw: bool = False) -> dict | None:
        """The v1 JSON trace (``{"traceID", "spans", "processes"}``) or None when unknown."""
        params = {"raw": "true"} if raw else None
        status, body = self.get(f"/api/traces/{trace_id}", params)
        if status == 404:
            return None
        if status != 200:
            raise ValueError(f"/api/traces/{trace_id} answered {status}: {body}")
        data = (body or {}).get("data") or []
        return data[0] if data else None

    def trace_v3(self, trace_id: str, *, raw: bool = False) -> dict | None:
        """The OTLP JSON ``{"resourceSpans": [...]}`` of a trace, or None when unknown."""
        params = {"raw_traces": "true"} if raw else None
        status, body = self.get(f"/api/v3/traces/{trace_id}", params)
        if status == 404:
            return None
        if status != 200:
            raise ValueError(f"/api/v3/traces/{trace_id} answered {status}: {body}")
        return (body or {}).get("result")

    def wait_for_trace(self, trace_id: str, span_ids=(), *, min_spans: int = 1,
                       timeout: float = 30.0, api: str = "v1", raw: bool = False) -> dict:
        """Poll until the trace has ``min_spans`` spans and every id in ``span_ids``."""
        wanted = {s.lower() for s in span_ids}
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = self.trace_v1(trace_id, raw=raw) if api == "v1" else \
                self.trace_v3(trace_id, raw=raw)
            if last is not None:
                have = [s["spanID"] for s in last["spans"]] if api == "v1" else \
                    [s["spanId"] for s in v3_spans(last)]
                if len(have) >= min_spans and wanted <= set(have):
                    return last
            if time.monotonic() > deadline:
                have = None if last is None else len(
                    last["spans"] if api == "v1" else v3_spans(last))
                raise AssertionError(
                    f"trace {trace_id} not complete in Jaeger after {timeout:.0f} s "
                    f"({api}: {have} spans, wanted >= {min_spans} and {sorted(wanted)})")
            time.sleep(0.25)


# Helpers to read the answers --------------------------------------------------------------

def v1_spans_by_id(trace: dict) -> dict:
    return {span["spanID"]: span for span in trace["spans"]}


def v1_tags(span_or_process: dict) -> dict:
    return {tag["key"]: tag["value"] for tag in span_or_process.get("tags") or []}


def v1_references(span: dict, ref_type: str) -> list[tuple[str, str]]:
    """[(traceID, spanID)] of a span's references of one type (CHILD_OF, FOLLOWS_FROM)."""
    return [(ref["traceID"], ref["spanID"]) for ref in span.get("references") or []
            if ref["refType"] == ref_type]


def v1_parent(span: dict) -> str | None:
    parents = v1_references(span, "CHILD_OF")
    return parents[0][1] if parents else None


def v1_process(trace: dict, span: dict) -> dict:
    return trace["processes"][span["processID"]]


def v3_attr_value(value: dict):
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [v3_attr_value(v) for v in value["arrayValue"].get("values", [])]
    return value


def v3_attrs(obj: dict) -> dict:
    return {a["key"]: v3_attr_value(a.get("value", {})) for a in obj.get("attributes") or []}


def v3_spans(result: dict) -> list[dict]:
    """Every span of a v3 result, each with its resource under ``_resource``."""
    spans = []
    for rs in result.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for span in ss.get("spans") or []:
                spans.append(dict(span, _resource=rs.get("resource") or {}))
    return spans


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else "build"
    try:
        binary = ensure_jaeger()
    except JaegerUnavailable as exc:
        print(f"Jaeger unavailable: {exc}", file=sys.stderr)
        return 1
    info = binary.parent / "build-info.json"
    print(f"jaeger: {binary} ({binary.stat().st_size} bytes)")
    if info.exists():
        print(info.read_text().strip())
    if command == "run":
        config = Path(argv[1]) if len(argv) > 1 else TEST_CONFIG
        with JaegerProcess(binary, config, max_lifetime=0) as jaeger:
            print(f"OTLP/HTTP {jaeger.otlp_endpoint}  query {jaeger.query_url}  "
                  f"pid {jaeger.pid}  log {jaeger.log_path}", flush=True)
            try:
                jaeger.proc.wait()
            except KeyboardInterrupt:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
