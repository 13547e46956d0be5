"""Test-only models that misbehave on purpose, to prove a bad cell never takes the study down.
Enumerated only when config allows fault injection (tests); never in a real study."""
import os
import time


def trigger(name):
    if name == "fault_segfault":
        import ctypes
        ctypes.string_at(0)  # a real SIGSEGV, like a crashing old TF build
    elif name == "fault_abort":
        os.abort()
    elif name == "fault_hang":
        while True:
            time.sleep(1)
    elif name == "fault_oom":
        hog = []
        while True:
            chunk = bytearray(64 * 1024 * 1024)
            chunk[::4096] = b"x" * len(chunk[::4096])  # touch every page so it is resident
            hog.append(chunk)
    elif name == "fault_raise":
        raise RuntimeError("injected failure")
    elif name == "fault_xss":
        raise RuntimeError("<script>alert(1)</script> injected into an error message")
    raise ValueError("unknown fault model %r" % name)
