"""robots.txt obeyed by every request, also those that wait while a host's robots.txt is being fetched.

Scrapy 2.18 and 2.19's ``RobotsTxtMiddleware`` keeps one ``Deferred`` per host while it fetches that host's
robots.txt, and each request that arrives meanwhile awaits it through ``Deferred.asFuture``. ``asFuture`` hands the
result to its own future and passes ``None`` down the Deferred's callback chain, so only the first waiting request
gets the parser: every other request waiting at that moment is told "no robots.txt" and is fetched even where
robots.txt forbids it (a run's first requests to a host, or a distributed worker's first batch of requests from the
shared queue). Scrapy before 2.13 gave each waiter a Deferred of its own (scrapy/scrapy#6802 replaced that, noting it
was not covered by a test).

:class:`RobotsTxtEveryWaiterMiddleware` restores that: a request that finds the host's robots.txt still being fetched
waits on a Deferred of its own, which the shared one fires and passes its result on. The fetching, parsing,
logging and stats stay Scrapy's.
"""

from __future__ import annotations

import logging

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.http import Request
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)


class RobotsTxtEveryWaiterMiddleware(RobotsTxtMiddleware):
    """Scrapy's ``RobotsTxtMiddleware`` whose requests waiting for a host's robots.txt each get its parser."""

    async def robot_parser(self, request: Request) -> RobotParser | None:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if not isinstance(pending, Deferred):  # not asked yet (this request fetches it), or already known
            return await super().robot_parser(request)
        # Counted and logged: how many requests a run's first robots.txt fetches held (tests wait for these lines).
        self.crawler.stats.inc_value("robotstxt/waited")
        logger.debug("%s waits for the robots.txt of %s", request, urlparse_cached(request).netloc)
        own: Deferred[RobotParser | None] = Deferred()

        def pass_on(parser: RobotParser | None) -> RobotParser | None:
            own.callback(parser)
            return parser  # unchanged, for the next request waiting on the shared Deferred

        pending.addCallback(pass_on)
        return await maybe_deferred_to_future(own)
