"""What a user plugs in after newsdedup's pipelines, broken on purpose (tests/test_feed_export.py).

The crawl subprocess imports these by name (``-s ITEM_PIPELINES=...``, ``FEED_EXPORTERS``, ``FEED_STORAGES``);
the test puts this folder on its ``PYTHONPATH``.
"""

from __future__ import annotations

from scrapy.exporters import JsonLinesItemExporter
from scrapy.extensions.feedexport import FileFeedStorage


class RejectingPipeline:
    """A user's item pipeline that raises on every item (an upload to a service that is down)."""

    def process_item(self, item):
        raise ConnectionError(f"upload of {item.url} refused")


class BrokenJsonLinesExporter(JsonLinesItemExporter):
    """A feed exporter that cannot write an item (as Scrapy's own did with the raw bytes of our old item)."""

    def export_item(self, item):
        raise TypeError("Object of type bytes is not JSON serializable")


class UnwritableFeedStorage(FileFeedStorage):
    """A feed storage that cannot store its file at the end (a full disk, a remote store refusing it)."""

    def store(self, file):
        file.close()
        raise OSError("No space left on device")
