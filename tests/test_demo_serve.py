"""``newsdedup demo --serve``: the mini-portal served until stopped, with its site file, to crawl by hand."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import tomllib
import urllib.request


def test_demo_serve_writes_a_site_file_serves_its_pages_and_stops_cleanly_on_sigterm(tmp_path):
    sites = tmp_path / "demo-sites.toml"
    proc = subprocess.Popen([sys.executable, "-m", "newsdedup.cli", "demo", "--serve", "--sites-out", str(sites)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not sites.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no site file after 120 s"
            time.sleep(0.1)
        entries = tomllib.loads(sites.read_text(encoding="utf-8"))["site"]
        assert [site["name"] for site in entries] == ["dongfang", "nanling", "xinghe", "qinghe"]
        start = entries[0]["start_urls"][0]
        with urllib.request.urlopen(start, timeout=30) as response:
            assert response.status == 200 and "东方" in response.read().decode("utf-8")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"newsdedup crawl --sites {sites} " in out
