"""The Scrapy side of a crawl: the portal spider, the pipeline stages, the schedulers and the request filter,
the downloader middleware, the items, the site file, and the analysis pool the pipelines hand pages to.

Everything here is glue: the work itself is done by :mod:`newsdedup.extract`, :mod:`newsdedup.dedup`,
:mod:`newsdedup.discovery` and :mod:`newsdedup.storage`, which know nothing of Scrapy.
"""
