"""The Hugging Face hub as a data source: is it reachable, is a data set cached, and importing
`datasets` without its duplicate log output.

Without a network, `datasets` spends half a minute in retries (each one logged twice) before it
gives up; one short probe, made once per process, lets `maps eval` fail at once with one line
instead, or read the hub cache in offline mode when the data set is there.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from types import ModuleType

from maps_autogen._util import DataError, missing_extra

PROBE_TIMEOUT_S = 1.5
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE = ("1", "true", "yes", "on")
# The libraries that attach their own stderr handler at import time (so every record they log
# is printed by that handler and again by the root handler the CLI configures).
_SELF_LOGGING_LIBRARIES = ("datasets", "huggingface_hub")


def offline_requested() -> bool:
    """Whether the user asked for offline mode (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE)."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in OFFLINE_VARIABLES)


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


@cache
def hub_reachable(endpoint: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """One HEAD request to the hub (through any proxy the environment names), answered within
    `timeout_s`. Any HTTP answer counts as reachable; the result is kept for the process."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout_s).close()
            answer.append(True)
        except urllib.error.HTTPError:
            answer.append(True)  # the server answered
        except (OSError, ValueError):
            answer.append(False)

    # A name lookup is not bounded by the socket timeout, so the probe runs in a thread.
    worker = threading.Thread(target=probe, name="hub-probe", daemon=True)
    worker.start()
    worker.join(timeout_s + 0.2)
    return bool(answer and answer[0])


def _squashed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _cache_roots() -> tuple[Path, Path]:
    home = Path(os.path.expanduser(os.environ.get("HF_HOME", "~/.cache/huggingface")))
    datasets_cache = Path(os.path.expanduser(os.environ.get("HF_DATASETS_CACHE", str(home / "datasets"))))
    hub_default = os.environ.get("HUGGINGFACE_HUB_CACHE", str(home / "hub"))
    hub_cache = Path(os.path.expanduser(os.environ.get("HF_HUB_CACHE", hub_default)))
    return datasets_cache, hub_cache


def cached_locally(hub_id: str) -> bool:
    """Whether a copy of `hub_id` may be in the local caches (the hub's download cache or the
    prepared `datasets` cache, whose folder names spell the id in their own way)."""
    datasets_cache, hub_cache = _cache_roots()
    if (hub_cache / f"datasets--{hub_id.replace('/', '--')}").is_dir():
        return True
    wanted = _squashed(hub_id.replace("/", "___"))
    try:
        return any(entry.is_dir() and _squashed(entry.name) == wanted for entry in datasets_cache.iterdir())
    except OSError:
        return False


def offline_error(hub_id: str, *, requested: bool) -> DataError:
    """The one line an eval ends with when the data cannot come from the hub."""
    if requested:
        return DataError(f"HF_HUB_OFFLINE is set and {hub_id} is not in the local Hugging Face cache",
                         fix="pass a downloaded copy with --data PATH (docs/benchmarks.md lists the layouts), "
                             "or unset HF_HUB_OFFLINE to download it")
    return DataError(f"the Hugging Face hub ({hub_endpoint()}) cannot be reached and {hub_id} is not in the "
                     "local cache",
                     fix="pass a downloaded copy with --data PATH (docs/benchmarks.md lists the layouts); "
                         "with a cached copy, HF_HUB_OFFLINE=1 skips this check")


def check_hub(hub_id: str) -> bool:
    """Decide, before anything slow, whether `hub_id` can be loaded: returns whether it must be
    read offline (from the cache); raises a DataError when it can be read neither way."""
    requested = offline_requested()
    if not requested and hub_reachable(hub_endpoint()):
        return False
    if not cached_locally(hub_id):
        raise offline_error(hub_id, requested=requested)
    return True


def import_datasets(*, offline: bool = False) -> ModuleType:
    """`datasets`, with the stderr handlers it and `huggingface_hub` attach at import removed
    (their records still reach the application's handlers once, through the root logger), and
    offline mode switched on when asked (both libraries read it only at import otherwise)."""
    try:
        import datasets
        import huggingface_hub.constants
    except ModuleNotFoundError as error:
        if error.name not in ("datasets", "huggingface_hub"):
            raise
        raise missing_extra("datasets", "eval", "reading benchmark data") from None

    for name in _SELF_LOGGING_LIBRARIES:
        library_logger = logging.getLogger(name)
        for handler in list(library_logger.handlers):
            if type(handler) is logging.StreamHandler:
                library_logger.removeHandler(handler)
    if offline:
        datasets.config.HF_HUB_OFFLINE = True
        huggingface_hub.constants.HF_HUB_OFFLINE = True
    module: ModuleType = datasets
    return module
