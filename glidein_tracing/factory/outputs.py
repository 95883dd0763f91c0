"""The Factory's client log tree: where activity logs and returned glidein outputs live.

GlideinWMS writes, per Frontend user, instance and entry,
``<client logs>/user_<fename>/glidein_<instance>/entry_<entry>/`` holding the Condor-G
activity logs ``condor_activity_<nr>_<client>.log`` and each glidein's returned
``job.<cluster>.<proc>.out`` / ``.err``. The path alone names the instance and the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ENTRY_DIR_RE = re.compile(r"^entry_(?P<entry>.+)$")
INSTANCE_DIR_RE = re.compile(r"^glidein_(?P<instance>.+)$")
ACTIVITY_GLOB = "condor_activity_*.log"
OUTPUT_RE = re.compile(r"^job\.(?P<cluster>\d+)\.(?P<proc>\d+)\.err$")


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
    """Every ``glidein_<instance>/entry_<entry>`` directory below the given roots."""
    found = {}
    for root in roots:
        root = Path(root)
        candidates = [root] if root.name.startswith("entry_") else root.rglob("entry_*")
        for path in candidates:
            if path.is_dir():
                parsed = entry_dir(path)
                if parsed:  # keyed and stored by its resolved path: one tree, one ledger key,
                    # whether it was given relative, absolute or through a symlink
                    real = path.resolve()
                    found[real] = EntryDir(path=real, instance=parsed.instance, entry=parsed.entry)
    return [found[key] for key in sorted(found)]


def activity_logs(entry: EntryDir) -> list[Path]:
    return sorted(entry.path.glob(ACTIVITY_GLOB))


def returned_outputs(entry: EntryDir):
    """(cluster, proc, path) of every returned stderr in an entry dir."""
    for path in sorted(entry.path.glob("job.*.err")):
        match = OUTPUT_RE.match(path.name)
        if match:
            yield int(match.group("cluster")), int(match.group("proc")), path
