"""Did the run do its job? The exit status a scheduler (cron, systemd, Scrapyd) acts on.

Pure Python. :func:`judge` looks at what a finished crawl reports (per-site tallies, what could not be
saved or analysed, how it ended) and returns the exit status and the problems behind it, most severe
first. The codes are documented in docs/commands.md (*Exit status*):

====  =====================  ===========================================================================
code  name                   meaning
====  =====================  ===========================================================================
0     ok                     every article page found was stored, recorded as a repeat, or listed as
                             skipped or failed with a reason (``newsdedup failures``)
1     (Scrapy)               Scrapy could not start or run the crawl (a traceback says why)
2     config_error           bad site file, setting or database, found before Scrapy starts
3     database_in_use        another crawl holds the database's run lock
4     not_saved              records could not be committed (database locked or damaged); their pages
                             are fetched again by the next run
5     pages_not_processed    the worker pool was lost, or pages hit extraction errors, crashed workers or
                             the per-page time limit (listed by ``newsdedup failures``, tried again later),
                             or a failing JOBDIR queue lost scheduled requests, or the crawl closed (not
                             stopped by someone) with pages still held for a site's template, or entries
                             of a distributed run's Redis were not newsdedup's data and were dropped unread,
                             or that Redis lost the run's state mid-run (restarted empty)
6     site_failed            a site found no article links, or too many of its requests failed, or one of its
                             list sources (JSON feed, page data, RSS, sitemap) could not be read
7     interrupted            the crawl was stopped (SIGTERM, Ctrl-C) before it finished; pages held for a
                             new site's template are left unread, the stop's cost (the next run fetches them)
8     output_failed          the pages were stored, but what comes after newsdedup's pipelines failed: an
                             item pipeline of the user's raised, a feed export could not write an item or
                             store its file, an ``item_scraped`` handler raised (newsdedup.crawl.outputs); the
                             least severe: the store, which the other codes are about, is whole
====  =====================  ===========================================================================

>>> from newsdedup.run.runstats import SiteTally
>>> ok = SiteTally("sina", list_pages=2, article_links=10, fetched=10, unique=10)
>>> int(judge(RunFacts("finished", [ok])).code)
0
>>> broken = SiteTally("sohu", list_pages=1, article_links=0)
>>> verdict = judge(RunFacts("finished", [ok, broken], had_links_before={"sohu": True}))
>>> int(verdict.code), verdict.name
(6, 'site_failed')
>>> print(verdict.problems[0])
site sohu: no article links on its 1 list page(s), although earlier runs found some: the portal's layout or links changed (see the warning above for links it saw)
>>> judge(RunFacts("finished", [ok], output_failures=["feed export failed"])).name
'output_failed'
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.run.retry import PROCESSING_ERRORS
from newsdedup.run.runstats import SiteTally


class ExitCode(enum.IntEnum):
    OK = 0
    SCRAPY_ERROR = 1
    CONFIG_ERROR = 2
    DATABASE_IN_USE = 3
    NOT_SAVED = 4
    PAGES_NOT_PROCESSED = 5
    SITE_FAILED = 6
    INTERRUPTED = 7
    OUTPUT_FAILED = 8


# Scrapy finish reasons that mean someone stopped the run (a CLOSESPIDER_* limit is the user's own choice).
_INTERRUPTED = ("shutdown", "cancelled")


@dataclass
class RunFacts:
    finish_reason: str
    sites: Sequence[SiteTally]
    not_saved: int = 0  # records whose commit failed
    store_error: str | None = None  # why
    worker_lost: str | None = None  # why the pool is gone, if it is
    requests_lost: int = 0  # scheduled requests a failing JOBDIR disk queue took with it (newsdedup.crawl.scheduler)
    # Entries of a distributed run's Redis (result stream, request queue) that were not data a newsdedup process writes
    # and were dropped unread (newsdedup.distributed.wire): a page among them is not recorded.
    undecodable: int = 0
    # What of a distributed run's state in Redis was found gone mid-run (Redis restarted empty): queued requests,
    # results not yet stored went with it.
    redis_lost: str | None = None
    # Why a distributed run's process gave up on a Redis it could not reach (newsdedup.distributed.member).
    redis_unreachable: str | None = None
    had_links_before: Mapping[str, bool] = field(default_factory=dict)
    max_http_error_share: float = defaults.NEWSDEDUP_MAX_HTTP_ERROR_SHARE
    # What failed after newsdedup's pipelines, one problem each (newsdedup.crawl.outputs).
    output_failures: Sequence[str] = ()


@dataclass
class Verdict:
    code: ExitCode
    problems: list[str]

    @property
    def name(self) -> str:
        return "ok" if self.code == ExitCode.OK else self.code.name.lower()


def judge(facts: RunFacts) -> Verdict:
    found: list[tuple[ExitCode, str]] = []
    if facts.not_saved or facts.store_error:
        found.append((ExitCode.NOT_SAVED, facts.store_error or f"{facts.not_saved} records could not be saved"))
    if facts.worker_lost:
        found.append((ExitCode.PAGES_NOT_PROCESSED, f"extraction workers lost: {facts.worker_lost}"))
    if facts.requests_lost:
        found.append((ExitCode.PAGES_NOT_PROCESSED,
                      f"{facts.requests_lost} scheduled request(s) were lost with the failing JOBDIR queue; "
                      "the next run finds them again on the list pages"))
    if facts.undecodable:
        found.append((ExitCode.PAGES_NOT_PROCESSED,
                      f"{facts.undecodable} entr(ies) of the run's Redis stream or request queue were not data a "
                      "newsdedup process writes and were dropped unread (a process of another newsdedup version, or "
                      "someone else writing to this Redis); a page among them is fetched again by the next run"))
    if facts.redis_lost:
        found.append((ExitCode.PAGES_NOT_PROCESSED,
                      f"{facts.redis_lost} in Redis was lost mid-run (Redis restarted empty or flushed): requests "
                      "queued and results not yet stored went with it; the next run fetches those pages"))
    if facts.redis_unreachable:
        found.append((ExitCode.PAGES_NOT_PROCESSED,
                      f"{facts.redis_unreachable}: this process stopped; the pages it had not handed over and the "
                      "results not yet stored are fetched again by the next run"))
    for tally in facts.sites:
        errors = {reason: n for reason, n in tally.skipped.items() if reason in PROCESSING_ERRORS}
        if errors:
            found.append((
                ExitCode.PAGES_NOT_PROCESSED,
                f"site {tally.site}: {sum(errors.values())} page(s) not processed ("
                + ", ".join(f"{reason} {n}" for reason, n in sorted(errors.items()))
                + "); `newsdedup failures` lists them, later runs try them again",
            ))
        if tally.lost:
            found.append((ExitCode.PAGES_NOT_PROCESSED,
                          f"site {tally.site}: {tally.lost} fetched page(s) were not analysed; later runs fetch them again"))
        if tally.held_at_stop and facts.finish_reason not in _INTERRUPTED:  # a stopped crawl's are its cost
            found.append((ExitCode.PAGES_NOT_PROCESSED,
                          f"site {tally.site}: {tally.held_at_stop} page(s) held for the site's template were not read "
                          f"before the crawl closed ({facts.finish_reason}); later runs fetch them again"))
    for tally in facts.sites:
        problem = _site_problem(tally, facts)
        if problem:
            found.append((ExitCode.SITE_FAILED, problem))
        for source in tally.sources.values():
            if source.failed:
                found.append((ExitCode.SITE_FAILED, (
                    f"site {tally.site}: list source {source.name} failed ("
                    + ", ".join(f"{reason} {n}" for reason, n in sorted(source.failed.items())) + ")"
                    + (f": {source.error}" if source.error else "") + "; the site's other lists were crawled")))
    if facts.finish_reason in _INTERRUPTED:
        held = sum(tally.held_at_stop for tally in facts.sites)
        found.append((ExitCode.INTERRUPTED, f"the crawl was stopped before it finished ({facts.finish_reason})" + (
            f"; {held} fetched page(s) held for their site's template were not read, the next run fetches them again"
            if held else "")))
    found += [(ExitCode.OUTPUT_FAILED, problem) for problem in facts.output_failures]
    found.sort(key=lambda item: item[0])
    return Verdict(found[0][0] if found else ExitCode.OK, [message for _, message in found])


def _site_problem(tally: SiteTally, facts: RunFacts) -> str | None:
    if tally.requests and tally.requests_failed / tally.requests > facts.max_http_error_share:
        return (
            f"site {tally.site}: {tally.requests_failed} of {tally.requests} requests failed "
            f"({tally.requests_failed / tally.requests:.0%}, over NEWSDEDUP_MAX_HTTP_ERROR_SHARE "
            f"{facts.max_http_error_share:.0%}): is the portal down or blocking the crawler?"
        )
    if tally.list_pages and not tally.article_links and facts.finish_reason not in _INTERRUPTED:
        if facts.had_links_before.get(tally.site):
            why = "although earlier runs found some: the portal's layout or links changed"
        else:
            why = "check its article_url_pattern"
        return (
            f"site {tally.site}: no article links on its {tally.list_pages} list page(s), {why} "
            "(see the warning above for links it saw)"
        )
    return None


__all__ = ["ExitCode", "RunFacts", "Verdict", "judge"]
