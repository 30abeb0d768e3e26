"""A distributed crawl's site templates learn from every process's pages, through Redis: pure Python.

One process learns a site's template from the pages it reads (:class:`newsdedup.extract.template.SiteTemplate`);
while the template has seen fewer than ``MIN_PAGES`` pages the process holds the site's pages and reads them again
once it has (:mod:`newsdedup.crawl.pipelines.analyse`). In a distributed crawl each process reads only its share of
a site's pages: alone, a process that fetched two pages of a new site would never warm its template, and its pages
would keep a hot list or shell text as their article (exact repeats of one another). So every process appends what
each page taught its template (the page's block hashes outside and inside its body) and what it took back (a held
page's first reading, when the page is read again) to one Redis list per site and run, and applies the other
processes' entries to its own template before it reads a page of the site: the templates of the run's processes
learn from the same pages as one process's would, each at its own pace.

Only a site's first pages are shared (:data:`newsdedup.crawl.templates.SHARED_PAGES`: a process shares while its own
template of the site has seen fewer): they are what a new site's template needs, and the lists stay small (a few
kilobytes a page, a few pages a process and site). Once warm, each process's template goes on learning from its own
pages, as one process's does.

Entries are JSON (``["learn", worker, seq, outside, body, held]``, ``["forget", worker, seq]``), never pickles; an
entry that is not one is skipped, logged once per site.
"""

from __future__ import annotations

import json
import logging
from array import array

logger = logging.getLogger(__name__)


class SharedTemplates:
    def __init__(self, client, key_prefix: str, worker: str) -> None:
        self.client = client
        self.key_prefix = key_prefix  # the run's key for templates: one list per site under it
        self.worker = worker
        self._applied: dict[str, int] = {}  # site -> entries of its list read so far
        self._seq = 0
        # Held pages' first readings (the only pages a template takes back), this process's and the others':
        self._own: dict[int, int] = {}  # id() of the page as learned here -> its seq
        self._theirs: dict[tuple[str, str, int], tuple[array, array]] = {}  # (site, worker, seq) -> page as learned
        self._bad_logged: set[str] = set()

    def key(self, site: str) -> str:
        return f"{self.key_prefix}:{site}"

    def keys(self) -> list[str]:
        """The lists of the sites this process shared or read (the heartbeat keeps them with the run)."""
        return [self.key(site) for site in self._applied]

    def learned(self, site: str, page: tuple[array, array], *, held: bool = False) -> None:
        """This process's template of ``site`` learned ``page`` (what SiteTemplate.learn returned); ``held``: a held
        page's first reading, which :meth:`forgot` may take back."""
        self._seq += 1
        if held:
            self._own[id(page)] = self._seq
        outside, body = page
        self.client.rpush(self.key(site), json.dumps(
            ["learn", self.worker, self._seq, outside.tolist(), body.tolist(), held]))
        self._applied.setdefault(site, 0)

    def forgot(self, site: str, page: tuple[array, array]) -> None:
        """This process's template of ``site`` took ``page`` back (SiteTemplate.forget)."""
        seq = self._own.pop(id(page), None)
        if seq is not None:
            self.client.rpush(self.key(site), json.dumps(["forget", self.worker, seq]))

    def catch_up(self, site: str, template) -> int:
        """Apply the other processes' entries for ``site`` since the last call to ``template``; return how many."""
        start = self._applied.get(site, 0)
        # From the last entry read on (lists only grow): none back means the list is shorter than what was read, so
        # Redis lost it (restarted empty): what the other processes shared since is read from its start, their
        # "forget" of a page learned before the loss among it.
        entries = self.client.lrange(self.key(site), max(start - 1, 0), -1)
        if start and not entries:
            start = 0
            entries = self.client.lrange(self.key(site), 0, -1)
        elif start:
            entries = entries[1:]
        self._applied[site] = start + len(entries)
        applied = 0
        for raw in entries:
            try:
                entry = json.loads(raw)
                kind, worker, seq = entry[0], str(entry[1]), int(entry[2])
                if worker == self.worker:
                    continue
                if kind == "learn":
                    outside, body = (array("Q", entry[3]), array("Q", entry[4]))
                    # learn() takes the page's lines and those in its body, and returns what it counted, for forget.
                    page = template.learn([*outside, *body], body)
                    # Kept to take back: a held page's first reading, and every page should its process die
                    # (forget_dead); a site shares only its first pages, so this stays small.
                    self._theirs[(site, worker, seq)] = page
                elif kind == "forget":
                    page = self._theirs.pop((site, worker, seq), None)
                    if page is not None:
                        template.forget(page)
                else:
                    raise ValueError(f"unknown entry kind {kind!r}")
                applied += 1
            except (ValueError, TypeError, IndexError, OverflowError) as exc:
                if site not in self._bad_logged:
                    self._bad_logged.add(site)
                    logger.warning("distributed crawl: skipped a shared template entry of %s that is not one (%s)",
                                   site, exc)
        return applied

    def forget_dead(self, worker: str) -> int:
        """Take back, in every process's template, every page that ``worker`` (a dead process) shared and never
        took back; how many. Its record of requests taken goes back on the run's queue (RunMember._requeue_dead):
        its held pages, and the pages it read and never published, are read and taught again, and taught twice a
        page would make its reprints look like text recurring on the site's pages (their text cut as a sign-off, a
        reprint stored as a new story). Which of its pages those are the entries do not say, so all it taught goes:
        the site's template learns again from the pages read next. The take-backs are written in the dead process's
        name, so every process applies them (this one too) as it catches up. Sites this process has seen."""
        forgotten = 0
        for site in list(self._applied):
            taught: set[int] = set()
            for raw in self.client.lrange(self.key(site), 0, -1):
                try:
                    entry = json.loads(raw)
                    if str(entry[1]) != worker:
                        continue
                    if entry[0] == "learn":
                        taught.add(int(entry[2]))
                    elif entry[0] == "forget":
                        taught.discard(int(entry[2]))
                except (ValueError, TypeError, IndexError):
                    continue  # not one of ours: catch_up logs it
            for seq in sorted(taught):
                self.client.rpush(self.key(site), json.dumps(["forget", worker, seq]))
            forgotten += len(taught)
        return forgotten


__all__ = ["SharedTemplates"]
