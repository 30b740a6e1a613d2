"""How fast the viewer's eval index opens in headless Chromium, at 1,000 and 5,000 problems.

For each size it writes a synthetic eval folder in the run format (tests/view_fixtures.py: a full
MAPS transcript and an image per problem), then measures:
- the folder export (`maps view RUN --out DIR`): seconds to write it, the index's size, and the
  index's load time in Chromium (navigation start to the end of the load event, from the page's
  own Navigation Timing, plus the time until the script has run: rows filtered, histogram drawn);
- the served index (`maps view RUN --serve`): the same load time, server rendering included;
- the live feed: seconds from a turn appended to a transcript to that turn shown on its served
  page (the first size only);
- with --single-file, the old one-file page too (slow: every problem and image inlined).
Target: the index under 3 s at 5,000 problems.

    PYTHONPATH=. python perf/viewer_load.py [--sizes 1000 5000] [--single-file]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.view import export_view, write_view  # noqa: E402
from maps_autogen.view.server import ViewServer  # noqa: E402
from tests.chromium import Chromium, find_chromium  # noqa: E402
from tests.view_fixtures import write_synthetic_eval  # noqa: E402

# Navigation start -> load event end, and -> the moment the script marked the page ready.
TIMING = """(() => { const nav = performance.getEntriesByType('navigation')[0];
  return {load_ms: nav.loadEventEnd, rows: document.querySelectorAll('#index-table tbody tr').length,
          ready: document.documentElement.getAttribute('data-ready')}; })()"""


def measure(browser: Chromium, target: Path | str) -> dict:
    started = time.perf_counter()
    tab = browser.open(target)
    wall = time.perf_counter() - started
    timing = tab.js(TIMING)
    errors = tab.console_errors()
    browser.call("Target.closeTarget", {"targetId": browser.call("Target.getTargets")["targetInfos"][-1]["targetId"]})
    return {**timing, "wall_s": wall, "errors": len(errors)}


# Resolves when the page shows more turns than it had before the write: a live turn is on screen.
WAIT_FOR_TURN = """new Promise(done => { const wait = () =>
  document.querySelectorAll('article.turn').length > window.__had ? done() : setTimeout(wait, 5); wait(); })"""


def live_latency(browser: Chromium, eval_dir: Path, rounds: int = 5) -> list[float]:
    """Seconds from a turn appended to a problem's transcript to that turn shown on its served page."""
    run_dir = eval_dir / "problems" / "q1"
    transcript = run_dir / "transcript.jsonl"
    record = json.loads(transcript.read_text().splitlines()[2])
    latencies = []
    with ViewServer(run_dir) as server:
        tab = browser.open(server.url)
        tab.js("new Promise(done => { const wait = () => "
               "document.getElementById('live-status').textContent.endsWith('on') ? done() : setTimeout(wait, 20); "
               "wait(); })")
        for _ in range(rounds):
            tab.js("window.__had = document.querySelectorAll('article.turn').length")
            started = time.perf_counter()
            with open(transcript, "a") as handle:
                handle.write(json.dumps(record) + "\n")
            tab.js(WAIT_FOR_TURN)
            latencies.append(time.perf_counter() - started)
    return latencies


def report(label: str, size_bytes: int | None, result: dict) -> None:
    size = f"{size_bytes / 1e6:7.1f} MB" if size_bytes is not None else "     -    "
    print(f"  {label:<22} {size}  load {result['load_ms'] / 1000:6.2f} s  (wall {result['wall_s']:6.2f} s)  "
          f"rows {result['rows']:>5}  script ran: {result['ready'] == '1'}  console errors: {result['errors']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--single-file", action="store_true",
                        help="also time the old self-contained page (minutes at 5,000)")
    args = parser.parse_args()
    binary = find_chromium()
    if binary is None:
        sys.exit("no Chromium found: run scripts/setup_browser.sh or set MAPS_CHROMIUM")
    with tempfile.TemporaryDirectory(prefix="maps-viewer-bench-") as temp:
        base = Path(temp)
        browser = Chromium(binary, base / "profile")
        try:
            for size in args.sizes:
                eval_dir = base / f"eval-{size}"
                started = time.perf_counter()
                write_synthetic_eval(eval_dir, size)
                print(f"{size} problems (synthetic eval written in {time.perf_counter() - started:.1f} s)")
                started = time.perf_counter()
                index = export_view(eval_dir, base / f"site-{size}")
                print(f"  export written in {time.perf_counter() - started:.1f} s")
                report("exported index.html", index.stat().st_size, measure(browser, index))
                with ViewServer(eval_dir) as server:
                    report("served index", None, measure(browser, server.url))
                if size == args.sizes[0]:
                    latencies = live_latency(browser, eval_dir)
                    print(f"  live turn, written -> on the served page: median {statistics.median(latencies):.2f} s, "
                          f"max {max(latencies):.2f} s over {len(latencies)} turns (target: within a second)")
                if args.single_file:
                    page = write_view(eval_dir, base / f"single-{size}.html")
                    report("single file (old)", page.stat().st_size, measure(browser, page))
        finally:
            browser.close()
    print("target: index under 3 s at 5,000 problems")


if __name__ == "__main__":
    main()
