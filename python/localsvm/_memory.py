"""How much memory an estimator may plan for, and the up-front check.

An estimator whose default would hold a data-sized object (a Gram matrix, a
block of kernel columns, a matrix of similarity profiles) compares its size
with :func:`memory_budget` first: it takes a bounded path by itself, or
raises ``MemoryError`` naming the parameter that avoids the object, before
anything is allocated. The Rust core checks every input-sized allocation as
well, so what slips past this estimate is a ``MemoryError`` too, not an
abort; but on Linux a large allocation may succeed and fail only when its
pages are touched, which this estimate is there to prevent.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY_SHARE", "available_memory", "check_memory", "memory_budget"]

#: The share of the available memory a single object may take.
MEMORY_SHARE = 0.5

GIB = float(1 << 30)


def _meminfo_available() -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` (Linux), in bytes."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _sysconf_available() -> int | None:
    """Free physical pages times the page size (POSIX), in bytes."""
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def _cgroup_available() -> int | None:
    """What the process's cgroup (v2) still allows, in bytes."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as fh:
            current = int(fh.read().strip())
        return max(0, int(limit) - current)
    except (OSError, ValueError):
        return None


def _address_space_available() -> int | None:
    """What ``RLIMIT_AS`` still allows the process to map, in bytes."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def available_memory() -> int | None:
    """Bytes the process can still allocate, or None when unknown.

    The smallest of: ``MemAvailable`` (``/proc/meminfo``; where that file is
    missing, the free physical pages from ``os.sysconf``), the room left under
    the cgroup's ``memory.max``, and the room left under ``RLIMIT_AS``.

    Returns
    -------
    int or None
        The estimate in bytes; None when no source is available.
    """
    system = _meminfo_available()
    if system is None:
        system = _sysconf_available()
    found = [v for v in (system, _cgroup_available(), _address_space_available()) if v is not None]
    return min(found) if found else None


def memory_budget() -> float:
    """Bytes one data-sized object may take: :data:`MEMORY_SHARE` (half) of
    :func:`available_memory`, or infinity when that is unknown.

    Returns
    -------
    float
        The budget in bytes.
    """
    avail = available_memory()
    return float("inf") if avail is None else MEMORY_SHARE * avail


def check_memory(nbytes: float, what: str, hint: str) -> None:
    """Raise ``MemoryError`` when ``nbytes`` exceed :func:`memory_budget`.

    Parameters
    ----------
    nbytes : float
        The size of the object about to be built.
    what : str
        The object, for the message (e.g. "the 40000 × 40000 Gram matrix").
    hint : str
        The parameter that avoids it, for the message.

    Raises
    ------
    MemoryError
        Naming the object, its size, the memory available and ``hint``.
    """
    budget = memory_budget()
    if nbytes > budget:
        avail = available_memory() or 0
        raise MemoryError(
            f"{what} needs {nbytes / GIB:.2f} GiB, more than half of the "
            f"{avail / GIB:.2f} GiB of memory available; {hint}"
        )
