"""Origin by publication time in real crawls: the copy is crawled before the original, then an even
earlier copy arrives in a later run. Real ``scrapy crawl`` subprocesses against a local site."""

from __future__ import annotations

import json

from local_site import OTHER_STORY, STORY, LocalSite, check_store_consistent, crawl, edited, export_rows, newsdedup

TITLE = "临江推行社区食堂 老人每餐补贴三元"


def test_the_earliest_published_copy_is_the_origin_whatever_the_crawl_order(tmp_path):
    db = tmp_path / "news.sqlite"
    with LocalSite(("alpha", "beta", "gamma")) as site:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(site.sites_toml(("alpha", "beta")), encoding="utf-8")  # gamma has nothing yet
        # beta reprinted the story at 10:15; alpha published it at 08:40 but its page is answered only once beta's
        # was sent whole, so the crawl receives (and clusters) beta's copy first, whatever the machine's speed.
        original = site.publish("alpha", 1, TITLE, STORY, "2026-11-16 08:40",
                                after=f"{site.base_url}/beta/news/1.html")
        copy = site.publish("beta", 1, "社区食堂来了", edited(STORY), "2026-11-16 10:15")
        site.publish("beta", 2, "本周后期全省降温", OTHER_STORY, "2026-11-16 09:00")
        crawl(sites_file, db)

        rows = {row["url"]: row for row in export_rows(db)}
        assert rows[copy]["status"] == "unique"  # fetched first: it heads the cluster ...
        assert rows[original]["status"] == "near_duplicate" and rows[original]["duplicate_of"] == copy
        assert rows[original]["origin_url"] == rows[copy]["origin_url"] == original  # ... the original is the origin
        check_store_consistent(db)

        # Next run: gamma's verbatim copy, dated 07:30, is found only now: it becomes the origin.
        earliest = site.publish("gamma", 1, TITLE, STORY, "2026-11-16 07:30")
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db)
        rows = {row["url"]: row for row in export_rows(db)}
        assert rows[earliest]["status"] == "exact_duplicate"
        story = [r for r in rows.values() if r["cluster_id"] == rows[copy]["cluster_id"]]
        assert len(story) == 3 and {r["origin_url"] for r in story} == {earliest}
        check_store_consistent(db)

        report = newsdedup("report", "--storage", f"sqlite:///{db}", "--format", "json")
        assert report.returncode == 0, report.stderr
        (story,) = json.loads(report.stdout)["stories"]
        assert (story["origin"]["url"], story["origin"]["site"]) == (earliest, "gamma")
        assert story["origin"]["published_at"].startswith("2026-11-16T07:30")
        # Relative to the origin: alpha carries gamma's very text, beta is the edited reprint.
        assert [(c["site"], c["kind"]) for c in story["copies"]] == [("alpha", "exact"), ("beta", "near")]
