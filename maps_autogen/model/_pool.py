"""Replicas of one model behind one endpoint (several vLLM or SGLang servers, say).

Each request goes to the replica with the fewest requests in flight. A replica that fails a
request in a way a retry might fix (it cannot be reached, it answers 5xx, 429, 408 or 409, it
times out or resets the connection) is rested: for `REST_S`, doubling with each failure in a row
up to `MAX_REST_S`, longer when its `Retry-After` says so. A refusal or an unreachable replica
hands the request straight to another replica that is not resting; a timeout or a reset (the
request may have been processed) is left to the client's retry, which the pool sends elsewhere.
When its rest is over a replica is on trial: it takes one request at a time until one is served
(an unreachable one must first pass a health probe, `GET <base_url>/models`). When every replica
rests, a request waits for the one whose rest ends first (an interrupted run stops the wait). A
request's own fault (400, 401, 404...) rests nothing. The pool counts what each replica served,
for the manifest.

It is an httpx transport, so the chat client keeps one URL and knows nothing of replicas.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from maps_autogen._util import RunInterrupted
from maps_autogen.model._service_answers import retry_after_seconds, retryable_status

logger = logging.getLogger(__name__)

REST_S = 5.0
MAX_REST_S = 120.0
PROBE_TIMEOUT_S = 3.0
# Errors that mean the replica never got the request, so another one may safely take it.
UNREACHABLE = (httpx.ConnectError, httpx.ConnectTimeout)

# How a request to a replica ended: "served" (it answered, even to say the request is wrong),
# "refused" (it answered "not now": 5xx, 429...), "unreachable" (nothing was sent), "failed"
# (reached, but the exchange timed out or broke off) or "abandoned" (our side stopped: an
# interrupted run, our own connection limit). The three failures rest the replica.
Outcome = Literal["served", "refused", "unreachable", "failed", "abandoned"]


@dataclass(eq=False)  # compared by identity: two replicas may share a URL
class Replica:
    """One server of the pool and its state."""

    base_url: str
    in_flight: int = 0
    served: int = 0
    failures_in_a_row: int = 0
    rested_until: float = 0.0
    probing: bool = False  # on trial after a rest: it takes one request at a time
    unreachable: bool = False  # its last failure was a connection that never opened: probe it first


def pick(replicas: Sequence[Replica], now: float, avoid: Collection[Replica] = ()) -> tuple[Replica, float]:
    """The replica for the next request and when it may take it (`now`, or later when every
    replica rests: then the one whose rest ends first). A replica neither resting nor on trial
    is ready; among the ready ones the one with the fewest requests in flight (then the fewest
    served) wins. `avoid` (replicas this request already failed on) is skipped unless it is all."""
    candidates = [r for r in replicas if r not in avoid] or list(replicas)
    ready = [r for r in candidates if r.rested_until <= now and not r.probing]
    if ready:
        return min(ready, key=lambda r: (r.in_flight, r.served)), now
    # None ready: a replica on trial may take one more now (its rest is over); else wait.
    replica = min(candidates, key=lambda r: (max(r.rested_until, now), r.in_flight))
    return replica, max(replica.rested_until, now)


def rest_seconds(failures_in_a_row: int, retry_after: float | None, rest_s: float, max_rest_s: float) -> float:
    """How long a replica rests after its `failures_in_a_row`-th failure in a row: `rest_s`
    doubling with each, or the replica's own Retry-After when longer, at most `max_rest_s`."""
    backoff = rest_s * 2.0 ** (max(1, failures_in_a_row) - 1)
    return min(max_rest_s, max(backoff, retry_after or 0.0))


