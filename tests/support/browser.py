"""Headless Chromium for the tests of our HTML pages (the analysis report, the waterfall page):
a page's DOM after load, as a probe script reports it, and a screenshot for people to look at.
Debian's chromium (tests/run.sh installs it); without it a test skips, or fails under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
INSTALL_HINT = "apt-get update && apt-get install -y chromium"
# after load: the bars, the time axis' ticks, what of the verdict and the log tails a reader sees
# without unfolding anything (an element inside a closed <details> has no box), the links
WATERFALL_PROBE = """<script>
window.addEventListener('load', function () {
  function seen(e) { var r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }
  var bars = Array.from(document.querySelectorAll('div.bar')).map(function (b) {
    var r = b.getBoundingClientRect(); return {width: r.width, left: r.left, err: b.classList.contains('err')}; });
  var ticks = Array.from(document.querySelectorAll('span.tick')).map(function (t) {
    return {label: t.textContent, left: t.getBoundingClientRect().left}; });
  var verdict = Array.from(document.querySelectorAll('dl.verdict dt')).filter(seen).map(function (d) {
    return [d.textContent, d.nextElementSibling.textContent]; });
  var tails = Array.from(document.querySelectorAll('pre.tail')).filter(seen).map(function (p) { return p.textContent; });
  var links = {};
  document.querySelectorAll('p.links a').forEach(function (a) { links[a.id] = a.getAttribute('href'); });
  var out = {bars: bars, rows: document.querySelectorAll('tr.span').length, ticks: ticks, verdict: verdict,
             tails: tails, links: links, failedRows: document.querySelectorAll('tr.failed').length};
  var pre = document.createElement('pre');
  pre.textContent = 'PRO' + 'BE:' + JSON.stringify(out) + ':EB' + 'ORP';
  document.body.appendChild(pre);
});
</script>"""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")


def browser() -> str:
    """The browser's path, else skip (fail under CI=true)."""
    import pytest
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    message = f"headless Chromium is not installed (CI must install it: {INSTALL_HINT})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def dom(browser_path: str, page: Path, tmp_path: Path, probe: str) -> dict:
    """What ``probe`` (a script that appends ``PROBE:<json>:EBORP`` to the page) found in
    ``page`` once loaded; the page is copied with the probe beside it."""
    probed = page.with_name("probed-" + page.name)
    probed.write_text(page.read_text().replace("</body>", probe + "</body>"))
    flags = [browser_path, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2000"]
    done = subprocess.run(flags + ["--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert "PROBE:" in done.stdout, done.stderr[-2000:]
    return json.loads(done.stdout.split("PROBE:", 1)[1].split(":EBORP", 1)[0].replace("&amp;", "&"))


def screenshot(browser_path: str, page: Path, out: Path, tmp_path: Path, size: str = "1400,1000") -> Path:
    """A PNG of ``page`` as a reader's window shows it."""
    subprocess.run([browser_path, *FLAGS, "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--window-size={size}", f"--screenshot={out}", page.as_uri()],
                   capture_output=True, timeout=180)
    return out


class DevToolsPage:
    """One tab of headless Chromium driven over the DevTools protocol on a pipe
    (``--remote-debugging-pipe``: commands in on fd 3, answers and events out on fd 4, each
    a JSON message ending in a NUL byte): for pages a test must sign in to, then read. Use
    as a context manager; the browser is killed on leaving it."""

    def __init__(self, browser_path: str, tmp_path: Path):
        import fcntl
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends as fds 3 and 4, set by the shell that execs the browser
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{ends[0]} 4>&{ends[1]} {ends[0]}<&- {ends[1]}>&-', browser_path,
             *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={tmp_path / 'profile-cdp'}",
             "--window-size=1400,2000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=ends)
        for fd in ends:
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self._events: list = []
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.command("Page.enable", session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self._to_browser)
        os.close(self._from_browser)

    def _message(self, timeout: float = 60.0) -> dict:
        import select
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_browser], [], [], timeout)
            if not ready:
                raise TimeoutError("Chromium said nothing")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def command(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            if answer.get("id") == self._next_id:
                assert "error" not in answer, answer
                return answer.get("result", {})
            self._events.append(answer)

    def wait_for_load(self) -> None:
        """Until the tab's page has loaded (after a navigation or a form's post and redirect)."""
        while True:
            while self._events:
                if self._events.pop(0).get("method") == "Page.loadEventFired":
                    return
            self._events.append(self._message())

    def open(self, url: str) -> None:
        self._events.clear()
        self.command("Page.navigate", {"url": url}, session=True)
        self.wait_for_load()

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (DevTools' own evaluation: the
        page's content security policy forbids its scripts, not the inspector's)."""
        result = self.command("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")
