"""The reprint report as people see it: `newsdedup report` on the demo's database, rendered by headless
Chromium (Debian package `chromium`; fonts-noto-cjk for the Chinese), saved as a PNG for the README.

    python benchmarks/report_screenshot.py --out docs/report.png

tests/test_report.py renders the same page with the same function and checks the picture.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def render(page: Path, *, png: Path | None = None, size: tuple[int, int] = (1100, 1500)) -> str:
    """Load ``page`` in headless Chromium; returns the DOM it built, and saves a screenshot to ``png``."""
    browser = chromium()
    if browser is None:
        raise RuntimeError("headless Chromium not found: apt-get install -y chromium fonts-noto-cjk")
    with tempfile.TemporaryDirectory() as profile:
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
        if png is not None:
            subprocess.run([browser, *flags, f"--screenshot={png}", page.resolve().as_uri()],
                           check=True, capture_output=True, timeout=120)
        dom = subprocess.run([browser, *flags, "--dump-dom", page.resolve().as_uri()],
                             check=True, capture_output=True, text=True, timeout=120)
    return dom.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        db, page = Path(work) / "demo.sqlite", Path(work) / "report.html"
        cli = [sys.executable, "-m", "newsdedup.cli"]
        subprocess.run([*cli, "demo", "--storage", f"sqlite:///{db}"], check=True, capture_output=True)
        subprocess.run([*cli, "report", "--storage", f"sqlite:///{db}", "--top", "4", "-o", str(page)], check=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        render(page, png=args.out, size=(1100, 1250))
    from PIL import Image  # matplotlib's dependency: keep the README's picture small (a 64-colour palette)

    Image.open(args.out).convert("RGB").quantize(64).save(args.out, optimize=True)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