class ReplicaPool:
    """Chooses a replica per request and keeps each one's load, rest and count of served calls."""

    def __init__(self, base_urls: Sequence[str], *, clock: Callable[[], float] = time.monotonic,
                 rest_s: float | None = None, max_rest_s: float | None = None,
                 cancel: threading.Event | None = None):
        if not base_urls:
            raise ValueError("a replica pool needs at least one base URL")
        self.replicas = [Replica(url.rstrip("/")) for url in base_urls]
        self._clock = clock
        self._rest_s = REST_S if rest_s is None else rest_s
        self._max_rest_s = MAX_REST_S if max_rest_s is None else max_rest_s
        # Set when the run is interrupted: a request waiting for a rested replica stops waiting.
        self._cancel = cancel or threading.Event()
        self._lock = threading.Lock()

    def choose(self, exclude: Sequence[Replica] = ()) -> tuple[Replica, bool]:
        """The replica for the next request, counted as in flight, and whether it must pass a
        health probe first. When every replica rests, waits for the one whose rest ends first;
        raises RunInterrupted when the run is interrupted meanwhile."""
        while True:
            with self._lock:
                now = self._clock()
                replica, at = pick(self.replicas, now, exclude)
                if at <= now:
                    return replica, self._take(replica)
            # The wait is on the cancel event, so Ctrl-C ends it at once.
            if self._cancel.wait(at - now):
                raise RunInterrupted("the run was interrupted")

    def choose_ready(self, exclude: Collection[Replica]) -> tuple[Replica, bool] | None:
        """Like `choose`, but only a replica not in `exclude` that can take a request now; None
        when there is none (the caller then gives up on this try instead of waiting)."""
        with self._lock:
            now = self._clock()
            replica, at = pick(self.replicas, now, exclude)
            if replica in exclude or at > now or replica.probing:
                return None
            return replica, self._take(replica)

    def _take(self, replica: Replica) -> bool:
        probe = replica.failures_in_a_row > 0 and not replica.probing and replica.unreachable
        replica.probing = replica.probing or replica.failures_in_a_row > 0
        replica.in_flight += 1
        return probe

    def finished(self, replica: Replica, outcome: Outcome, retry_after: float | None = None) -> None:
        """A request to `replica` is over (see `Outcome`); a failure rests it, for at least
        `retry_after` seconds when the replica asked for that; "served" ends its rest."""
        with self._lock:
            replica.in_flight -= 1
            replica.probing = False
            if outcome == "abandoned":
                return
            if outcome == "served":
                replica.served += 1
                replica.failures_in_a_row = 0
                replica.rested_until = 0.0
                replica.unreachable = False
                return
            replica.failures_in_a_row += 1
            replica.unreachable = outcome == "unreachable"
            rest = rest_seconds(replica.failures_in_a_row, retry_after, self._rest_s, self._max_rest_s)
            replica.rested_until = self._clock() + rest
        logger.info("replica %s: a request %s; rested for %.1fs", replica.base_url, outcome, rest)

    def served(self) -> dict[str, int]:
        """Requests served per replica base URL."""
        with self._lock:
            return {replica.base_url: replica.served for replica in self.replicas}


class _ReleasingStream(httpx.SyncByteStream):
    """A response body that tells the pool when the request is over (after streaming): served
    when it is closed, failed when reading it broke off (a timeout, a reset)."""

    def __init__(self, stream: Any, done: Callable[[Outcome], None]):
        self._stream = stream
        self._done = done
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except httpx.TransportError:
            self._finish("failed")
            raise
        except GeneratorExit:  # the reader stopped early (at a stream's `[DONE]`): close() tells
            raise
        except BaseException:
            self._finish("abandoned")
            raise

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._finish("served")

    def _finish(self, outcome: Outcome) -> None:
        if not self._closed:
            self._closed = True
            self._done(outcome)


