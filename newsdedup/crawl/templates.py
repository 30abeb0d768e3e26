"""The sites' learned templates of a crawl (:mod:`newsdedup.extract.template`), kept in the store between runs."""

from __future__ import annotations

import logging

from newsdedup.extract.template import SiteTemplate
from newsdedup.storage.base import ArticleStore

logger = logging.getLogger(__name__)


def _state_name(site: str) -> str:
    return f"extract/template/{site}"


class SiteTemplates:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled  # NEWSDEDUP_EXTRACT_SITE_TEMPLATES
        self.learned: dict[str, SiteTemplate] = {}

    def of(self, site: str, store: ArticleStore) -> SiteTemplate | None:
        """The template of ``site`` (restored from ``store`` the first time), None when templates are switched off."""
        if not self.enabled:
            return None
        template = self.learned.get(site)
        if template is None:
            blob = store.load_state(_state_name(site))
            try:
                template = SiteTemplate.from_bytes(blob) if blob is not None else SiteTemplate()
            except ValueError as exc:
                logger.warning("site template of %s not restored (%s): learning it again", site, exc)
                template = SiteTemplate()
            self.learned[site] = template
        return template

    def save(self, store: ArticleStore) -> None:
        """Every template learned in this run; committed with the store's next flush."""
        for site, template in self.learned.items():
            store.save_state(_state_name(site), template.to_bytes())


__all__ = ["SiteTemplates"]
