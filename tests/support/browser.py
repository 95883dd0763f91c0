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
