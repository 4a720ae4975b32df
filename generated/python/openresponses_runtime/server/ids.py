"""Fresh opaque ids (`resp_...`, `msg_...`, `cmp_...`) for everything the server and its gateways mint."""

from __future__ import annotations

import os

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A fresh opaque id such as `msg_3f2a...`: 16 bytes from the OS's secure random source."""
    try:
        return f"{prefix}_{_RANDOM_HEX.pop()}"
    except IndexError:
        block = os.urandom(4096).hex()  # a page at a time: each id costs a pop, not a system call
        _RANDOM_HEX.extend([block[i : i + 32] for i in range(0, len(block), 32)])
        return new_id(prefix)


# Popping is atomic, so no two ids share their bytes, whichever threads ask for them.
_RANDOM_HEX: list[str] = []
os.register_at_fork(after_in_child=_RANDOM_HEX.clear)  # a forked worker must not hand out its parent's bytes again
