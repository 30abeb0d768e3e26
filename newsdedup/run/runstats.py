"""Per-site figures of one crawl run, from the crawl's stats, and the closing summary a person reads.

Pure Python (no Scrapy): the crawl keeps its figures in Scrapy's stats under ``newsdedup/site/<site>/<name>``
(:func:`site_key`); :meth:`SiteTally.from_stats` reads them back and :func:`format_summary` lays them out,
one line a site, zero counters shown as 0, then what was skipped and failed, by reason.

>>> stats = {"newsdedup/site/sina/list_pages": 2, "newsdedup/site/sina/article_links": 30,
...          "newsdedup/site/sina/known": 10, "newsdedup/site/sina/fetched": 19,
...          "newsdedup/site/sina/unique": 12, "newsdedup/site/sina/near_duplicate": 3,
...          "newsdedup/site/sina/repeat": 2, "newsdedup/site/sina/skipped/too_short": 2,
...          "newsdedup/site/sina/failed/http_500": 1}
>>> tally = SiteTally.from_stats(stats, "sina")
>>> tally.stored, tally.skipped_total, tally.failed_total, tally.not_fetched
(15, 2, 1, 0)
>>> print(format_table([tally]))
site  list pages  article links  known  fetched  stored  new  near  repeats  skipped  failed
sina           2             30     10       19      15   12     3        2        2       1
      skipped: too_short 2; failed: http_500 1
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

SITE_PREFIX = "newsdedup/site/"

# Counters the spider and the dupefilter keep per site (what was found and fetched).
LIST_PAGES = "list_pages"  # start and list pages fetched
LIST_FAILED = "list_failed"  # start and list pages that could not be fetched
ARTICLE_LINKS = "article_links"  # distinct article URLs found on the site's list pages
KNOWN = "known"  # article links not fetched: handled by an earlier run (URL filter)
FETCHED = "fetched"  # article pages downloaded
ROBOTS = "robots_forbidden"  # article links robots.txt forbids
IGNORED = "ignored"  # article requests Scrapy dropped for another reason (offsite, ...)
DEPTH_LIMITED = "depth_limited"  # list-page links not followed: their articles would be past DEPTH_LIMIT
# Counters of what was committed to the store (newsdedup.storage: ArticleStore.committed).
UNIQUE, NEAR, REPEAT = "unique", "near_duplicate", "repeat"
REUSED = "reused"  # stored articles that reuse a passage of an earlier story (newsdedup.crawl.reuse_index)
LOST = "lost"  # fetched but never recorded (the worker pool was lost, a pipeline error)
# Fetched while the site's template warmed up, held to be read again, and not read before the crawl closed. Apart
# from LOST because a stopped crawl (SIGTERM, Ctrl-C) leaves them by design: that is the interruption's cost, not a
# failure of its own. The next run fetches them again.
HELD_AT_STOP = "held_at_stop"
# Per list source (newsdedup.discovery): source/<name>/links (distinct article links it found), pages (pages
# answered), failed/<reason>, stopped (why it stopped paging) and error (its first failure, for the summary).
# "html" and "scripts" name the links found in <a href> and in the scripts of list pages.
SOURCE_LINKS, SOURCE_PAGES, SOURCE_STOPPED, SOURCE_ERROR = "links", "pages", "stopped", "error"
# A distributed crawl: stream entries and queued requests in Redis that are not data newsdedup wrote (newsdedup.distributed.wire),
# e.g. a pickle someone put there. Dropped unread, never run.
REDIS_UNDECODABLE = "newsdedup/redis/undecodable"


def site_key(site: str, name: str) -> str:
    """The stats key of a per-site counter, e.g. ``newsdedup/site/sina/skipped/too_short``."""
    return f"{SITE_PREFIX}{site}/{name}"


def source_key(site: str, source: str, name: str) -> str:
    """The stats key of a list source's counter, e.g. ``newsdedup/site/sina/source/roll/links``."""
    return site_key(site, f"source/{source}/{name}")


def sites_in(stats: Mapping[str, object]) -> list[str]:
    """Sites that have any per-site counter, in first-seen order."""
    seen: dict[str, None] = {}
    for key in stats:
        if key.startswith(SITE_PREFIX):
            seen.setdefault(key[len(SITE_PREFIX):].split("/", 1)[0], None)
    return list(seen)


@dataclass
class SourceTally:
    name: str
    links: int = 0
    pages: int = 0
    failed: collections.Counter = field(default_factory=collections.Counter)
    stopped: str | None = None
    error: str | None = None

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    def describe(self) -> str:
        text = f"{self.name} {self.links}"
        if self.pages:
            text += f" in {self.pages} page{'s' if self.pages != 1 else ''}"
        if self.stopped and self.stopped != "end":
            text += f" (stopped: {self.stopped})"
        return text


def _sources_of(stats: Mapping[str, object], prefix: str) -> dict[str, SourceTally]:
    sources: dict[str, SourceTally] = {}
    for key, value in stats.items():
        if not key.startswith(prefix):
            continue
        name, _, what = key[len(prefix):].partition("/")
        tally = sources.setdefault(name, SourceTally(name))
        if what == SOURCE_LINKS and isinstance(value, int):
            tally.links = value
        elif what == SOURCE_PAGES and isinstance(value, int):
            tally.pages = value
        elif what.startswith("failed/") and isinstance(value, int):
            tally.failed[what.split("/", 1)[1]] = value
        elif what == SOURCE_STOPPED:
            tally.stopped = str(value)
        elif what == SOURCE_ERROR:
            tally.error = str(value)
    return sources


