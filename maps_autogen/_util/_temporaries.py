"""Temporary files and folders beside a target, named so that no other writer can be mistaken
for a dead one, and the sweep that removes only those it can prove are stale and its own.

A temporary name is `.<target>.<host>-<pidns>-<pid>.<random>.tmp` (a folder's too):

- `host`: 16 hex digits of a hash of this machine's identity: its machine id (/etc/machine-id),
  the kernel's boot id and the full host name. A shared folder (a Slurm cluster's file system)
  is written by many machines; containers made from one image share a machine id and may share
  a host name, but not the kernel's boot id; host names that differ only after a dot or after
  a cut are told apart.
- `pidns`: the inode of the writer's pid namespace (each container on one kernel has its own),
  and `pid`: the writer's pid in it. A pid means something only in its own namespace.

The writer holds an exclusive `flock` on its temporary file (a folder: on a descriptor of it)
from right after creating it until it is renamed into place or removed; the kernel releases it
when the writer dies, however it dies (kill -9, the OOM killer).

The sweep (`remove_stale`) removes a temporary only when it names this host and its lock is
free (no live writer on this kernel holds it, in any pid namespace or container), and either
it was made in our pid namespace by a pid that is gone, or it is older than `GRACE_S` (the lock
is taken microseconds after the file is made). The temporaries of another host are never
removed: a shared file system may not show another machine's locks (NFS mounted `nolock` or
`local_lock=all`), so nothing proves that writer dead; its own host's next write of the target
removes them. Every field of a name is parsed bounded: a planted name (a 20-digit pid) is
somebody else's file, left alone, never a crash.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import socket
import stat
import time
from pathlib import Path

#: A temporary of another pid namespace (another container on this kernel) younger than this
#: is left alone even when its lock is free: its writer may be between making it and locking it.
GRACE_S = 60.0
#: The highest pid Linux gives (PID_MAX_LIMIT): a larger number in a name is no pid of ours.
PID_LIMIT = 4 * 1024 * 1024
_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_PID_NAMESPACE = "/proc/self/ns/pid"


def _first_line(*paths: str) -> str:
    """The first line of the first of `paths` that can be read (at most 256 bytes), else ""."""
    for path in paths:
        try:
            with open(path, "rb") as handle:
                return handle.read(256).decode("ascii", errors="replace").strip()
        except OSError:
            continue
    return ""


@functools.cache
def host_identity() -> str:
    """This machine, as a temporary name gives it: 16 hex digits of a hash of the machine id, the
    kernel's boot id and the full host name."""
    parts = (_first_line(*_MACHINE_ID_FILES), _first_line(_BOOT_ID_FILE), socket.gethostname())
    return hashlib.sha256("\0".join(parts).encode("utf-8", errors="surrogateescape")).hexdigest()[:16]


@functools.cache
def pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where the system has none to show)."""
    try:
        return os.stat(_PID_NAMESPACE).st_ino
    except OSError:
        return 0


def temporary_prefix(name: str) -> str:
    """The start of a temporary's name beside the target `name` (the random part and `.tmp`
    follow): this host, this pid namespace and this process."""
    return f".{name}.{host_identity()}-{pid_namespace()}-{os.getpid()}."


def _pattern(name: str) -> re.Pattern[str]:
    """The temporaries beside the target `name`, each field bounded (mkstemp's and mkdtemp's
    random part is 8 characters of [a-z0-9_])."""
    return re.compile(rf"\.{re.escape(name)}\.(?P<host>[0-9a-f]{{16}})-(?P<ns>[0-9]{{1,20}})-(?P<pid>[0-9]{{1,20}})"
                      rf"\.[a-z0-9_]{{8}}\.tmp")


def lock_held(fd: int) -> None:
    """Take the writer's lock on `fd` (its temporary, just made). A file system that keeps no
    locks (ENOLCK) leaves it unlocked: the sweep then cannot take the lock either, and keeps it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        pass


def _process_exists(pid: int) -> bool:
    """Whether a process with this pid runs in our pid namespace (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def _may_be_stale(match: re.Match[str], modified: float) -> bool:
    """What the name and age say, before the lock is tried: ours (this host), and either made in
    our pid namespace by a pid that is gone or older than GRACE_S."""
    if match.group("host") != host_identity():
        return False  # another host's: its locks may not be visible here
    pid = int(match.group("pid"))  # (at most 20 digits: a bounded int)
    if pid <= 0 or pid >= PID_LIMIT:
        return False  # no pid Linux gives: a name somebody else made
    if match.group("ns") == str(pid_namespace()):
        return pid != os.getpid() and not _process_exists(pid)
    return time.time() - modified > GRACE_S


def _remove_if_unlocked(path: Path, *, folder: bool) -> None:
    """Remove `path` if its writer's lock is free (taken here first, so a writer that is alive
    keeps it); a path that changed meanwhile, or that cannot be opened or locked, is left."""
    flags = os.O_NOFOLLOW | (os.O_RDONLY | os.O_DIRECTORY if folder else os.O_RDWR)  # (NFS locks need write access)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live writer, or a file system that keeps no locks
            return
        opened, now = os.fstat(fd), os.lstat(path)
        if (opened.st_dev, opened.st_ino) != (now.st_dev, now.st_ino):
            return  # renamed away and replaced meanwhile
        if folder:
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        return
    finally:
        os.close(fd)


def remove_stale(target: Path, *, folder: bool = False) -> None:
    """Remove the temporaries beside `target` (files, or with `folder` folders) that are provably
    stale and this host's (see the module doc); every other one is left."""
    pattern = _pattern(target.name)
    try:
        with os.scandir(target.parent) as entries:
            found = [(entry, match) for entry in entries if (match := pattern.fullmatch(entry.name))]
    except OSError:
        return
    for entry, match in found:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        kind = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
        if kind and _may_be_stale(match, info.st_mtime):
            _remove_if_unlocked(Path(entry.path), folder=folder)


__all__ = ["GRACE_S", "PID_LIMIT", "host_identity", "lock_held", "pid_namespace", "remove_stale", "temporary_prefix"]
