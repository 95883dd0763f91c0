"""A wrong Factory name is a configuration error, not a pass of forgeries.

The Factory's name is part of every trace id, and a journal whose root names another Factory
is ignored as forged. Given the wrong name (GlideinWMS's glidein_name, GLIDEIN_Name, for its
factory_name, GLIDEIN_Factory), every glidein would become a failure with no journal, its
row written and the ledger marking it done, for good. So before a pass writes anything, the
newest returned journals of each entry not yet confirmed are read: when every one of them
(up to ``NEWEST``, among its ``LOOK_AT`` newest outputs) names one other Factory, the pass
stops with a ConfigError (exit 2) that gives both names. One journal naming this Factory
confirms its entry for the process's life (the name cannot change while it runs); an entry
directory unchanged since it was last
looked at is not read again, nor, for ``QUIET_S``, one whose newest outputs held no journal
(an entry that does not trace: its directory changes every pass).
"""

from __future__ import annotations

import os
import time

from ..core.errors import ConfigError
from .outputs import OUTPUT_RE, find_entry_dirs
from .returned import claimed_factories

NEWEST = 5     # returned journals (that name a Factory) read per unconfirmed entry
LOOK_AT = 20   # returned stderrs looked at, at most, per unconfirmed entry and changed directory:
# an entry whose glideins return no journal (tracing off) costs 20 reads when it changes, not all
QUIET_S = 600.0  # an entry whose newest outputs hold no journal is looked at again after this


class FactoryNameCheck:
    def __init__(self, roots, facts, max_section_bytes: int):
        self.roots, self.facts, self.max_section_bytes = roots, facts, max_section_bytes
        self.confirmed: set = set()      # entry directories with a journal naming this Factory
        self._looked: dict = {}          # entry directory -> its mtime when last looked at
        self._quiet: dict = {}           # entry directory -> when its newest outputs held no journal

    def check(self):
        for entry in find_entry_dirs(self.roots):
            if entry.path in self.confirmed or self.facts.asked_to_trace(entry.entry) is False:
                continue
            try:
                mtime = os.stat(entry.path).st_mtime_ns
            except OSError:
                continue
            quiet_since = self._quiet.get(entry.path)
            if self._looked.get(entry.path) == mtime or (quiet_since is not None
                                                         and time.monotonic() - quiet_since < QUIET_S):
                continue
            self._looked[entry.path] = mtime
            others = self._others(entry.path)
            if len(others) == 1:     # a wrong name gives one other; a forger's journals may differ
                where = f"glideinWMS.xml's factory_name ({self.facts.xml.path})" if self.facts.xml else \
                    "the settings' `factory:`"
                raise ConfigError([
                    f"entry {entry.entry}: its newest journals all name the Factory {', '.join(sorted(others))!r}, "
                    f"not {self.facts.name!r} ({where}): a wrong Factory name would make every glidein's journal "
                    "look forged; nothing was written. Give the name its glideins carry (GLIDEIN_Factory, "
                    "factory_name in glideinWMS.xml), or --factory-config"], heading=None)

    def _others(self, directory) -> set:
        """The other Factories the newest journals of an entry name, when all of them name
        another; empty when one names ours (the entry is then confirmed) or none names any."""
        outputs = []
        try:
            with os.scandir(directory) as names:
                for item in names:
                    match = OUTPUT_RE.match(item.name)
                    if match:
                        outputs.append((int(match["cluster"]), int(match["proc"]), item.path))
        except OSError:
            return set()
        others, read = set(), 0
        self._quiet.pop(directory, None)
        for _, _, path in sorted(outputs, reverse=True)[:LOOK_AT]:     # the newest clusters first
            claims = claimed_factories(path, self.max_section_bytes)
            if not claims:
                continue
            if self.facts.name in claims:
                self.confirmed.add(directory)
                return set()
            others.update(claims)
            read += 1
            if read >= NEWEST:
                break
        if not read:
            self._quiet[directory] = time.monotonic()
        return others
