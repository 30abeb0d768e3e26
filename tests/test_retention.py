"""Retention window: a story silent for longer than NEWSDEDUP_RETENTION_DAYS leaves the crawl's filters and
indexes (its rows stay), so when it returns it starts a new cluster; old article URLs are still not refetched.

The clock is moved with libfaketime (Debian package ``faketime``) around a real ``scrapy crawl``.
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from local_site import STORY, LocalSite, check_store_consistent, crawl, edited, export_rows
from newsdedup.run.options import SettingError
from newsdedup.run.retention import retention_days

FAKETIME = shutil.which("faketime")


def later(days: int) -> tuple[str, ...]:
    # An offset, not a fixed time: the clocks move on as usual, 40 days later. (Faking only the wall clock,
    # FAKETIME_DONT_FAKE_MONOTONIC=1, makes libfaketime fail sleeps with EINVAL, which breaks the worker pool.)
    return (FAKETIME, f"+{days} days")


@pytest.mark.skipif(FAKETIME is None, reason="needs libfaketime: apt-get install faketime")
# E-Simhash restores its saved index (corpus statistics and centres) rather than rebuilding it from the store:
# the window must apply to the restored centres too.
@pytest.mark.parametrize("method", ["spotsigs", "esimhash"])
def test_a_story_back_after_the_window_starts_a_new_cluster_and_old_urls_stay_unfetched(tmp_path, method):
    near = ("-s", f"NEWSDEDUP_NEAR_METHOD={method}")
    db = tmp_path / "news.sqlite"
    with LocalSite(("alpha", "beta", "gamma")) as site:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        original = site.publish("alpha", 1, "临江推行社区食堂", STORY, "2026-11-16 08:40")
        site.publish("beta", 1, "社区食堂来了", edited(STORY), "2026-11-16 10:15")
        first_sites = tmp_path / "first-sites.toml"  # gamma has published nothing yet
        first_sites.write_text(site.sites_toml(("alpha", "beta")), encoding="utf-8")
        crawl(first_sites, db, *near)
        before = {row["url"]: row for row in export_rows(db)}
        old_cluster = before[original]["cluster_id"]
        assert len({row["cluster_id"] for row in before.values()}) == 1

        # The story comes back on gamma (alpha's list still links the old article).
        back = site.publish("gamma", 1, "社区食堂一周年", edited(STORY), "2026-11-16 12:00")
        moved, off = tmp_path / "later.sqlite", tmp_path / "off.sqlite"
        shutil.copy(db, moved)
        shutil.copy(db, off)

        crawl(sites_file, db, *near)  # within the window: the same story
        assert {row["url"]: row for row in export_rows(db)}[back]["cluster_id"] == old_cluster

        log = crawl(sites_file, moved, *near, prefix=later(40))  # 40 days on, past the 30-day window
        rows = {row["url"]: row for row in export_rows(moved)}
        assert rows[back]["status"] == "unique" and rows[back]["cluster_id"] != old_cluster
        assert {url: rows[url] for url in before} == before  # the old rows stay as they were
        # alpha's and beta's old articles, still linked: out of the URL filter, yet never fetched again.
        assert site.requests["/alpha/news/1.html"] == site.requests["/beta/news/1.html"] == 1
        assert "'newsdedup/urlfilter/filtered_before_window': 2" in log
        assert "'newsdedup/exact/known_fingerprints': 0" in log and "'newsdedup/near/known_centres': 0" in log
        conn = sqlite3.connect(moved)
        assert conn.execute("SELECT members FROM clusters WHERE cluster_id = ?", (old_cluster,)).fetchone() == (2,)
        conn.close()
        check_store_consistent(moved)

        # The same clock with the window switched off: the story joins its old cluster.
        crawl(sites_file, off, *near, "-s", "NEWSDEDUP_RETENTION_DAYS=0", prefix=later(40))
        assert {row["url"]: row for row in export_rows(off)}[back]["cluster_id"] == old_cluster


@pytest.mark.parametrize(("value", "expected"), [("30", 30.0), ("0", None), ("none", None), ("0.5", 0.5)])
def test_retention_setting(value, expected):
    assert retention_days({"NEWSDEDUP_RETENTION_DAYS": value}) == expected


def test_a_negative_window_names_the_setting():
    with pytest.raises(SettingError, match="NEWSDEDUP_RETENTION_DAYS"):
        retention_days({"NEWSDEDUP_RETENTION_DAYS": "-1"})