class PoolTransport(httpx.BaseTransport):
    """Sends each request to a replica of the pool: requests are made against the first
    replica's base URL and re-addressed here."""

    def __init__(self, pool: ReplicaPool, inner: httpx.BaseTransport):
        self.pool = pool
        self._inner = inner
        self._primary = pool.replicas[0].base_url

    def _readdress(self, request: httpx.Request, replica: Replica) -> httpx.Request:
        url = str(request.url)
        if replica.base_url == self._primary or not url.startswith(self._primary):
            return request
        target = httpx.URL(replica.base_url + url[len(self._primary):])
        headers = httpx.Headers(request.headers)
        headers["Host"] = target.netloc.decode("ascii")
        return httpx.Request(
            request.method, target, headers=headers, stream=request.stream, extensions=request.extensions
        )

    def _alive(self, replica: Replica) -> bool:
        """Health probe: any HTTP answer from GET <base_url>/models means the server is up."""
        timeout = {
            "connect": PROBE_TIMEOUT_S,
            "read": PROBE_TIMEOUT_S,
            "write": PROBE_TIMEOUT_S,
            "pool": PROBE_TIMEOUT_S,
        }
        probe = httpx.Request("GET", f"{replica.base_url}/models", extensions={"timeout": timeout})
        try:
            response = self._inner.handle_request(probe)
            response.read()
            response.close()
            return True
        except httpx.TransportError:
            return False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        tried: list[Replica] = []
        replica, probe = self.pool.choose()
        while True:
            tried.append(replica)
            try:
                if probe and not self._alive(replica):
                    raise httpx.ConnectError(f"the health probe of {replica.base_url} failed", request=request)
                response = self._inner.handle_request(self._readdress(request, replica))
            except UNREACHABLE:
                # Nothing was sent: rest this replica and give the request to another at once.
                self.pool.finished(replica, "unreachable")
                chosen = self.pool.choose_ready(exclude=tried)
                if chosen is None:
                    raise
                replica, probe = chosen
                continue
            except httpx.PoolTimeout:  # our own connection limit, not the replica
                self.pool.finished(replica, "abandoned")
                raise
            except httpx.TransportError:
                # It may have taken the request: rest it and let the client's retry go elsewhere.
                self.pool.finished(replica, "failed")
                raise
            except BaseException:
                self.pool.finished(replica, "abandoned")
                raise
            if retryable_status(response.status_code):
                # "Not now": rest it and, while another replica is ready, send the request there.
                self.pool.finished(replica, "refused", retry_after_seconds(response))
                chosen = self.pool.choose_ready(exclude=tried)
                if chosen is None:
                    return response  # every replica refused or rests: the client's retry waits
                response.close()
                replica, probe = chosen
                continue
            done = lambda outcome, replica=replica: self.pool.finished(replica, outcome)  # noqa: E731
            return httpx.Response(response.status_code, headers=response.headers,
                                  stream=_ReleasingStream(response.stream, done), extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


def pooled_http_client(pool: ReplicaPool, timeout_s: float, max_connections: int) -> httpx.Client:
    """An HTTP client whose requests the pool spreads over its replicas (up to
    `max_connections` to each)."""
    limits = httpx.Limits(
        max_connections=max_connections * len(pool.replicas),
        max_keepalive_connections=max_connections * len(pool.replicas),
    )
    return httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                        transport=PoolTransport(pool, httpx.HTTPTransport(limits=limits)))


class RequestPacer:
    """At most `per_s` requests a second (AG2's api_rate_limit): each request waits for its turn,
    the turns `1 / per_s` seconds apart. One per endpoint and rate, shared by the process."""

    def __init__(self, per_s: float):
        self.interval = 1.0 / per_s
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self, cancel: threading.Event) -> None:
        """Wait for this request's turn; RunInterrupted when the run is interrupted meanwhile."""
        with self._lock:
            now = time.monotonic()
            turn = max(now, self._next)
            self._next = turn + self.interval
        if turn > now and cancel.wait(turn - now):
            raise RunInterrupted("the run was interrupted")


_pacers: dict[tuple[str, str, float], RequestPacer] = {}


_pacers_lock = threading.Lock()


def request_pacer(endpoint: str, url: str, per_s: float) -> RequestPacer:
    """The process's one pacer of an endpoint's requests."""
    with _pacers_lock:
        return _pacers.setdefault((endpoint, url, per_s), RequestPacer(per_s))
