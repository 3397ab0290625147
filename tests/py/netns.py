"""Run a piece of code in another network namespace (one shared helper for
the tests, the benchmarks and the lab): sockets created inside stay in that
namespace after switching back."""
import contextlib
import ctypes
import os

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def enter(name):
    """Switch the calling thread to /run/netns/NAME for good."""
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
    finally:
        os.close(fd)


@contextlib.contextmanager
def netns(name):
    """Switch the calling thread to /run/netns/NAME for the block (None: stay)."""
    if name is None:
        yield
        return
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        enter(name)
        try:
            yield
        finally:
            if _libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(own)
