"""The forwarder's settings as command-line flags (for ``forward`` and ``status``): each flag,
its help and its check come from the setting's one declaration (factory/settings.py)."""

from __future__ import annotations

from ..core import kinds
from ..core.errors import ConfigError
from ..factory import settings

_TYPES = {kinds.STRING: str, kinds.URL: str, kinds.ADDRESS: str, kinds.ENUM: str, kinds.FLOAT: float, kinds.INT: int}


def add_setting_flags(parser, keys=None):
    """A flag for each setting that has one (only those in ``keys`` when given), plus --config."""
    parser.add_argument("--config", help="YAML settings file, a key for every setting (default "
                        f"{settings.DEFAULT_CONFIG} when present); flags override it")
    for key, setting in settings.SETTINGS.items():
        if setting.flag is None or (keys is not None and key not in keys):
            continue
        described = setting.help
        if setting.kind in kinds.NUMBERS and setting.default is not None:
            default = f"{setting.default:g}" if setting.kind == kinds.FLOAT else str(setting.default)
            described += f" (default {default})"
        if setting.kind == kinds.SWITCH:
            parser.add_argument(setting.flag, dest=key, action="store_true", help=described)
        elif not setting.flag.startswith("-"):
            parser.add_argument(key, nargs="*", help=f"{described}; config key `{key}`")
        elif setting.kind in (kinds.LIST, kinds.MAP):
            parser.add_argument(setting.flag, dest=key, action="append", metavar=setting.metavar, help=described)
        else:
            parser.add_argument(setting.flag, dest=key, type=_TYPES[setting.kind], metavar=setting.metavar,
                                help=described)


def settings_of(args) -> tuple:
    """(config file or None, ForwarderSettings): the flags given over the config file over the
    defaults; a ConfigError naming each problem (with its line in the file) otherwise."""
    path, from_file = settings.load_config(args.config)
    flags, problems = {}, []
    for key, setting in settings.SETTINGS.items():
        if setting.flag is None or not hasattr(args, key):
            continue
        value = getattr(args, key)
        if setting.kind == kinds.MAP:
            value = settings.pairs_of(setting, value or [])
        problem = settings.check(key, value)
        if problem:
            problems.append(f"{setting.flag}: {problem}")
        flags[key] = value
    if problems:
        raise ConfigError(problems, heading="bad option")
    return path, settings.resolve(from_file, flags)