@dataclass
class SiteTally:
    site: str
    list_pages: int = 0
    list_failed: int = 0
    article_links: int = 0
    known: int = 0
    fetched: int = 0
    robots_forbidden: int = 0
    ignored: int = 0
    depth_limited: int = 0
    unique: int = 0
    near_duplicates: int = 0
    repeats: int = 0
    reused: int = 0
    lost: int = 0
    held_at_stop: int = 0
    skipped: collections.Counter = field(default_factory=collections.Counter)
    failed: collections.Counter = field(default_factory=collections.Counter)
    sources: dict[str, SourceTally] = field(default_factory=dict)

    @classmethod
    def from_stats(cls, stats: Mapping[str, object], site: str) -> SiteTally:
        prefix = site_key(site, "")
        values = {k[len(prefix):]: v for k, v in stats.items() if k.startswith(prefix) and isinstance(v, int)}
        return cls(
            site=site, list_pages=values.get(LIST_PAGES, 0), list_failed=values.get(LIST_FAILED, 0),
            article_links=values.get(ARTICLE_LINKS, 0), known=values.get(KNOWN, 0), fetched=values.get(FETCHED, 0),
            robots_forbidden=values.get(ROBOTS, 0), ignored=values.get(IGNORED, 0),
            depth_limited=values.get(DEPTH_LIMITED, 0), unique=values.get(UNIQUE, 0),
            near_duplicates=values.get(NEAR, 0), repeats=values.get(REPEAT, 0), reused=values.get(REUSED, 0),
            lost=values.get(LOST, 0),
            held_at_stop=values.get(HELD_AT_STOP, 0),
            skipped=collections.Counter({k.split("/", 1)[1]: v for k, v in values.items() if k.startswith("skipped/")}),
            failed=collections.Counter({k.split("/", 1)[1]: v for k, v in values.items() if k.startswith("failed/")}),
            sources=_sources_of(stats, prefix + "source/"),
        )

    @property
    def stored(self) -> int:
        return self.unique + self.near_duplicates

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def not_fetched(self) -> int:
        """Article links neither known, fetched, failed nor refused: the crawl stopped before them."""
        return max(0, self.article_links - self.known - self.fetched - self.failed_total - self.robots_forbidden
                   - self.ignored)

    @property
    def requests_failed(self) -> int:
        return self.list_failed + self.failed_total

    @property
    def requests(self) -> int:
        """Requests that got an answer or failed after Scrapy's retries (robots.txt refusals not counted)."""
        return self.list_pages + self.list_failed + self.fetched + self.failed_total


_COLUMNS = (
    ("list pages", lambda t: t.list_pages), ("article links", lambda t: t.article_links),
    ("known", lambda t: t.known), ("fetched", lambda t: t.fetched), ("stored", lambda t: t.stored),
    ("new", lambda t: t.unique), ("near", lambda t: t.near_duplicates), ("repeats", lambda t: t.repeats),
    ("skipped", lambda t: t.skipped_total), ("failed", lambda t: t.failed_total),
)


def _by_count(counter: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def format_table(tallies: Iterable[SiteTally]) -> str:
    """One line a site (every counter shown, 0 included), each followed by its details when there are any."""
    tallies = list(tallies)
    width = max([len("site"), *(len(t.site) for t in tallies)])
    header = "site".ljust(width) + "".join(f"  {name}" for name, _ in _COLUMNS)
    lines = [header]
    for tally in tallies:
        lines.append(tally.site.ljust(width) + "".join(f"  {get(tally):>{len(name)}}" for name, get in _COLUMNS))
        details = []
        if tally.list_failed:
            details.append(f"list pages failed {tally.list_failed}")
        if tally.skipped:
            details.append(f"skipped: {_by_count(tally.skipped)}")
        if tally.failed:
            details.append(f"failed: {_by_count(tally.failed)}")
        # Only where something besides <a href> found links, so a plain site's summary stays as it was.
        if any(name != "html" for name in tally.sources):
            details.append("links by source: " + ", ".join(t.describe() for t in tally.sources.values()))
        broken = {name: t for name, t in tally.sources.items() if t.failed}
        if broken:
            details.append("sources failed: " + ", ".join(f"{name} ({_by_count(t.failed)})" for name, t in broken.items()))
        for label, value in (("reusing a passage of an earlier story", tally.reused),
                             ("robots.txt forbids", tally.robots_forbidden), ("ignored", tally.ignored),
                             ("not fetched (the crawl stopped before them)", tally.not_fetched),
                             ("list links not followed (DEPTH_LIMIT)", tally.depth_limited),
                             ("lost (not analysed)", tally.lost),
                             ("held for the template, not read before the crawl closed", tally.held_at_stop)):
            if value:
                details.append(f"{label} {value}")
        if details:
            lines.append(" " * width + "  " + "; ".join(details))
    return "\n".join(lines)


def tallies_of(stats: Mapping[str, object], sites: Iterable[str] | None = None) -> list[SiteTally]:
    return [SiteTally.from_stats(stats, site) for site in (sites_in(stats) if sites is None else sites)]


def format_summary(stats: Mapping[str, object], sites: Iterable[str] | None = None) -> str:
    """The closing summary of a run: verdict line, the per-site table, the problems that set the exit status."""
    code = stats.get("newsdedup/run/exit_code")
    verdict = stats.get("newsdedup/run/verdict", "")
    reason = stats.get("finish_reason", "unknown")
    head = f"newsdedup run {reason}: exit status {code} ({verdict})" if code is not None else f"newsdedup run {reason}"
    lines = [head, format_table(tallies_of(stats, sites))]
    problems = stats.get("newsdedup/run/problems") or []
    lines += [f"problem: {p}" for p in problems]
    return "\n".join(lines)


__all__ = ["SiteTally", "SourceTally", "source_key", "format_summary", "format_table", "site_key", "sites_in", "tallies_of"]
