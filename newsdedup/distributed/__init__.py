"""A crawl over several processes or machines on Redis (the ``redis`` extra): the add-on that turns it on, the
run's Redis state (:mod:`.redis_run`), the scheduler and shared URL filter on scrapy-redis, the one ordered writer,
and the data-only wire format of everything that crosses Redis.

Nothing here is imported by a one-machine crawl except :mod:`.addon`, which needs only Scrapy.
"""
