"""Watches and alerts (issue 35): real crawls of a local portal, ``newsdedup alerts`` processes delivering through
Apprise's ``json://`` webhook to a receiver on 127.0.0.1 that answers as the test says (200, 500, or not at all).

Run 1 delivers exactly one alert for the watched story; run 2 nothing more for it and one for a new story (and a
threshold watch fires when a second site copies the first); a receiver answering 500 gets the alert at the next run,
with the same idempotency key; a ``kill -9`` while sending loses no alert: the next run sends it again, same key
(at least once). The texts are invented for this test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("apprise")

from conftest import REPO_ROOT  # noqa: E402
from local_site import OTHER_STORY, STORY, LocalSite, crawl  # noqa: E402

SCHOOL = [
    "临江市教育局今天发布通知，全市中小学将在下学期起统一升级学校食堂的后厨设备，并为每所学校配备专职营养师。",
    "通知要求，各校要在开学前完成燃气管道和排烟系统的安全检查，检查结果报区县教育部门备案后方可开伙。",
    "教育局有关负责人说，营养师将根据学生年龄段制定每周菜谱，并在校园网站公布，接受家长和社会监督。",
    "据统计，全市现有中小学三百二十所，其中有一百四十所学校的后厨设备使用年限超过十年，需要优先更新。",
]
HOSPITAL = [
    "南岭省人民医院门诊楼改造工程昨天完工，新门诊楼增加了二十个诊室，并在一楼设置了便民服务中心。",
    "医院职工食堂同步完成改造，面向住院患者家属开放，提供早中晚三餐，价格与职工价格保持一致。",
    "医院方面介绍，门诊楼改造后挂号、缴费、取药实现一站式办理，患者平均候诊时间预计缩短三分之一。",
    "下一步医院还将开通线上预约停车服务，缓解周边道路的交通压力，方便患者和家属就医出行。",
]
FACTORY = [
    "滨海经济开发区一家电子企业今天举行新厂区投产仪式，新厂区占地一百二十亩，建有四条自动化生产线。",
    "企业负责人介绍，新厂区投产后年产值预计达到十五亿元，可新增就业岗位八百多个，优先招聘本地居民。",
    "为改善员工生活条件，厂区内建设了员工公寓、篮球场和可同时容纳六百人就餐的员工食堂。",
    "开发区管委会表示，将继续优化营商环境，为企业提供用地、用工和融资等方面的全流程服务。",
]


class Receiver:
    """A webhook on 127.0.0.1 recording what it is sent; ``status`` is its answer, ``hold`` keeps it from answering
    until released; ``arrived`` is set when a request comes in."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.status = 200
        self.hold = False
        self.arrived = threading.Event()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.received.append({"path": self.path, "key": self.headers.get("Idempotency-Key"),
                                          "status": receiver.status, **body})
                receiver.arrived.set()
                if receiver.hold:
                    receiver.release.wait(60)
                    return  # no answer: the sender was killed meanwhile
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self, path: str) -> list[dict]:
        return [r for r in self.received if r["path"] == path and r["status"] == 200]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def alerts_command(db, watches) -> list[str]:
    return [sys.executable, "-m", "newsdedup.cli", "alerts", "--storage", f"sqlite:///{db}", "--watches", str(watches),
            "--desk-url", "http://desk.example:8321"]


def run_alerts(db, watches, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*alerts_command(db, watches), *extra], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)


