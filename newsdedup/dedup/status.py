"""The dedup verdict vocabulary: what a document is relative to the ones before it.

The dedup library owns these words; the store, the pipelines and the CLI import them from here.
"""

UNIQUE = "unique"  # starts a cluster of its own (a story seen for the first time)
NEAR_DUPLICATE = "near_duplicate"  # joins the cluster of an earlier document it resembles
EXACT_DUPLICATE = "exact_duplicate"  # the same normalised body as an earlier document
STATUSES = (UNIQUE, NEAR_DUPLICATE, EXACT_DUPLICATE)

__all__ = ["EXACT_DUPLICATE", "NEAR_DUPLICATE", "STATUSES", "UNIQUE"]
