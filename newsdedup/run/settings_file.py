"""A user's settings file: ``newsdedup crawl --settings my.toml`` (also ``scrapy crawl portal --settings my.toml``).

A TOML file of Scrapy setting names and values, the same names ``-s NAME=VALUE`` takes, kept outside the installed
package so that an upgrade keeps them::

    NEWSDEDUP_STORAGE_URI = "sqlite:////var/lib/newsdedup/news.sqlite"
    USER_AGENT = "newsdedup/0.1 (+mailto:news-desk@example.org)"
    CLOSESPIDER_ITEMCOUNT = 500

    [ITEM_PIPELINES]   # a table is a dict setting, replaced whole as -s would replace it

Its values sit over the shipped defaults (:mod:`newsdedup.defaults`) and under ``-s`` on the command line, and the
crawl checks them as it checks ``-s`` values. A setting name that is not upper case, or a ``NEWSDEDUP_*`` name
that does not exist (a typo would otherwise be ignored silently), is an error that names the file and the key; a
``NEWSDEDUP_*`` name given with ``-s`` is checked the same way (:func:`check_names`).

>>> parse_settings('NEWSDEDUP_WORKERS = 2\\nDOWNLOAD_DELAY = 0.5', source="my.toml")
{'NEWSDEDUP_WORKERS': 2, 'DOWNLOAD_DELAY': 0.5}
>>> parse_settings('NEWSDEDUP_WORKRES = 2', source="my.toml")
Traceback (most recent call last):
...
newsdedup.run.options.SettingError: my.toml: unknown setting NEWSDEDUP_WORKRES (did you mean NEWSDEDUP_WORKERS? the NEWSDEDUP_* settings are listed in docs/settings.md)
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from newsdedup import defaults
from newsdedup.run.options import SettingError

_SETTING_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def load_settings(path: str | Path) -> dict[str, Any]:
    """The settings of a TOML file; raises :class:`SettingError` (one line naming the file) for anything wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingError(f"{path}: settings file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingError(f"{path}: cannot read the settings file: {exc}") from None
    return parse_settings(text, source=str(path))


def parse_settings(text: str, *, source: str = "<string>") -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingError(f"{source}: not valid TOML: {exc}") from None
    for name in data:
        if not _SETTING_NAME.fullmatch(name):
            raise SettingError(f"{source}: {name!r} is not a setting name (Scrapy's are upper case: DOWNLOAD_DELAY)")
    check_names(data, source=source)
    return data


def check_names(names, *, source: str) -> None:
    """Raise :class:`SettingError` for a ``NEWSDEDUP_*`` name that does not exist, wherever it was given (a settings
    file, ``-s NAME=VALUE``): Scrapy keeps any name, so a typo would be ignored silently.

    >>> check_names(["NEWSDEDUP_RETENTON_DAYS"], source="-s")
    Traceback (most recent call last):
    ...
    newsdedup.run.options.SettingError: -s: unknown setting NEWSDEDUP_RETENTON_DAYS (did you mean NEWSDEDUP_RETENTION_DAYS? the NEWSDEDUP_* settings are listed in docs/settings.md)
    """
    known = [name for name in vars(defaults) if name.startswith("NEWSDEDUP_")]
    for name in names:
        if name.startswith("NEWSDEDUP_") and name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise SettingError(f"{source}: unknown setting {name} ({hint}the NEWSDEDUP_* settings are listed in "
                               "docs/settings.md)")
