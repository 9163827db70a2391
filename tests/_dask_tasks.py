"""Task functions for the Dask engine tests.

They live in their own module so that the test cluster's worker processes
can import them (the fixture puts this folder on the workers' PYTHONPATH).
"""

from __future__ import annotations

import os
import time

#: Every shared object a task received, kept alive so that two objects
#: deserialised one after the other cannot share an address (and an id).
_RECEIVED: list[object] = []


def where_shared(task: int, shared: object) -> tuple[int, int]:
    """The worker's process id and the identity of the shared object it got."""
    _RECEIVED.append(shared)
    time.sleep(0.01)
    return os.getpid(), id(shared)


def fail_on(task: int, shared: int) -> int:
    """``task``, or ``ValueError`` for the task equal to ``shared``."""
    if task == shared:
        raise ValueError(f"task {task} refused")
    return task


def square_when_released(task: int, shared: str) -> int:
    """``task²`` once the ``distributed.Event`` named ``shared`` is set
    (``TimeoutError`` after two minutes without it)."""
    from distributed import Event

    if not Event(shared).wait(timeout=120):
        raise TimeoutError(f"the event {shared!r} was never set")
    return task * task


def slow_block(x, delay: float):
    """``x`` after ``delay`` seconds (a block that takes time to produce)."""
    time.sleep(delay)
    return x


def cast_block_one(x, block_info=None):
    """``x``, with its second block of rows cast to float32 (blocks that
    mix dtypes under one declared dtype)."""
    if block_info is not None and block_info[0]["chunk-location"][0] == 1:
        return x.astype("float32")
    return x
