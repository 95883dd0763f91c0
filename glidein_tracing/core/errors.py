"""Errors a user can fix, raised anywhere in the package, and the exit codes every verb shares
(docs/operators.md, "Exit codes"). The CLI (cli/main.py) prints each error as its message and
exits with its ``exit_code``, in one place; a library caller catches them by type. Verbs add
their own codes: 1 is status's alert and forward's failed exports, 4 export's "sampled out"."""

from __future__ import annotations

EXIT_USAGE = 2           # bad flags or settings, a config file that is not one, a missing extra
EXIT_NO_SPACE = 5        # no space left where we write: nothing lost, run again once there is
EXIT_LEDGER = 6          # the forwarder's ledger cannot be used: damaged, empty, locked, in use
EXIT_CLOSED_PIPE = 141   # our stdout's reader went away: 128 + SIGPIPE, as a tool the signal ends


class UserError(Exception):
    """A problem with what the user asked for or gave (a flag, a file, a directory)."""

    exit_code = EXIT_USAGE


class ConfigError(UserError):
    """Settings that cannot be used: ``problems`` names each (a file's with its line)."""

    def __init__(self, problems: list[str], heading: str | None = "bad configuration"):
        self.problems = list(problems)
        text = "\n  ".join(self.problems)
        super().__init__(f"{heading}:\n  {text}" if heading else text)
