"""How fast the viewer's eval index is served and opens in headless Chromium, at 1,000 and 5,000 problems.

For each size it writes a synthetic eval folder in the run format (tests/helpers/view_fixtures.py: a full
MAPS transcript and an image per problem), then measures:
- `maps view RUN --serve` over HTTP: time to the first byte of the index on the first request (it
  renders the page), on a second one (served from its cache), and after results.jsonl grew by a
  row (rendered once more), beside the exported index.html served as a plain file (the baseline);
  the run's files are dated 10 s back, as a finished run's are (a file modified within 2 s of a
  render is not trusted, so a page over it is rendered again);
- the folder export (`maps view RUN --out DIR`): seconds to write it, the index's size, and the
  index's load time in Chromium (navigation start to the end of the load event, from the page's
  own Navigation Timing, plus the time until the script has run: rows filtered, histogram drawn);
- the served index (`maps view RUN --serve`): the same load time, server rendering included;
- the live feed: seconds from a turn appended to a transcript to that turn shown on its served
  page (the first size only);
- with --single-file, the old one-file page too (slow: every problem and image inlined).
Target: the index under 3 s at 5,000 problems.

    .venv/bin/python perf/viewer_load.py [--sizes 1000 5000] [--single-file] [--no-browser]
    .venv/bin/python perf/viewer_load.py --short     # seconds: 50 problems, HTTP only
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.report.view import (  # noqa: E402
    ViewServer,
    export_view,
    write_view,
)
from tests.helpers.chromium import Chromium, find_chromium  # noqa: E402
from tests.helpers.view_fixtures import write_synthetic_eval  # noqa: E402

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


def first_byte(url: str) -> tuple[float, float, int]:
    """Seconds to the response's first byte (its status line and headers, sent once the page is
    rendered) and to its last, and the body's size."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
    try:
        started = time.perf_counter()
        connection.request("GET", parts.path)
        response = connection.getresponse()
        headers = time.perf_counter() - started
        body = response.read()
        assert response.status == 200, (response.status, body[:200])
        return headers, time.perf_counter() - started, len(body)
    finally:
        connection.close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


def time_served(eval_dir: Path, site: Path, repeats: int = 5) -> None:
    """The served index (first request, cached, after a change) beside the static file."""
    aged = time.time() - 10
    for path in [eval_dir, *eval_dir.iterdir()]:
        os.utime(path, (aged, aged))
    static = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=static.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{static.server_address[1]}/index.html"
        first_byte(url)  # the file in the page cache, as the served index's files are
        plain = [first_byte(url)[0] for _ in range(repeats)]
    finally:
        static.shutdown()
        static.server_close()
    with ViewServer(eval_dir) as server:
        head, whole, size = first_byte(server.url)
        print(f"  served index, first request (renders): first byte {head:.3f} s, whole {whole:.3f} s, "
              f"{size / 1e6:.1f} MB")
        cached = [first_byte(server.url)[0] for _ in range(repeats)]
        print(f"  served index, again (cached): first byte {statistics.median(cached):.4f} s median of {repeats}")
        results = eval_dir / "results.jsonl"
        row = json.loads(results.read_text().splitlines()[0])
        with open(results, "a") as handle:
            handle.write(json.dumps({**row, "pid": "added", "run_dir": None}) + "\n")
        os.utime(results, (aged + 1, aged + 1))
        changed = first_byte(server.url)[0]
        again = first_byte(server.url)[0]
        print(f"  served index after results.jsonl grew (renders once): first byte {changed:.3f} s, "
              f"then {again:.4f} s; renders {server.pages.renders['index']}")
    print(f"  static index.html (the export, a plain file server): first byte {statistics.median(plain):.4f} s "
          f"median of {repeats}")


def report(label: str, size_bytes: int | None, result: dict) -> None:
    size = f"{size_bytes / 1e6:7.1f} MB" if size_bytes is not None else "     -    "
    print(f"  {label:<22} {size}  load {result['load_ms'] / 1000:6.2f} s  (wall {result['wall_s']:6.2f} s)  "
          f"rows {result['rows']:>5}  script ran: {result['ready'] == '1'}  console errors: {result['errors']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--single-file", action="store_true",
                        help="also time the old self-contained page (minutes at 5,000)")
    parser.add_argument("--no-browser", action="store_true", help="only the HTTP timings (no Chromium)")
    parser.add_argument("--short", action="store_true", help="seconds: 50 problems, HTTP only")
    args = parser.parse_args()
    if args.short:
        args.sizes, args.no_browser, args.single_file = [50], True, False
    binary = None if args.no_browser else find_chromium()
    if binary is None and not args.no_browser:
        sys.exit("no Chromium found: run scripts/setup_browser.sh or set MAPS_CHROMIUM (or pass --no-browser)")
    with tempfile.TemporaryDirectory(prefix="maps-viewer-bench-") as temp:
        base = Path(temp)
        browser = Chromium(binary, base / "profile") if binary is not None else None
        try:
            for size in args.sizes:
                eval_dir = base / f"eval-{size}"
                started = time.perf_counter()
                write_synthetic_eval(eval_dir, size)
                print(f"{size} problems (synthetic eval written in {time.perf_counter() - started:.1f} s)")
                started = time.perf_counter()
                index = export_view(eval_dir, base / f"site-{size}")
                print(f"  export written in {time.perf_counter() - started:.1f} s")
                time_served(eval_dir, index.parent)
                if browser is None:
                    continue
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
            if browser is not None:
                browser.close()
    print("target: index under 3 s at 5,000 problems")


if __name__ == "__main__":
    main()
