"""The extraction evaluation's "ours + site template" reading judges pages as a crawl does.

Runs :func:`~newsdedup.evaluation.extraction.evaluate_extraction` on a data folder laid out like
``xmu-finance-news``, written by the test from pages we made ourselves (the shared data is not needed).
"""

from __future__ import annotations

import gzip

from newsdedup.evaluation.extraction import evaluate_extraction
from test_site_templates import BRIEFS, MORE, _page


def test_ours_with_the_site_template_is_what_a_crawl_stores(tmp_path):
    # Every page of the portal carries another story's two paragraphs in its article element. Read alone, each
    # page keeps them; the template learned on the other half of the pages sees them in bodies, so it has no
    # boilerplate to strip, and only the crawl's template check (failure, read again without the site's shared
    # text) gives each page its own text back.
    data = tmp_path / "data" / "xmu-finance-news"
    (data / "pages").mkdir(parents=True)
    (data / "gold").mkdir()
    rows = ["id\tsite\tsuspect"]
    for n, ((title, text), more) in enumerate(zip(BRIEFS, MORE)):
        name = f"qs_{n:03d}"
        (data / "pages" / f"{name}.html.gz").write_bytes(gzip.compress(_page(title, text + more, anchored=True, leftover=True)))
        (data / "gold" / f"{name}.txt").write_text(text + more, encoding="utf-8")
        rows.append(f"{name}\tqingshan\tno")
    (data / "quality.derived.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")

    report = evaluate_extraction(tmp_path / "data", baseline=False, sets=["xmu-finance-news"], workers=0)
    portal = report["sets"]["xmu-finance-news"]["portals"]["qingshan"]
    assert portal["pages"] == len(BRIEFS) and portal["empty"] == 0
    assert portal["ours"]["precision"] < 0.8  # the leftover read as part of every article
    assert portal["ours_template"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert portal["template_failures"] == {"re-extracted": len(BRIEFS)}
