"""What the symbolic judge's helpers could not finish (a timeout, a crash, an error): kept for
the run's summary and logged, bounded."""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass

log = logging.getLogger("maps_autogen.benchmarks._symbolic")


@dataclass(frozen=True)
class Incident:
    """One item whose symbolic check did not finish normally (timeout or helper crash)."""

    function: str
    kind: str  # "timeout" | "crash" (helper died) | "error" (the function raised)
    seconds: float
    detail: str


_MAX_INCIDENTS = 10_000  # keep the newest ones: a long run must not grow without bound
_incidents: collections.deque[Incident] = collections.deque(maxlen=_MAX_INCIDENTS)
_incidents_lock = threading.Lock()


def incidents() -> list[Incident]:
    """Timeouts and helper crashes recorded so far in this process (oldest first)."""
    with _incidents_lock:
        return list(_incidents)


def clear_incidents() -> None:
    """Forget recorded incidents (e.g. between runs)."""
    with _incidents_lock:
        _incidents.clear()


def record(incident: Incident) -> None:
    """Keep `incident` (the newest _MAX_INCIDENTS) and log it."""
    with _incidents_lock:
        _incidents.append(incident)
    log.warning(
        "symbolic check %s after %.1fs in %s (counted as not equal): %s",
        incident.kind,
        incident.seconds,
        incident.function,
        incident.detail,
    )