def test_a_watch_alerts_once_per_new_story_retries_a_failed_delivery_and_survives_kill_9(tmp_path):
    db, sites_file, watches = tmp_path / "news.sqlite", tmp_path / "sites.toml", tmp_path / "watches.toml"
    receiver = Receiver()
    hook = f"json://127.0.0.1:{receiver.port}"
    watches.write_text(
        f'[[watch]]\nname = "canteens"\nquery = "食堂"\nnotify = ["{hook}/canteens"]\n\n'
        f'[[watch]]\nname = "spreading"\nquery = "食堂"\nmin_sites = 2\nnotify = ["{hook}/spreading"]\n',
        encoding="utf-8")
    try:
        with LocalSite(("alpha", "beta")) as site:
            canteen = site.publish("alpha", 1, "临江市推行社区食堂建设", STORY, "2026-11-27 08:00")
            site.publish("alpha", 2, "南岭省本周后期明显降温", OTHER_STORY, "2026-11-27 09:00")
            sites_file.write_text(site.sites_toml(("alpha",)), encoding="utf-8")
            crawl(sites_file, db)
            first = run_alerts(db, watches)
            assert first.returncode == 0, first.stderr
            [alert] = receiver.received
            assert alert["path"] == "/canteens" and alert["title"] == "[newsdedup] canteens: 临江市推行社区食堂建设"
            assert canteen in alert["message"] and "http://desk.example:8321/story/" in alert["message"]
            assert alert["key"].startswith("newsdedup-") and alert["key"] in alert["message"]
            assert "alerts: 1 new, 1 sent" in first.stderr

            # Run 2: beta copies the canteen story (the threshold watch fires), alpha has a new story.
            site.publish("beta", 1, "临江市推行社区食堂建设", STORY, "2026-11-27 12:00")
            school = site.publish("alpha", 3, "中小学食堂将统一升级", SCHOOL, "2026-11-27 13:00")
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            crawl(sites_file, db)
            assert run_alerts(db, watches).returncode == 0
            canteens = receiver.delivered("/canteens")
            assert [school in r["message"] for r in canteens] == [False, True]
            [spread] = receiver.delivered("/spreading")
            assert canteen in spread["message"] and "sites: 2 (alpha, beta)" in spread["message"]
            assert "reason: sites>=2" in spread["message"]

            # Run 3: the receiver answers 500: the alert is counted failed, and sent by the next run, same key.
            hospital = site.publish("alpha", 4, "省医院门诊楼改造完工", HOSPITAL, "2026-11-28 08:00")
            crawl(sites_file, db)
            receiver.status = 500
            failed = run_alerts(db, watches)
            assert failed.returncode == 1 and "1 failed, sent again by the next run" in failed.stderr
            receiver.status = 200
            assert run_alerts(db, watches).returncode == 0
            attempts = [r for r in receiver.received if hospital in r["message"]]
            assert [r["status"] for r in attempts] == [500, 200] and attempts[0]["key"] == attempts[1]["key"]

            # Run 4: killed while the receiver holds the request: the next run sends it again, same key.
            factory = site.publish("alpha", 5, "开发区电子企业新厂区投产", FACTORY, "2026-11-28 09:00")
            crawl(sites_file, db)
        receiver.hold, receiver.arrived = True, threading.Event()
        process = subprocess.Popen(alerts_command(db, watches), cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        assert receiver.arrived.wait(60)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        receiver.hold = False
        receiver.release.set()
        again = run_alerts(db, watches, "--reclaim-after", "0s")
        assert again.returncode == 0 and "0 new, 1 sent" in again.stderr
        tries = [r for r in receiver.received if factory in r["message"]]
        assert len(tries) == 2 and tries[0]["key"] == tries[1]["key"]
        assert "0 new, 0 sent" in run_alerts(db, watches).stderr  # everything owed was sent
    finally:
        receiver.close()
    keys = {r["key"] for r in receiver.received}
    assert len(keys) == 5  # four stories on one watch, one on the other: duplicates only as promised, same key


def test_a_bad_watches_file_is_one_line_exit_2(tmp_path):
    watches = tmp_path / "watches.toml"
    watches.write_text('[[watch]]\nname = "x"\nquery = "食堂"\nnotify = ["json://127.0.0.1:9"]\nmin_sites = 0\n',
                       encoding="utf-8")
    result = run_alerts(tmp_path / "none.sqlite", watches)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "watch 'x': min_sites must be a whole number >= 1" in result.stderr


def test_the_monitor_sends_the_alerts_after_each_run(tmp_path):
    db, sites_file, watches = tmp_path / "news.sqlite", tmp_path / "sites.toml", tmp_path / "watches.toml"
    receiver = Receiver()
    watches.write_text(f'[[watch]]\nname = "canteens"\nquery = "社区食堂"\n'
                       f'notify = ["json://127.0.0.1:{receiver.port}/canteens"]\n', encoding="utf-8")
    try:
        with LocalSite(("alpha",)) as site:
            site.publish("alpha", 1, "临江市推行社区食堂建设", STORY, "2026-11-27 08:00")
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            result = subprocess.run(
                [sys.executable, "-m", "newsdedup.cli", "monitor", "--every", "1s", "--runs", "1", "--sites",
                 str(sites_file), "--storage", f"sqlite:///{db}", "--log", str(tmp_path / "monitor.log"),
                 "--alerts", str(watches), "--set=DOWNLOAD_DELAY=0", "--set=AUTOTHROTTLE_ENABLED=False",
                 "--set=NEWSDEDUP_WORKERS=1", "--set=TELNETCONSOLE_ENABLED=False"],
                cwd=tmp_path, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stderr
        assert "alerts: 1 new, 1 sent" in (tmp_path / "monitor.log").read_text(encoding="utf-8")
        [alert] = receiver.received
        assert alert["title"] == "[newsdedup] canteens: 临江市推行社区食堂建设"
    finally:
        receiver.close()


def test_two_runs_at_once_send_an_alert_once(tmp_path):
    """The first run is sending (the receiver holds its request); a second run started meanwhile finds the alert
    claimed and sends nothing."""
    db, sites_file, watches = tmp_path / "news.sqlite", tmp_path / "sites.toml", tmp_path / "watches.toml"
    receiver = Receiver()
    watches.write_text(f'[[watch]]\nname = "canteens"\nquery = "食堂"\nnotify = ["json://127.0.0.1:{receiver.port}/c"]\n',
                       encoding="utf-8")
    try:
        with LocalSite(("alpha",)) as site:
            site.publish("alpha", 1, "临江市推行社区食堂建设", STORY, "2026-11-27 08:00")
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            crawl(sites_file, db)
        receiver.hold = True
        first = subprocess.Popen(alerts_command(db, watches), cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        assert receiver.arrived.wait(60)
        second = run_alerts(db, watches)
        assert second.returncode == 0 and "alerts: 0 new, 0 sent" in second.stderr
        receiver.hold = False
        receiver.release.set()  # the held request ends unanswered: the first run counts it failed
        first.wait(60)
        assert len(receiver.received) == 1
        third = run_alerts(db, watches, "--reclaim-after", "0s")
        assert "1 sent" in third.stderr and len(receiver.received) == 2
        assert receiver.received[0]["key"] == receiver.received[1]["key"]
    finally:
        receiver.close()


def test_a_crawl_sends_its_watches_alerts_when_it_closes(tmp_path):
    """NEWSDEDUP_ALERTS: the crawl itself sends the alerts when it closes. Run 1: one alert; run 2: none more for
    that story, one for the new story, which the receiver refuses (500): counted in the closing summary, the exit
    status unchanged; run 3 delivers it with the same key."""
    db, sites_file, watches = tmp_path / "news.sqlite", tmp_path / "sites.toml", tmp_path / "watches.toml"
    receiver = Receiver()
    watches.write_text(f'[[watch]]\nname = "canteens"\nquery = "食堂"\n'
                       f'notify = ["json://127.0.0.1:{receiver.port}/canteens"]\n', encoding="utf-8")
    settings = ("-s", f"NEWSDEDUP_ALERTS={watches}", "-s", "NEWSDEDUP_DESK_URL=http://desk.example:8321")
    try:
        with LocalSite(("alpha",)) as site:
            canteen = site.publish("alpha", 1, "临江市推行社区食堂建设", STORY, "2026-11-27 08:00")
            site.publish("alpha", 2, "南岭省本周后期明显降温", OTHER_STORY, "2026-11-27 09:00")
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            first = crawl(sites_file, db, *settings)
            [alert] = receiver.received
            assert canteen in alert["message"] and "http://desk.example:8321/story/" in alert["message"]
            assert "alerts: 1 new, 1 sent" in first.split("newsdedup run finished")[1]

            school = site.publish("alpha", 3, "中小学食堂将统一升级", SCHOOL, "2026-11-27 13:00")
            receiver.status = 500
            second = crawl(sites_file, db, *settings)  # exit status 0: asserted by crawl()
            assert "alerts: 1 new, 0 sent; 1 failed, sent again by the next run" in second
            receiver.status = 200
            third = crawl(sites_file, db, *settings)
            assert "alerts: 0 new, 1 sent" in third
    finally:
        receiver.close()
    assert [(school in r["message"], r["status"]) for r in receiver.received] == [(False, 200), (True, 500), (True, 200)]
    assert receiver.received[1]["key"] == receiver.received[2]["key"]


def test_a_crawl_with_a_bad_watches_file_stops_before_it_starts(tmp_path):
    watches = tmp_path / "watches.toml"
    watches.write_text('[[watch]]\nname = "x"\nquery = "食堂"\nnotify = ["json://127.0.0.1:9"]\nmin_sites = 0\n',
                       encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", "crawl", "-s", f"NEWSDEDUP_ALERTS={watches}",
                             "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{tmp_path / 'news.sqlite'}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        f"newsdedup: error: NEWSDEDUP_ALERTS: {watches}: watch 'x': min_sites must be a whole number >= 1"])
    assert not (tmp_path / "news.sqlite").exists()
