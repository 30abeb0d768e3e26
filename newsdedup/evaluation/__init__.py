"""Quality measurements on the shared real data (``../shared/data``): extraction and deduplication."""
