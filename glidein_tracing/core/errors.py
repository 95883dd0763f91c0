"""Errors a user can fix, raised anywhere in the package: the CLI (cli/main.py) prints each
as its message and exits 2, in one place; a library caller catches them by type."""

from __future__ import annotations


class UserError(Exception):
    """A problem with what the user asked for or gave (a flag, a file, a directory)."""


class ConfigError(UserError):
    """Settings that cannot be used: ``problems`` names each (a file's with its line)."""

    def __init__(self, problems: list[str], heading: str | None = "bad configuration"):
        self.problems = list(problems)
        text = "\n  ".join(self.problems)
        super().__init__(f"{heading}:\n  {text}" if heading else text)
