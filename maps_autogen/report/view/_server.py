"""`maps view RUN --serve`: a small local web server over one run folder, live while the run goes on.

It binds to 127.0.0.1 by default and every URL starts with a random token
(`http://127.0.0.1:PORT/TOKEN/`), so other local users cannot read the run: requests without the
token are refused, and so is any path that would leave the run folder (`..`, absolute paths,
symlinks pointing out). Only pages it renders, images and two live feeds are served:

- `TOKEN/` (index.html): a solve run's page, or an eval's index with its filters;
- `TOKEN/problems/<key>.html`: one eval problem's page;
- `TOKEN/files/<path>`: an image inside the run folder;
- `TOKEN/events/transcript[?problem=<key>]` and `TOKEN/events/results`: server-sent events that
  carry new turns and events (and the outcome when run.json changes) or newly finished problems
  (and the updated summary), rendered by the same functions as the pages, polled from the files
  every POLL_S seconds;
- beside `maps solve --human --view` (`human`: the chat's `HumanDesk`), the solve's transcript feed
  also carries `human` events (the pause the chat waits at, as JSON, or none), and a POST of
  `{"pause": N, "answer": "..."}` (JSON, at most HUMAN_BODY_BYTES) to `TOKEN/human` answers it
  (refused unless its Host names this server and, when it carries an Origin, that is this
  server's own page).

Pages are rendered once per change (`PageCache`): the index of a 5,000-problem eval takes most of
a second to render, so a page is kept with the stamps (inode, size, mtime) of the files and folders
it was rendered from and served again while none of them changed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import secrets
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from maps_autogen._util import DataError, UsageError, redact
from maps_autogen.eval import latest_by_pid
from maps_autogen.orchestration import HumanDesk
from maps_autogen.records import (
    IMAGES_DIR,
    MANIFEST_FILE,
    PROBLEMS_DIR,
    RESULTS_FILE,
    RUN_FILE,
    TRANSCRIPT_FILE,
    TURN_FILE,
    ResultRow,
    inside,
    problem_folder,
    read_manifest,
    read_result_rows,
    read_transcript_from,
)
from maps_autogen.report.view._assets import PageMode, content_security_policy
from maps_autogen.report.view._eval_pages import (
    Row,
    load_results,
    neighbours,
    render_eval_summary,
    render_index_row,
    render_problem_page,
    row_folder,
    unfinished_rows,
    unnamed_folders,
)
from maps_autogen.report.view._page_cache import PageCache
from maps_autogen.report.view._page_cache import stamp_of as _stamp
from maps_autogen.report.view._pages import index_page
from maps_autogen.report.view._prepare import TranscriptState, team_of
from maps_autogen.report.view._render import (
    FILES_PREFIX,
    IMAGE_MIME,
    INDEX_PAGE,
    PROBLEMS_PAGES,
    Links,
    kind_of,
    page,
    page_key,
    read_run_or_none,
    render_outcome_and_usage,
    render_records,
    render_thinking,
)

logger = logging.getLogger(__name__)
POLL_S = 0.2  # how often a live feed looks at the files (new turns show within a second)
UNFINISHED_EVERY = 5  # at most this often (in polls) a folder waiting for its run.json is looked at again
KEEPALIVE_S = 15.0  # an SSE comment now and then keeps proxies and browsers from timing out
CLOSE_WAIT_S = 2.0  # how long closing waits for the live feeds' last words
_KEY = re.compile(r"[A-Za-z0-9._-]{1,100}")  # what safe_paths.safe_component gives
# a person's answer posted by the page (the answer itself is bounded by orchestration/_human.py)
HUMAN_BODY_BYTES = 65536
_HOST = re.compile(r"(?:\[([0-9A-Fa-f:.]{2,45})\]|([^\[\]:/\s]{1,253}))(?::\d{1,5})?")  # [v6] or a name, a port
_SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
                     "Cache-Control": "no-store"}


ENDED = ("finished", "interrupted")  # a run's statuses after which its transcript grows no more


def _sse(event: str, data: dict[str, Any], event_id: str | None = None) -> bytes:
    lines = (
        [f"event: {event}"]
        + ([f"id: {event_id}"] if event_id else [])
        + [f"data: {json.dumps(data, ensure_ascii=True)}", "", ""]
    )
    return "\n".join(lines).encode("ascii")


def _run_paths(run_dir: Path) -> list[Path]:
    """The files and folders a run's index is rendered from (a folder's stamp changes when an entry
    is added, removed or replaced in it)."""
    names = (MANIFEST_FILE, RUN_FILE, RESULTS_FILE, TRANSCRIPT_FILE, PROBLEMS_DIR, IMAGES_DIR)
    return [run_dir, *(run_dir / name for name in names)]


def _unfinished_paths(run_dir: Path, rows: Sequence[Any]) -> list[Path]:
    """The run.json of each problem folder no result row names: what the index's unfinished rows
    are read from."""
    finished = [row for row in rows if isinstance(row, ResultRow)]
    return [folder / RUN_FILE for folder in unnamed_folders(run_dir, finished)]


@dataclass(frozen=True)
class _Rows:
    """An eval's rows in index order, and each problem page's place among them (read once per
    change, not per request)."""

    rows: list[Row]
    places: dict[str, int]  # page key -> index in rows


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class ViewServer:
    """The viewer's web server over `run_dir`; `start()` runs it on a background thread (beside
    a solve or an eval), `serve_forever()` in the foreground (`maps view --serve`)."""

    def __init__(self, run_dir: Path, *, host: str = "127.0.0.1", port: int = 0, human: HumanDesk | None = None):
        self.run_dir = Path(run_dir)
        self.human = human  # the solve's pauses, answered from the page
        self.token = secrets.token_urlsafe(18)
        self.closing = threading.Event()
        try:
            self._httpd = _HTTPServer((host, port), self._handler_class())
        except OSError as error:
            raise UsageError(
                f"cannot serve on {host}:{port}: {error.strerror or error}",
                fix="choose another --port (0 picks a free one)",
            ) from None
        self._thread: threading.Thread | None = None
        # The names a browser may reach this server by, besides IP addresses and localhost.
        self._own_names = {name.rstrip(".").lower() for name in (host, socket.gethostname()) if name}
        self.pages = PageCache()
        self._streams = 0  # live feeds open
        self._streams_done = threading.Condition()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes | bytearray) else host
        return f"http://{name}:{port}/{self.token}/"

    def start(self) -> ViewServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="maps-view", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def close(self) -> None:
        self.closing.set()  # ends the live feeds, each after a last look at its file
        with self._streams_done:
            self._streams_done.wait_for(lambda: self._streams == 0, timeout=CLOSE_WAIT_S)
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ----- what the server answers ------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "maps-view"
            sys_version = ""

            def log_message(self, *args: Any) -> None:
                return None  # request lines hold the token

            def do_GET(self) -> None:
                server._answer(self)

            def do_HEAD(self) -> None:
                self._send(405, "text/plain", b"method not allowed\n")

            def do_POST(self) -> None:
                try:
                    server._answer_post(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in {**_SECURITY_HEADERS, **(headers or {})}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def _answer(self, request: Any) -> None:
        target = urlsplit(request.path)
        segments = target.path.split("/")
        if target.path == "/favicon.ico":  # browsers ask for it unprompted; there is none (and nothing to guard)
            request._send(204, "image/x-icon", b"")
            return
        if not self._host_allowed(request.headers.get("Host")):
            request._send(403, "text/plain; charset=utf-8",
                          b"forbidden: the Host header names another site; open the URL maps view printed\n")
            return
        if len(segments) < 2 or not hmac.compare_digest(segments[1].encode(), self.token.encode()):
            request._send(403, "text/plain; charset=utf-8", b"forbidden: the URL's token is missing or wrong\n")
            return
        decoded = [unquote(segment) for segment in segments[2:]]
        # Nothing may climb out or start over from the root, encoded or not.
        if any(part in (".", "..") or "/" in part or "\\" in part or "\0" in part for part in decoded) or (
            len(decoded) > 1 and "" in decoded[:-1]
        ):
            request._send(403, "text/plain; charset=utf-8", b"forbidden: path outside the run folder\n")
            return
        route = "/".join(decoded)
        query = {key: values[-1] for key, values in parse_qs(target.query).items()}
        try:
            if route in ("", INDEX_PAGE):
                self._send_page(request, self._index())
            elif route.startswith(f"{PROBLEMS_PAGES}/") and route.endswith(".html") and len(decoded) == 2:
                self._send_page(request, self._problem(route[len(PROBLEMS_PAGES) + 1 : -len(".html")]))
            elif route.startswith(f"{FILES_PREFIX}/"):
                self._send_file(request, route[len(FILES_PREFIX) + 1 :])
            elif route == "events/transcript":
                self._stream(request, self._transcript_feed(query, request.headers.get("Last-Event-ID")))
            elif route == "events/results":
                self._stream(request, self._results_feed(query, request.headers.get("Last-Event-ID")))
            else:
                request._send(404, "text/plain; charset=utf-8", b"not found\n")
        except _NotFound as missing:
            request._send(404, "text/plain; charset=utf-8", redact(f"not found: {missing}\n").encode())
        except OSError as error:  # a name too long, a folder where a file was: nothing to serve there
            if isinstance(error, (BrokenPipeError, ConnectionResetError)):
                return
            request._send(404, "text/plain; charset=utf-8", b"not found\n")
        except DataError as error:  # the run has not started yet, or a file is damaged
            request._send(503, "text/plain; charset=utf-8", redact(f"{error}\nreload in a moment\n").encode())

    def _host_allowed(self, host: str | None) -> bool:
        """Whether a request's Host header names this server: an IP address, `localhost`, the
        address it listens on or this machine's name. A page on another name (DNS rebinding:
        a site whose name is made to point at 127.0.0.1) is refused, whatever its token."""
        if not host:
            return True  # no browser sends a request without one
        match = _HOST.fullmatch(host)
        if match is None:
            return False
        name = (match.group(1) or match.group(2)).rstrip(".").lower()
        try:
            ipaddress.ip_address(name)
            return True  # an address cannot be re-pointed the way a name can
        except ValueError:
            return name == "localhost" or name.endswith(".localhost") or name in self._own_names

    def _origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """Whether a POST's Origin header is this server's own page (defence in depth beside the
        URL's token and the Host check): a browser sends the page's origin with every POST, so
        one from another site's page, a sandboxed page or a file ("null") is refused. A request
        without one (no browser: a script holding the token) is judged by the token alone."""
        if origin is None:
            return True
        parts = urlsplit(origin.strip())
        try:
            port = parts.port or 80
        except ValueError:
            return False
        if parts.scheme != "http" or not parts.netloc or parts.path not in ("", "/") or parts.query:
            return False
        same_host = host is None or parts.netloc.lower() == host.strip().lower()
        return same_host and port == self._httpd.server_address[1] and self._host_allowed(parts.netloc)

    def _answer_post(self, request: Any) -> None:
        """POST TOKEN/human: the person's answer to the pause the chat waits at, from the page."""
        segments = urlsplit(request.path).path.split("/")
        if not self._host_allowed(request.headers.get("Host")):
            _json_reply(request, 403, {"error": "the Host header names another site; open the URL maps printed"})
            return
        if not self._origin_allowed(request.headers.get("Origin"), request.headers.get("Host")):
            _json_reply(request, 403, {"error": "the answer comes from another site's page (its Origin); answer on the "
                                                "page maps printed"})
            return
        if len(segments) < 2 or not hmac.compare_digest(segments[1].encode(), self.token.encode()):
            request._send(403, "text/plain; charset=utf-8", b"forbidden: the URL's token is missing or wrong\n")
            return
        if segments[2:] != ["human"] or self.human is None:
            _json_reply(request, 404, {"error": "no chat here waits on a person"})
            return
        if request.headers.get_content_type() != "application/json":
            _json_reply(request, 415, {"error": "send the answer as application/json"})
            return
        try:
            length = int(request.headers.get("Content-Length", ""))
        except ValueError:
            _json_reply(request, 411, {"error": "a Content-Length is required"})
            return
        if not 0 <= length <= HUMAN_BODY_BYTES:
            _json_reply(request, 413, {"error": f"the answer is limited to {HUMAN_BODY_BYTES} bytes"})
            return
        try:
            body = json.loads(request.rfile.read(length).decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8 JSON, or nested past Python's limit
            body = None
        pause, answer = (body.get("pause"), body.get("answer")) if isinstance(body, dict) else (None, None)
        if type(pause) is not int or not isinstance(answer, str):
            _json_reply(request, 400, {"error": 'send {"pause": <number>, "answer": "<one line>"}'})
            return
        status, said = self.human.answer(pause, answer, "page")
        _json_reply(request, status, {"ok": True, "decision": said} if status == 200 else {"error": said})

    def _send_page(self, request: Any, text: str) -> None:
        request._send(200, "text/html; charset=utf-8", text.encode("utf-8", "replace"),
                      {"Content-Security-Policy": content_security_policy(PageMode.SERVED)})

    def _index(self) -> str:
        def render() -> tuple[str, list[Path]]:
            text, rows = index_page(self.run_dir, Links(PageMode.SERVED, self.run_dir))
            return text, _unfinished_paths(self.run_dir, rows) if rows is not None else []

        text: str = self.pages.get("index", _run_paths(self.run_dir), render)
        return text

    def _rows(self) -> _Rows:
        """An eval's rows: its results, then the problems that started and have no result yet."""

        def read() -> tuple[_Rows, list[Path]]:
            finished, _ = load_results(self.run_dir)
            rows: list[Row] = [*finished, *unfinished_rows(self.run_dir, finished)]
            places: dict[str, int] = {}
            for number, row in enumerate(rows):
                places.setdefault(page_key(row.pid), number)
            return _Rows(rows, places), _unfinished_paths(self.run_dir, rows)

        cached: _Rows = self.pages.get("rows", _run_paths(self.run_dir), read)
        return cached

    def _rows_around(self, key: str) -> tuple[Row, Any, Any]:
        """The result row whose page is `key`, and the previous and next problems' pids."""
        if kind_of(self.run_dir) != "eval" or not _KEY.fullmatch(key):
            raise _NotFound("no such problem")
        cached = self._rows()
        number = cached.places.get(key)
        if number is None:
            raise _NotFound("no such problem (yet)")
        return cached.rows[number], *neighbours(cached.rows, number)

    def _problem(self, key: str) -> str:
        row, previous, following = self._rows_around(key)
        folder = problem_folder(self.run_dir, row.run_dir)  # the one it names, whether or not it is the row's own
        own = [folder, *(folder / name for name in (RUN_FILE, TRANSCRIPT_FILE, IMAGES_DIR))] if folder else []

        def render() -> tuple[str, list[Path]]:
            links = Links(PageMode.SERVED, self.run_dir, root="../")
            # Served pages are rendered on demand, so they can afford each turn's request.
            title, body = render_problem_page(
                self.run_dir, row, links, previous=previous, following=following, include_requests=True
            )
            return page(title, body, kind="problem", mode=PageMode.SERVED), []

        # The row and its neighbours (from the cached rows) and the problem folder's files decide the page.
        text: str = self.pages.get(f"problem {key}", [self.run_dir / PROBLEMS_DIR, *own], render,
                                   token=(row, previous, following))
        return text

    def _send_file(self, request: Any, relative: str) -> None:
        path = inside(self.run_dir, relative)
        mime = IMAGE_MIME.get(path.suffix.lower()) if path is not None else None
        if path is None:
            request._send(403, "text/plain; charset=utf-8", b"forbidden: path outside the run folder\n")
        elif mime is None or not path.is_file():
            request._send(404, "text/plain; charset=utf-8", b"not found: only the run's images are served\n")
        else:
            request._send(200, mime, path.read_bytes())

    # ----- live feeds -------------------------------------------------------------------
    def _stream(self, request: Any, events: Iterator[bytes]) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        for key, value in _SECURITY_HEADERS.items():
            request.send_header(key, value)
        request.end_headers()
        with self._streams_done:
            self._streams += 1
        try:
            request.wfile.write(b"retry: 1000\n\n")
            request.wfile.flush()
            for chunk in events:
                request.wfile.write(chunk)
                request.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page was closed
        except (DataError, OSError) as error:  # a file went bad while the page was open: one line, the feed ends
            logger.warning("maps view: %s", redact(str(error)))
        finally:
            with self._streams_done:
                self._streams -= 1
                self._streams_done.notify_all()

    def _ticks(self) -> Iterator[bool]:
        """Yields every POLL_S seconds, and once more when the server closes (so the last turns of
        a run that just ended still go out); True when a keep-alive is due."""
        waited = 0.0
        while not self.closing.wait(POLL_S):
            waited += POLL_S
            due = waited >= KEEPALIVE_S
            waited = 0.0 if due else waited
            yield due
        yield False

    def _transcript_feed(self, query: dict[str, str], last_event: str | None) -> Iterator[bytes]:
        """The feed of a solve run's transcript or of an eval problem's (`problem=<key>`), from
        the offset the page (or the browser's reconnection) says it has; checked before the
        response starts, so a bad request still gets its status."""
        key = query.get("problem")
        if key is None:
            if kind_of(self.run_dir) != "solve":
                raise _NotFound("an eval's transcripts are per problem")
            run_dir = self.run_dir
        else:
            row, _, _ = self._rows_around(key)
            folder = row_folder(self.run_dir, row)
            if folder is None:
                raise _NotFound("this problem has no transcript")
            run_dir = folder
        return self._transcript_events(run_dir, _parse_offset(last_event or query.get("offset", "0")),
                                       human=self.human if key is None else None)

    def _transcript_events(self, run_dir: Path, offset: int, human: HumanDesk | None = None) -> Iterator[bytes]:
        """New turns and events as they are written; the outcome whenever run.json changes; with
        `human`, the pause the chat waits at whenever it opens or is answered."""
        path = run_dir / TRANSCRIPT_FILE
        run_stamp = _stamp(run_dir / RUN_FILE)
        first = read_run_or_none(run_dir)
        state = TranscriptState(team_of(first), flow=first.flow if first is not None else None)
        for record in read_transcript_from(path, 0, stop=offset)[0]:  # what the page already shows
            state.absorb(record)
        status = first.status if first is not None else None
        pause_seen = -1
        latest, turn_stamp = first, _stamp(run_dir / TURN_FILE)
        thinking = render_thinking(run_dir, first, state)  # as the page shows it
        for keepalive in self._ticks():
            if human is not None and human.version != pause_seen:
                pause_seen, pause = human.snapshot()
                yield _sse("human", pause)
            if (_stamp(path) or (0, 0, 0))[1] < offset:  # rewritten from scratch (a resumed eval re-ran it)
                yield _sse("reload", {})
                return
            changed = False
            records, end = read_transcript_from(path, offset)
            if records:
                now = read_run_or_none(run_dir)
                latest, changed = now or latest, True
                markup = render_records(records, now, True, state)
                offset = end
                yield _sse("append", {"html": markup}, str(offset))
                if now is not None and not now.usage_by_role:  # run.json counts them only at the end
                    yield _sse("replace", {"html": render_outcome_and_usage(now, state)})
            stamp = _stamp(run_dir / RUN_FILE)
            if stamp != run_stamp:
                run_stamp = stamp
                run = read_run_or_none(run_dir)
                status = run.status if run is not None else None
                latest, changed = run or latest, True
                if run is not None:
                    yield _sse("replace", {"html": render_outcome_and_usage(run, state)})
            if (now_turn := _stamp(run_dir / TURN_FILE)) != turn_stamp or changed:
                turn_stamp = now_turn
                markup = render_thinking(run_dir, latest, state)  # who is thinking, from turn.json
                if markup != thinking:
                    thinking = markup
                    yield _sse("replace", {"html": markup})
            if status in ENDED and read_transcript_from(path, offset)[1] == offset:
                # Everything is out: the page says the run ended rather than "disconnected".
                yield _sse("finished", {"status": status}, str(offset))
                return
            if keepalive:
                yield b": keep-alive\n\n"

    def _results_feed(self, query: dict[str, str], last_event: str | None) -> Iterator[bytes]:
        """The feed of an eval's index, checked before the response starts."""
        if kind_of(self.run_dir) != "eval":
            raise _NotFound("not an eval run")
        return self._results_events(_parse_offset(last_event or query.get("offset", "0")))

    def _waiting(self, rows: Sequence[Any], announced: set[str]) -> bool:
        """Whether a problem folder no result names is not on the page yet (its run.json not
        written yet, or damaged)."""
        finished = [row for row in rows if isinstance(row, ResultRow)]
        return any(page_key(folder.name) not in announced for folder in unnamed_folders(self.run_dir, finished))

    def _results_events(self, offset: int) -> Iterator[bytes]:
        """Rows of problems that finished since the page's offset (and of problems that started,
        until their result replaces them), and the recomputed summary; a reload when
        results.jsonl was rewritten (the eval compacts it when it ends)."""
        path = self.run_dir / RESULTS_FILE
        links = Links(PageMode.SERVED, self.run_dir)
        first = _stamp(path)
        rows, _ = load_results(self.run_dir)
        latest = latest_by_pid(rows)  # kept up to date from the new rows, not read again whole
        announced = {page_key(row.pid) for row in unfinished_rows(self.run_dir, rows)}  # on the page already
        problems = self.run_dir / PROBLEMS_DIR
        listed, waiting = _stamp(problems), self._waiting(rows, announced)
        for tick, keepalive in enumerate(self._ticks()):
            stamp = _stamp(path)
            if stamp is not None and ((first is not None and stamp[0] != first[0]) or stamp[1] < offset):
                yield _sse("reload", {})
                return
            first = first or stamp
            records, end = read_result_rows(path, offset)
            if records:
                offset = end
                markup = "".join(render_index_row(row, links.problem_page(row.pid)) for row in records)
                yield _sse("append", {"html": markup}, str(offset))
                latest.update(latest_by_pid(records))
                rows = list(latest.values())
                yield _sse("replace", {"html": render_eval_summary(read_manifest(self.run_dir), rows)})
            # problems/ is listed only when a problem may have started: its folder changed (a new
            # problem folder), a result came in, or a folder waits for its run.json (looked at
            # again every few polls); an eval that is not running costs one stat per poll.
            now = _stamp(problems)
            if now != listed or records or (waiting and tick % UNFINISHED_EVERY == 0):
                listed = now
                started = [row for row in unfinished_rows(self.run_dir, rows) if page_key(row.pid) not in announced]
                waiting = self._waiting(rows, announced | {page_key(row.pid) for row in started})
                if started:
                    announced.update(page_key(row.pid) for row in started)
                    yield _sse(
                        "append",
                        {"html": "".join(render_index_row(row, links.problem_page(row.pid)) for row in started)},
                        str(offset),
                    )
            if keepalive:
                yield b": keep-alive\n\n"


class _NotFound(Exception):
    pass


def _json_reply(request: Any, status: int, data: dict[str, Any]) -> None:
    request._send(status, "application/json", json.dumps(data, ensure_ascii=True).encode("ascii"))


_MAX_OFFSET = 2**62  # no file we serve is larger; a larger offset is a bad value


def _parse_offset(text: str) -> int:
    """A byte offset from a feed URL or a Last-Event-ID; a bad value (not a number, negative,
    past any file's size) starts from the beginning."""
    if len(text) > 20:
        return 0
    try:
        offset = int(text)
    except ValueError:
        return 0
    return offset if 0 <= offset < _MAX_OFFSET else 0


__all__ = ["PageCache", "ViewServer"]
