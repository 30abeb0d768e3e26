"""``NEWSDEDUP_*`` settings to the typed options of each stage: the one path for the crawl and the CLI.

The defaults live in :mod:`newsdedup.defaults` only; the option dataclasses take their defaults from
there and this module reads a setting from whatever the caller has (Scrapy's settings during a crawl,
a plain dict of overrides built from command-line flags), falling back to that default. A value that
does not parse raises :class:`SettingError` naming the setting, so ``-s NEWSDEDUP_WORKERS=two`` fails
with one line that says which setting and what it takes.

>>> near_settings({"NEWSDEDUP_SPOTSIGS_TAU": "0.5"}).spotsigs_tau
0.5
>>> near_settings({"NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT": "none"}).spotsigs_min_containment is None
True
>>> near_settings({"NEWSDEDUP_SPOTSIGS_TAU": "high"})
Traceback (most recent call last):
...
newsdedup.run.options.SettingError: NEWSDEDUP_SPOTSIGS_TAU: expected a number, got 'high'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from newsdedup import defaults
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.extract.extractor import ExtractOptions
from newsdedup.run.retry import RetryPolicy

# Words that switch an optional number off (``-s NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT=none``).
_OFF = ("", "none", "off")


class SettingError(ValueError):
    """A setting whose value cannot be used; the message starts with the setting's name."""


def default(name: str) -> Any:
    """The shipped default of a ``NEWSDEDUP_*`` setting (from :mod:`newsdedup.defaults`)."""
    return getattr(defaults, name)


def raw(settings: Mapping | Any, name: str) -> Any:
    """The value the caller set, else the default. Works with Scrapy settings and plain dicts."""
    value = settings.get(name) if name in settings else None
    return default(name) if value is None else value


def get_int(settings, name: str, *, minimum: int | None = None, choices: tuple[int, ...] | None = None) -> int:
    value = raw(settings, name)
    try:
        number = int(value)
        if isinstance(value, float) and value != number:
            raise ValueError
    except (TypeError, ValueError):
        raise SettingError(f"{name}: expected a whole number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}: must be >= {minimum}, got {number}")
    if choices is not None and number not in choices:
        raise SettingError(f"{name}: expected one of {', '.join(map(str, choices))}, got {number}")
    return number


