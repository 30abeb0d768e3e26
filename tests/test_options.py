"""One settings-to-options path: defaults from newsdedup/defaults.py, errors that name the setting."""

import re
import sqlite3

import pytest
from scrapy.settings import Settings

from newsdedup import defaults
from newsdedup.extract.extractor import ExtractOptions
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.run import options
from newsdedup.run.options import SettingError
from newsdedup.storage.base import StoreError
from newsdedup.storage.sqlite import SCHEMA_VERSION, SQLiteStore


def test_option_objects_default_to_the_settings_module():
    assert options.near_settings({}) == NearSettings()
    assert options.feature_config({}) == FeatureConfig()
    assert options.extract_options({}) == ExtractOptions()
    assert NearSettings().spotsigs_tau == defaults.NEWSDEDUP_SPOTSIGS_TAU
    assert NearSettings().spotsigs_min_containment == defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT


def test_scrapy_settings_and_plain_dicts_read_alike():
    scrapy_settings = Settings({"NEWSDEDUP_SPOTSIGS_TAU": "0.55", "NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT": "none"})
    plain = {"NEWSDEDUP_SPOTSIGS_TAU": 0.55, "NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT": "off"}
    assert options.near_settings(scrapy_settings) == options.near_settings(plain)
    assert options.near_settings(plain).spotsigs_min_containment is None
    assert options.near_settings({}).spotsigs_containment_whole_below is None  # off unless set
    whole = options.near_settings({"NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW": "0.6"})
    assert whole.spotsigs_containment_whole_below == 0.6


@pytest.mark.parametrize(
    "name, value, reader",
    [
        ("NEWSDEDUP_WORKERS", "two", options.workers),
        ("NEWSDEDUP_WORKERS", "-1", options.workers),
        ("NEWSDEDUP_SPOTSIGS_TAU", "high", options.near_settings),
        ("NEWSDEDUP_NEAR_METHOD", "minhash", options.near_settings),
        ("NEWSDEDUP_SIMHASH_BITS", "96", options.feature_config),
        ("NEWSDEDUP_EXTRACT_MIN_CHARS", "1.5", options.extract_options),
    ],
)
def test_a_bad_value_names_its_setting(name, value, reader):
    with pytest.raises(options.SettingError, match=name):
        reader({name: value})


def test_workers_unset_means_one_per_core_and_zero_means_inline():
    assert options.workers({}) is None
    assert options.workers({"NEWSDEDUP_WORKERS": ""}) is None
    assert options.workers({"NEWSDEDUP_WORKERS": "0"}) == 0


def test_a_version_1_database_is_migrated_and_keeps_its_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE articles (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, site TEXT, title TEXT,
            text TEXT NOT NULL, published_at TEXT, author TEXT, source TEXT, canonical_url TEXT,
            fetched_at TEXT NOT NULL, fingerprint BLOB NOT NULL, status TEXT NOT NULL, duplicate_of TEXT,
            cluster_id INTEGER, similarity REAL, method TEXT, simhash INTEGER, spots BLOB);
        INSERT INTO articles (id, url, text, fetched_at, fingerprint, status, duplicate_of, cluster_id, similarity)
            VALUES (1, 'http://a/1', 'x', '2026-01-01', x'01', 'unique', NULL, 1, NULL),
                   (2, 'http://a/2', 'y', '2026-01-01', x'02', 'near_duplicate', 'http://a/1', 1, 0.62);
        """
    )
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        rows = {row["url"]: row for row in store.iter_export()}
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION
    assert rows["http://a/2"]["score"] == 0.62 and rows["http://a/2"]["measure"] is None
    assert rows["http://a/1"]["score"] is None


def test_a_database_from_a_newer_newsdedup_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    with SQLiteStore(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=f"{path} has schema version {SCHEMA_VERSION + 1}, newer"):
        SQLiteStore(path).open()


@pytest.mark.parametrize("settings, says", [
    ({"NEWSDEDUP_EXTRACT_TIMEOUT": "-1"}, "NEWSDEDUP_EXTRACT_TIMEOUT: must be > 0"),
    ({"NEWSDEDUP_EXTRACT_TIMEOUT": "soon"}, "NEWSDEDUP_EXTRACT_TIMEOUT: expected a number or none"),
    ({"NEWSDEDUP_RETRY_MAX_ATTEMPTS": "0"}, "NEWSDEDUP_RETRY_MAX_ATTEMPTS: must be >= 1"),
    ({"NEWSDEDUP_RETRY_BACKOFF": "-5"}, "NEWSDEDUP_RETRY_BACKOFF: must be >= 0"),
    ({"NEWSDEDUP_MAX_HTTP_ERROR_SHARE": "20"}, "NEWSDEDUP_MAX_HTTP_ERROR_SHARE: expected a share between 0 and 1"),
    ({"NEWSDEDUP_STORAGE_BUSY_TIMEOUT": "x"}, "NEWSDEDUP_STORAGE_BUSY_TIMEOUT: expected a number"),
    ({"NEWSDEDUP_EXTRACT_SITE_TEMPLATES": "maybe"}, "NEWSDEDUP_EXTRACT_SITE_TEMPLATES: expected True or False"),
])
def test_run_health_settings_name_themselves(settings, says):
    from newsdedup.crawl.pipelines.state import CrawlSettings

    with pytest.raises(SettingError, match=re.escape(says)):
        CrawlSettings.from_settings(settings)


def test_run_health_settings_defaults_and_off():
    from newsdedup.crawl.pipelines.state import CrawlSettings

    crawl = CrawlSettings.from_settings({"NEWSDEDUP_EXTRACT_TIMEOUT": "none"})
    assert crawl.extract_timeout is None and crawl.retry.max_attempts == 4 and crawl.max_http_error_share == 0.2
