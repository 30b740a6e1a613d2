"""The error types the CLI turns into one-line messages.

Every error a user can cause or meet carries a message that names the problem and the fix.
`UsageError`s (bad input, bad config) exit with code 2; `ServiceError`s (the model service
failed) exit with code 1. Messages must never contain secrets.
"""

from __future__ import annotations


class MapsError(Exception):
    """Base class: an expected failure with a user-facing one-line message."""

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None):
        self.problem = message
        self.fix = fix
        super().__init__(message if not fix else f"{message} ({fix})")


class UsageError(MapsError):
    """The user's input or configuration is wrong (exit code 2)."""

    exit_code = 2


class ConfigError(UsageError):
    """agents.yaml or a prompt file is missing, malformed or has unknown keys."""


class ProblemError(UsageError):
    """The problem (question, images, problem file) is unusable."""


class DataError(UsageError):
    """A data file (benchmark data, results to score) is unusable."""


class ServiceError(MapsError):
    """The model service failed in a way retries could not fix (exit code 1).

    `cause` is the service's own answer (status and message, or the transport failure), the
    same for every request that meets the same fault: an eval compares it across problems."""

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None, cause: str | None = None):
        super().__init__(message, fix=fix)
        self.cause = cause


class LocalModelError(ServiceError):
    """The embedded local model server could not be started or died."""


class FatalServiceError(ServiceError):
    """The service refused in a way that every other request would meet too (bad key, no such
    model, no image input): an eval stops at once instead of failing every problem."""


class DiskFullError(MapsError):
    """A file could not be written for want of space (exit code 1): the message names the
    folder and the space needed; what was written before is whole, and a resumed run recovers."""

    exit_code = 1


class RunInterrupted(MapsError):
    """The user pressed Ctrl-C; what finished is saved (exit code 130)."""

    exit_code = 130


class RunTerminated(RunInterrupted):
    """SIGTERM stopped the run as a first Ctrl-C does (a batch system's time limit, `scancel`,
    preemption); what finished is saved (exit code 143, 128 + SIGTERM)."""

    exit_code = 143


class OutputClosedError(RunInterrupted):
    """Standard output was closed by its reader (`maps solve ... | head`); what finished is saved
    and the run stops as on Ctrl-C, with the exit code a shell gives a process ended by SIGPIPE."""

    exit_code = 141


def missing_extra(package: str, extra: str, command: str) -> UsageError:
    """The error for an optional package that is not installed (the core `maps solve` needs neither)."""
    return UsageError(f"{command} needs the optional package {package!r}, which is not installed",
                      fix=f"pip install 'maps-autogen[{extra}]' (make setup installs everything)")
