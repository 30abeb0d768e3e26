"""The sites' learned templates of a crawl (:mod:`newsdedup.extract.template`), kept in the store between runs.

In a distributed crawl a site's first pages are shared with the run's other processes (``share``, set when the
process joins the run: :class:`newsdedup.distributed.shared_templates.SharedTemplates`), so that a new site's
template warms up on the run's pages, not only on this process's share of them.
"""

from __future__ import annotations

import logging

from newsdedup.extract.template import MIN_PAGES, SiteTemplate
from newsdedup.storage.base import ArticleStore

logger = logging.getLogger(__name__)

# A distributed crawl shares what a site's pages teach while this process's template of the site has seen fewer:
# its warm-up, with a margin for the held pages' first readings, which are taken back when they are read again.
SHARED_PAGES = 2 * MIN_PAGES


def _state_name(site: str) -> str:
    return f"extract/template/{site}"


class SiteTemplates:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled  # NEWSDEDUP_EXTRACT_SITE_TEMPLATES
        self.learned: dict[str, SiteTemplate] = {}
        self.share = None  # a distributed crawl's SharedTemplates, once the process joined the run

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
        if self.share is not None:
            self.share.catch_up(site, template)  # what the run's other processes' pages taught
        return template

    def learn(self, site: str, template: SiteTemplate, lines, body, *, held: bool = False, title: str | None = None,
              texts=()):
        """``template.learn(...)``, its block counts shared with the run's other processes during the site's
        warm-up; ``held``: a held page's first reading, taken back with :meth:`forget` when the page is read again.
        ``title`` and ``texts`` (for the repeated-body check) stay with this process's template."""
        shared = self.share is not None and template.pages < SHARED_PAGES
        page = template.learn(lines, body, title=title, texts=texts)
        if shared:
            self.share.learned(site, page, held=held)
        return page

    def forget(self, site: str, template: SiteTemplate, page) -> None:
        template.forget(page)
        if self.share is not None:
            self.share.forgot(site, page)

    def save(self, store: ArticleStore) -> None:
        """Every template learned in this run; committed with the store's next flush."""
        for site, template in self.learned.items():
            store.save_state(_state_name(site), template.to_bytes())


__all__ = ["SiteTemplates"]
