"""The floors of the code: each folder serves one side and imports only what that side may
use (README.md, Layout), read from every module's imports (AST, those inside functions
too). And the analysis keeps no state between calls at module level: what it derives from a
dataset belongs to that dataset (analysis/dataset.py), not to a cache keyed by connection."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = "glidein_tracing"   # its own modules (__init__: the version; __main__: the CLI)
EVERYTHING = frozenset({"core", "node", "exporters", "viewers", "failure_rules", "table", "factory",
                        "analysis", "why", "serve", "simulator", "testing", "cli", "frontend_hooks"})

#: folder -> the other folders it may import (every folder may import itself and the version)
ALLOWED = {
    "core": set(),
    "node": {"core"},
    "exporters": {"core"},
    "viewers": {"core"},
    "failure_rules": {"core"},
    "table": {"core", "exporters"},
    "factory": {"core", "exporters", "table", "failure_rules"},
    "analysis": {"core", "table"},
    "why": {"core", "exporters", "table", "analysis"},
    "serve": {"core", "exporters", "table", "why", "viewers", "analysis"},
    "simulator": {"core", "factory"},
    "testing": {"core", "exporters", "table"},
    "cli": EVERYTHING,
    "frontend_hooks": {"core", "exporters"},
    ROOT: {"cli"},
}
#: callables whose result, bound at module level, is state that outlives a call
_MUTABLE = {"WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "dict", "defaultdict", "OrderedDict",
            "Counter", "set", "list"}
_CACHING = {"lru_cache", "cache"}


def folder_of(parts, base: Path) -> str | None:
    """The folder a module (its dotted name's parts) belongs to; None: not the product's."""
    if not parts or parts[0] not in (ROOT, "frontend_hooks"):
        return None
    if parts[0] == "frontend_hooks":
        return "frontend_hooks"
    return parts[1] if len(parts) > 1 and (base / ROOT / parts[1]).is_dir() else ROOT


def imported(path: Path, base: Path):
    """(line, dotted name) of every module ``path`` imports, relative imports resolved; of
    ``from X import a``, ``X.a`` (a may be a submodule)."""
    module = path.relative_to(base).with_suffix("").parts
    package = module[:-1]   # of __init__.py too: its own package
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")
        elif isinstance(node, ast.ImportFrom):
            start = list(package[:len(package) - node.level + 1]) if node.level else []
            source = start + (node.module.split(".") if node.module else [])
            for alias in node.names:
                yield node.lineno, source + [alias.name]


def floor_violations(base: Path) -> list:
    """``path:line: folder imports other`` for each import ALLOWED does not let through."""
    out = []
    for path in sorted(p for top in (ROOT, "frontend_hooks") for p in (base / top).rglob("*.py")):
        folder = folder_of(path.relative_to(base).parts, base)
        for line, parts in imported(path, base):
            target = folder_of(parts, base)
            if target not in (None, folder, ROOT) and target not in ALLOWED[folder]:
                out.append(f"{path.relative_to(base)}:{line}: {folder} imports {target} ({'.'.join(parts)})")
    return out


def module_caches(base: Path) -> list:
    """``path:line: name`` for each piece of module-level state in analysis/: a module-level
    name bound to an empty or weak container (dict(), {}, WeakKeyDictionary(), ...), a
    ``global`` statement, or a module-level function wrapped in lru_cache/cache."""
    out = []
    for path in sorted((base / ROOT / "analysis").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(base)
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if _is_container(value):
                out.append(f"{where}:{node.lineno}: module-level {ast.unparse(value)}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    name = _name(deco.func if isinstance(deco, ast.Call) else deco)
                    if name in _CACHING:
                        out.append(f"{where}:{node.lineno}: {name} on {node.name}")
        out += [f"{where}:{n.lineno}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    return out


def _is_container(value) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    return isinstance(value, ast.Call) and _name(value.func) in _MUTABLE


def _name(node) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def test_every_folder_imports_only_the_floors_allowed_for_it():
    assert set(ALLOWED) == EVERYTHING | {ROOT}
    assert floor_violations(REPO) == []


def test_the_analysis_keeps_no_module_level_cache():
    assert module_caches(REPO) == []


def _write(base: Path, files: dict):
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text, encoding="utf-8")


def test_the_check_sees_the_table_import_the_factory_and_an_analysis_cache(tmp_path):
    """The checks above can fail: the table reaching up into the factory (an absolute import
    and a relative one inside a function), and a cache keyed by connection in analysis/."""
    _write(tmp_path, {
        "glidein_tracing/__init__.py": "__version__ = '0'\n",
        "glidein_tracing/factory/__init__.py": "",
        "glidein_tracing/factory/ledger.py": "",
        "glidein_tracing/table/__init__.py": "",
        "glidein_tracing/table/rows.py": "from .. import __version__\nfrom ..core import ids\n",
        "glidein_tracing/table/sink.py": "import glidein_tracing.factory.ledger\n"
                                         "def f():\n    from ..factory import ledger\n",
        "glidein_tracing/core/__init__.py": "",
        "glidein_tracing/core/ids.py": "",
        "glidein_tracing/analysis/__init__.py": "",
        "glidein_tracing/analysis/counts.py": "import functools, weakref\nTITLES = {'a': 1}\n"
                                              "_SEEN = weakref.WeakKeyDictionary()\n_BY: dict = {}\n"
                                              "@functools.lru_cache(maxsize=None)\ndef of(con):\n    pass\n",
        "frontend_hooks/__init__.py": "",
    })
    assert [v.split(": ", 1)[1] for v in floor_violations(tmp_path)] == [
        "table imports factory (glidein_tracing.factory.ledger)",
        "table imports factory (glidein_tracing.factory.ledger)"]
    assert [v.split(": ", 1)[1] for v in module_caches(tmp_path)] == [
        "module-level weakref.WeakKeyDictionary()", "module-level {}", "lru_cache on of"]