def get_float(settings, name: str, *, minimum: float | None = None) -> float:
    value = raw(settings, name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SettingError(f"{name}: expected a number, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}: must be >= {minimum:g}, got {number:g}")
    return number


def get_bool(settings, name: str) -> bool:
    """``True``/``False`` as Scrapy spells them on the command line (also 1/0, on/off, yes/no)."""
    value = raw(settings, name)
    word = str(value).strip().lower()
    if isinstance(value, bool) or word in ("true", "1", "on", "yes", "false", "0", "off", "no"):
        return value if isinstance(value, bool) else word in ("true", "1", "on", "yes")
    raise SettingError(f"{name}: expected True or False, got {value!r}")


def get_optional(settings, name: str, convert=float):
    """A value where ``none``/``off``/empty (or None) switches the feature off."""
    value = settings.get(name) if name in settings else default(name)
    if value is None or str(value).strip().lower() in _OFF:
        return None
    try:
        return convert(value)
    except (TypeError, ValueError):
        kind = "a number" if convert is float else "a whole number"
        raise SettingError(f"{name}: expected {kind} or none, got {value!r}") from None


def get_str(settings, name: str, *, choices: tuple[str, ...] | None = None) -> str:
    value = str(raw(settings, name))
    if choices is not None and value not in choices:
        raise SettingError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def get_optional_str(settings, name: str) -> str | None:
    value = settings.get(name) if name in settings else default(name)
    return None if value is None or str(value).strip() == "" else str(value)


def state_dir(settings, storage_uri: str):
    """``NEWSDEDUP_STATE_DIR`` as a folder (a Path), None when off (``none``) or for an in-memory store."""
    from pathlib import Path

    from newsdedup.dedupstore.state import default_state_dir

    value = get_str(settings, "NEWSDEDUP_STATE_DIR").strip()
    if value.lower() in ("none", "off", ""):
        return None
    if value.lower() == "auto":
        return default_state_dir(storage_uri)
    return Path(value).expanduser()


def _build(name: str, factory, **kwargs):
    """Run a dataclass constructor whose own checks raise ValueError, naming the setting group."""
    try:
        return factory(**kwargs)
    except SettingError:
        raise
    except ValueError as exc:
        raise SettingError(f"{name}: {exc}") from None


def feature_config(settings) -> FeatureConfig:
    from newsdedup.dedup.features import METHODS, SIMHASH_FEATURES

    return _build(
        "NEWSDEDUP_NEAR_METHOD and its feature settings", FeatureConfig,
        method=get_str(settings, "NEWSDEDUP_NEAR_METHOD", choices=METHODS),
        segmenter=get_str(settings, "NEWSDEDUP_SEGMENTER", choices=("auto", "jieba", "rjieba")),
        user_dict=get_optional_str(settings, "NEWSDEDUP_SEGMENTER_USER_DICT"),
        stopwords=get_optional_str(settings, "NEWSDEDUP_STOPWORDS"),
        simhash_bits=get_int(settings, "NEWSDEDUP_SIMHASH_BITS", choices=(64, 128)),
        simhash_features=get_str(settings, "NEWSDEDUP_SIMHASH_FEATURES", choices=SIMHASH_FEATURES),
        antecedents=get_str(settings, "NEWSDEDUP_SPOTSIGS_ANTECEDENTS"),
        spot_chain=get_int(settings, "NEWSDEDUP_SPOTSIGS_CHAIN", minimum=1),
        spot_distance=get_int(settings, "NEWSDEDUP_SPOTSIGS_DISTANCE", minimum=1),
        dwdcs_key_concepts=get_int(settings, "NEWSDEDUP_DWDCS_KEY_CONCEPTS", minimum=1),
        dwdcs_hub_candidates=get_int(settings, "NEWSDEDUP_DWDCS_HUB_CANDIDATES", minimum=1),
        dwdcs_min_frequency=get_int(settings, "NEWSDEDUP_DWDCS_MIN_FREQUENCY", minimum=1),
        dwdcs_merge_threshold=get_float(settings, "NEWSDEDUP_DWDCS_MERGE_THRESHOLD"),
        dwdcs_max_nodes=get_int(settings, "NEWSDEDUP_DWDCS_MAX_NODES", minimum=1),
        dwdcs_synonyms=get_optional_str(settings, "NEWSDEDUP_DWDCS_SYNONYMS"),
    )


def near_settings(settings) -> NearSettings:
    from newsdedup.dedup.features import METHODS

    return _build(
        "NEWSDEDUP_NEAR_METHOD and its thresholds", NearSettings,
        method=get_str(settings, "NEWSDEDUP_NEAR_METHOD", choices=METHODS),
        simhash_bits=get_int(settings, "NEWSDEDUP_SIMHASH_BITS", choices=(64, 128)),
        simhash_max_distance=get_int(settings, "NEWSDEDUP_SIMHASH_MAX_DISTANCE", minimum=0),
        spotsigs_tau=get_float(settings, "NEWSDEDUP_SPOTSIGS_TAU"),
        spotsigs_min_signatures=get_int(settings, "NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES", minimum=0),
        spotsigs_min_containment=get_optional(settings, "NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT"),
        spotsigs_containment_min_spots=get_int(settings, "NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS", minimum=0),
        spotsigs_containment_whole_below=get_optional(settings, "NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW"),
        spotsigs_containment_min_share=get_optional(settings, "NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE"),
        esimhash_max_distance=get_int(settings, "NEWSDEDUP_ESIMHASH_MAX_DISTANCE", minimum=0),
        esimhash_weight_cap=get_float(settings, "NEWSDEDUP_ESIMHASH_WEIGHT_CAP"),
        esimhash_max_bigrams=get_int(settings, "NEWSDEDUP_ESIMHASH_MAX_BIGRAMS", minimum=1),
        dwdcs_cosine=get_float(settings, "NEWSDEDUP_DWDCS_COSINE"),
        dwdcs_max_variance=get_float(settings, "NEWSDEDUP_DWDCS_MAX_VARIANCE"),
        dwdcs_min_key_concepts=get_int(settings, "NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS", minimum=0),
    )


def extract_options(settings) -> ExtractOptions:
    return ExtractOptions(
        min_chars=get_int(settings, "NEWSDEDUP_EXTRACT_MIN_CHARS", minimum=0),
        brief_chars=get_int(settings, "NEWSDEDUP_EXTRACT_BRIEF_CHARS", minimum=0),
        max_bytes=get_int(settings, "NEWSDEDUP_EXTRACT_MAX_BYTES", minimum=1),
    )


def retry_policy(settings) -> RetryPolicy:
    return _build(
        "NEWSDEDUP_RETRY_MAX_ATTEMPTS / NEWSDEDUP_RETRY_BACKOFF", RetryPolicy,
        max_attempts=get_int(settings, "NEWSDEDUP_RETRY_MAX_ATTEMPTS", minimum=1),
        backoff=get_float(settings, "NEWSDEDUP_RETRY_BACKOFF", minimum=0),
    )


def extract_timeout(settings) -> float | None:
    """``NEWSDEDUP_EXTRACT_TIMEOUT``: seconds a page may take in a worker; ``none`` for no limit."""
    value = get_optional(settings, "NEWSDEDUP_EXTRACT_TIMEOUT")
    if value is not None and value <= 0:
        raise SettingError(f"NEWSDEDUP_EXTRACT_TIMEOUT: must be > 0 seconds (or none), got {value:g}")
    return value


def share(settings, name: str) -> float:
    """A share in [0, 1]."""
    value = get_float(settings, name, minimum=0)
    if value > 1:
        raise SettingError(f"{name}: expected a share between 0 and 1 (0.2 = 20%), got {value:g}")
    return value


def workers(settings) -> int | None:
    """``NEWSDEDUP_WORKERS``: None (unset, empty or ``none``) means one per core, 0 runs inline."""
    value = get_optional(settings, "NEWSDEDUP_WORKERS", int)
    if value is not None and value < 0:
        raise SettingError(f"NEWSDEDUP_WORKERS: must be >= 0 (0 runs extraction in the crawl process), got {value}")
    return value


__all__ = [
    "SettingError", "default", "extract_options", "extract_timeout", "feature_config", "get_float", "get_int",
    "get_optional", "get_optional_str", "get_str", "near_settings", "raw", "retry_policy", "share", "state_dir",
    "workers",
]
