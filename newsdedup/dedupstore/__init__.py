"""The dedup core kept level with a store: the layer above the pure algorithms (:mod:`newsdedup.dedup`) and the
stores (:mod:`newsdedup.storage`), below the crawl and the library's front door.

- :mod:`newsdedup.dedupstore.engine`: a dedup engine and clusterer built from what a store holds (its centres, its
  corpus statistics), and the store lookups that confirm an exact match;
- :mod:`newsdedup.dedupstore.state`: the persisted dedup state beside a store (exact and URL Bloom filters, the
  near-duplicate index), opened, checked, caught up with the store's rows and saved.

No Scrapy here: the crawl (:mod:`newsdedup.crawl.indexes`, :mod:`newsdedup.crawl.dupefilter`) and
:class:`newsdedup.Deduplicator` use them.
"""
