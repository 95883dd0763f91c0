"""The Factory's client log tree: where activity logs and returned glidein outputs live.

GlideinWMS writes, per Frontend user, instance and entry,
``<client logs>/user_<fename>/glidein_<instance>/entry_<entry>/`` holding the Condor-G
activity logs ``condor_activity_<nr>_<client>.log`` and each glidein's returned
``job.<cluster>.<proc>.out`` / ``.err``. The path alone names the instance and the entry.

An entry directory holds every output the Factory keeps (a week of them: hundreds of
thousands of files), so a pass must not read it whole each time: ``EntryListing`` keeps what
the last listing found and lists the directory again only when its mtime says a file came
or went.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

ENTRY_DIR_RE = re.compile(r"^entry_(?P<entry>.+)$")
INSTANCE_DIR_RE = re.compile(r"^glidein_(?P<instance>.+)$")
ACTIVITY_PREFIX, ACTIVITY_SUFFIX = "condor_activity_", ".log"      # condor_activity_*.log
OUTPUT_RE = re.compile(r"^job\.(?P<cluster>\d+)\.(?P<proc>\d+)\.err$")
# a directory changed this recently may change again within its mtime's resolution (a
# file created in the same clock tick as the listing leaves the mtime as it was): listed again
MTIME_TRUST_S = 2.0


@dataclass(frozen=True)
class EntryDir:
    path: Path
    instance: str
    entry: str


def entry_dir(path: Path) -> EntryDir | None:
    entry = ENTRY_DIR_RE.match(path.name)
    instance = INSTANCE_DIR_RE.match(path.parent.name)
    if not entry or not instance:
        return None
    return EntryDir(path=path, instance=instance.group("instance"), entry=entry.group("entry"))


def find_entry_dirs(roots) -> list[EntryDir]:
    """Every ``glidein_<instance>/entry_<entry>`` directory below the given roots. Entry
    directories are not looked into (they hold the outputs): the walk costs the tree's
    directories, not its files."""
    found = {}
    for root in roots:
        root = Path(root)
        for path in ([root] if root.name.startswith("entry_") else _entry_candidates(root)):
            if path.is_dir():
                parsed = entry_dir(path)
                if parsed:  # keyed and stored by its resolved path: one tree, one ledger key,
                    # whether it was given relative, absolute or through a symlink
                    real = path.resolve()
                    found[real] = EntryDir(path=real, instance=parsed.instance, entry=parsed.entry)
    return [found[key] for key in sorted(found)]


def _entry_candidates(root: Path):
    """Directories named ``entry_*`` below ``root`` (symlinks to directories included, as a
    glob finds them), without descending into them."""
    todo = [root]
    while todo:
        directory = todo.pop()
        try:
            with os.scandir(directory) as children:
                subdirs = [Path(child.path) for child in children if _is_dir(child)]
        except OSError:
            continue
        for path in subdirs:
            if path.name.startswith("entry_") and INSTANCE_DIR_RE.match(path.parent.name):
                yield path
            elif not os.path.islink(path):
                todo.append(path)


def _is_dir(child: os.DirEntry) -> bool:
    try:
        return child.is_dir()
    except OSError:
        return False


def output_name(cluster: int, proc: int) -> str:
    """The name of a glidein's returned stderr in its entry directory."""
    return f"job.{cluster}.{proc}.err"


def parse_output_name(name: str):
    """(cluster, proc) of a returned stderr's name, else None."""
    match = OUTPUT_RE.match(name)
    return (int(match.group("cluster")), int(match.group("proc"))) if match else None


class EntryListing:
    """What one entry directory held at its last listing: every name in it, its activity logs,
    and the returned stderrs ``waiting`` to be looked at (the ledger does not know their
    glidein yet). ``refresh`` lists the directory again only when its mtime moved, and then
    only names that came since are looked at: the first listing leaves out those the ledger
    knows (``known``), later ones those the last listing had."""

    def __init__(self, entry: EntryDir, known: set):
        self.entry = entry
        self.waiting: set = set()       # names of returned stderrs not settled yet
        self.activity_logs: list = []
        self._names: frozenset = frozenset()
        self._known = known             # for the first listing only
        self._mtime_ns = None

    def refresh(self) -> bool:
        """List the directory again if a file came or went since; whether it was listed."""
        try:
            st = os.stat(self.entry.path)
        except OSError:
            return False
        if st.st_mtime_ns == self._mtime_ns:
            return False
        listed_at = time.time()
        names = frozenset(os.listdir(self.entry.path))
        new = names - self._names
        self.waiting = {n for n in self.waiting if n in names}
        self.waiting.update(n for n in new if n.endswith(".err") and n not in self._known and OUTPUT_RE.match(n))
        logs = [p for p in self.activity_logs if p.name in names]
        logs += [self.entry.path / n for n in new if n.startswith(ACTIVITY_PREFIX) and n.endswith(ACTIVITY_SUFFIX)]
        self.activity_logs = sorted(logs)
        self._names, self._known = names, frozenset()
        self._mtime_ns = st.st_mtime_ns if listed_at - st.st_mtime > MTIME_TRUST_S else None
        return True

    def settle(self, name: str):
        self.waiting.discard(name)
