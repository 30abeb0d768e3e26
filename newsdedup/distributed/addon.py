"""The distributed add-on: with ``NEWSDEDUP_REDIS_URL`` set, a crawl becomes a worker of a distributed crawl.

``ADDONS`` in :mod:`newsdedup.settings` names :class:`DistributedAddon` for every crawl, and Scrapy imports every
add-on before it reads a setting, so this module imports nothing beyond Scrapy: a plain install (no ``redis``
extra) crawls on one machine without scrapy-redis or redis. The scheduler it switches to
(:class:`newsdedup.distributed.scheduler.RunScheduler`) is named by its path, imported by Scrapy only when the setting is on;
``scrapy crawl portal`` checks before that that the extra is installed (:mod:`newsdedup.crawl.commands.crawl`).
"""

from __future__ import annotations

from scrapy.exceptions import NotConfigured


def redis_url(settings) -> str | None:
    """``NEWSDEDUP_REDIS_URL``, or None when the crawl runs on one machine (unset or empty).

    Read here rather than through :mod:`newsdedup.run.options`, which imports the extraction stack.
    """
    value = settings.get("NEWSDEDUP_REDIS_URL")
    return None if value is None or str(value).strip() == "" else str(value)


class DistributedAddon:
    """Switches a crawl to scrapy-redis when ``NEWSDEDUP_REDIS_URL`` is set; otherwise ``NotConfigured``
    (Scrapy's way for an add-on to say it does not apply: it is left out, nothing changes)."""

    def update_settings(self, settings) -> None:
        url = redis_url(settings)
        if not url:
            raise NotConfigured
        # What scrapy-redis users set by hand: its scheduler, the shared request filter, and SCHEDULER_PERSIST
        # (a worker that stops must not empty the queue the others still work on). "project" priority: over this
        # project's settings.py, under -s on the command line.
        settings.set("REDIS_URL", url, priority="project")
        settings.set("SCHEDULER", "newsdedup.distributed.scheduler.RunScheduler", priority="project")
        settings.set("SCHEDULER_PERSIST", True, priority="project")
        settings.set("DUPEFILTER_CLASS", "newsdedup.distributed.scheduler.SharedArticlesDupeFilter", priority="project")
        # Queued requests as data, not scrapy-redis's default pickles: whoever can write to Redis must not be
        # able to run code in the crawl's processes (newsdedup.distributed.wire; docs/distributed.md).
        settings.set("SCHEDULER_SERIALIZER", "newsdedup.distributed.wire", priority="project")
        # A list page's request is finished once the requests it yields are queued (a process killed later has
        # nothing of it to fetch again): outermost, so it hands on what every other spider middleware let through.
        # By its path, as the scheduler above (the module needs the redis extra).
        middlewares = settings.getdict("SPIDER_MIDDLEWARES")
        middlewares["newsdedup.distributed.scheduler.ListPagesFinished"] = 5
        settings.set("SPIDER_MIDDLEWARES", middlewares, settings.getpriority("SPIDER_MIDDLEWARES") or 0)
