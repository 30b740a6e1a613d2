"""Replicas of one model behind one endpoint (several vLLM or SGLang servers, say).

Each request goes to the replica with the fewest requests in flight. A replica that cannot be
reached is rested (for `REST_S`, doubling with each failure in a row up to `MAX_REST_S`) and
the request goes straight to another one; when its rest is over, a health probe
(`GET <base_url>/models`) must reach it before it takes requests again. The pool counts what
each replica served, for the manifest.

It is an httpx transport, so the chat client keeps one URL and knows nothing of replicas.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

REST_S = 5.0
MAX_REST_S = 120.0
PROBE_TIMEOUT_S = 3.0
# Errors that mean the replica never got the request, so another one may safely take it.
UNREACHABLE = (httpx.ConnectError, httpx.ConnectTimeout)


@dataclass(eq=False)  # compared by identity: two replicas may share a URL
class Replica:
    """One server of the pool and its state."""

    base_url: str
    in_flight: int = 0
    served: int = 0
    failures_in_a_row: int = 0
    rested_until: float = 0.0
    probing: bool = False


class ReplicaPool:
    """Chooses a replica per request and keeps each one's load, rest and count of served calls."""

    def __init__(self, base_urls: Sequence[str], *, clock: Callable[[], float] = time.monotonic,
                 rest_s: float = REST_S, max_rest_s: float = MAX_REST_S):
        if not base_urls:
            raise ValueError("a replica pool needs at least one base URL")
        self.replicas = [Replica(url.rstrip("/")) for url in base_urls]
        self._clock = clock
        self._rest_s = rest_s
        self._max_rest_s = max_rest_s
        self._lock = threading.Lock()

    def choose(self, exclude: Sequence[Replica] = ()) -> tuple[Replica, bool]:
        """The replica for the next request, counted as in flight, and whether it must pass a
        health probe first (its rest just ended). When every replica rests, the one whose rest
        ends first is tried anyway: the caller's retries then wait, not the pool."""
        with self._lock:
            now = self._clock()
            candidates = [r for r in self.replicas if r not in exclude] or list(self.replicas)
            awake = [r for r in candidates if r.rested_until <= now and not r.probing]
            if awake:
                replica = min(awake, key=lambda r: (r.in_flight, r.served))
            else:
                replica = min(candidates, key=lambda r: (r.rested_until, r.in_flight))
            probe = replica.failures_in_a_row > 0 and not replica.probing
            replica.probing = replica.probing or probe
            replica.in_flight += 1
            return replica, probe

    def finished(self, replica: Replica, outcome: str) -> None:
        """A request to `replica` is over: "served", "unreachable" (the replica rests) or
        "failed" (it was reached but the exchange broke off: neither served nor rested)."""
        with self._lock:
            replica.in_flight -= 1
            replica.probing = False
            if outcome == "unreachable":
                self._rest(replica)
                return
            replica.failures_in_a_row = 0
            replica.rested_until = 0.0
            if outcome == "served":
                replica.served += 1

    def _rest(self, replica: Replica) -> None:
        replica.failures_in_a_row += 1
        rest = min(self._max_rest_s, self._rest_s * 2 ** (replica.failures_in_a_row - 1))
        replica.rested_until = self._clock() + rest

    def served(self) -> dict[str, int]:
        """Requests served per replica base URL."""
        with self._lock:
            return {replica.base_url: replica.served for replica in self.replicas}


class _ReleasingStream(httpx.SyncByteStream):
    """A response body that tells the pool when the request is over (after streaming)."""

    def __init__(self, stream: Any, done: Callable[[bool], None]):
        self._stream = stream
        self._done = done
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except BaseException:
            self._finish(False)
            raise

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._finish(True)

    def _finish(self, served: bool) -> None:
        if not self._closed:
            self._closed = True
            self._done(served)


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
        while True:
            replica, probe = self.pool.choose(exclude=tried)
            try:
                if probe and not self._alive(replica):
                    raise httpx.ConnectError(f"the health probe of {replica.base_url} failed", request=request)
                response = self._inner.handle_request(self._readdress(request, replica))
            except UNREACHABLE:
                # Nothing was sent: rest this replica and give the request to another at once.
                self.pool.finished(replica, "unreachable")
                tried.append(replica)
                if len(tried) >= len(self.pool.replicas):
                    raise
                continue
            except BaseException:
                self.pool.finished(replica, "failed")
                raise
            done = lambda served, replica=replica: self.pool.finished(replica, "served" if served else "failed")  # noqa: E731
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
