"""The README's picture of `ganforge explore` (docs/explore.png), taken from trained networks in headless Chromium.

    .venv/bin/python benchmarks/explore_screenshot.py runs/00000-digits-tiny-gpus1-batch16/snapshots/A.safetensors \
        runs/00000-digits-tiny-gpus1-batch16/snapshots/B.safetensors --seed 6 --trunc 0.7

Run it from the folder the paths are relative to: the page shows each network's path in its `generate` command, and
a picture should show a path a reader could have, not a temporary folder. The networks are served on loopback by the
real `ganforge explore`, stopped on the way out. Needs Playwright and Chromium (the dev extra; /usr/bin/chromium).
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
WAIT_MS = 120_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="+", help="snapshots or run folders, shown side by side")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "explore.png")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trunc", type=float, default=1.0)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    command = [sys.executable, "-m", "ganforge", "explore", "--port", "0", "--device", "cpu"]
    for network in args.networks:
        command += ["--network", network]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ | {"OMP_NUM_THREADS": "1"})
    try:
        url = _printed_url(server)
        _screenshot(url, args)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {args.out}")


def _printed_url(server: subprocess.Popen) -> str:
    for line in server.stdout:
        if line.startswith("ganforge explore: http://"):
            return line.split()[2]
    raise SystemExit(f"ganforge explore exited {server.wait()} without serving")


def _screenshot(url: str, args) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 820})
        page.goto(url)
        page.wait_for_selector('figure[data-net="0"][data-state=ready]', timeout=WAIT_MS)
        for control, value in (("#seed", args.seed), ("#trunc", args.trunc)):
            page.eval_on_selector(
                control, "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }", str(value)
            )
        page.wait_for_function(
            """(seed) => [...document.querySelectorAll("figure.card")].every((figure) =>
                figure.dataset.state === "ready" && figure.querySelector("img.shown").dataset.url.includes(seed))
                && document.querySelector("#grid").complete""",
            arg=f"seed={args.seed}",
            timeout=WAIT_MS,
        )
        page.screenshot(path=str(args.out))
        browser.close()


if __name__ == "__main__":
    main()
