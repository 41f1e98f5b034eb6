"""Timing helpers: best-of-repeats mean time per call, in microseconds."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time


def warm_up(fn, calls=3, min_time=0.02, max_time=1.0):
    """Calls ``fn`` until it has run ``calls`` times and for ``min_time`` seconds.

    First calls are not steady state (kernel resolution, caches, a tape structure compiled
    on its second sighting); one slow first call must not decide the batch size either, or
    a batch of one call would be timed while the code is still cold.
    """
    start = time.perf_counter()
    n = 0
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if (n >= calls and elapsed >= min_time) or elapsed >= max_time:
            return


def time_interleaved(fns, min_time=0.2, repeats=11, pause=0.05):
    """Best mean microseconds per call for each callable, measured in alternation.

    On a shared machine the speed changes from second to second; timing the candidates
    batch by batch in turn exposes them to the same conditions, so their ratios hold even
    when the absolute numbers drift. Each callable's batch size is sized to take about
    ``min_time / repeats`` seconds.
    """
    numbers = {}
    for name, fn in fns.items():
        warm_up(fn)
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - start >= min_time / repeats or number >= 1 << 20:
                break
            number *= 4
        numbers[name] = number
    best = {name: float("inf") for name in fns}
    order = list(fns.items())
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            # Rotate who goes first, and pause between candidates: worker threads that a
            # library leaves spinning after its last op (torch's OpenMP pool, OpenBLAS)
            # would otherwise take the second core from the candidate timed next (measured:
            # an MLP step timed right after torch's ran 1.45x its numpy floor, not 1.1x).
            k = r % len(order)
            for name, fn in order[k:] + order[:k]:
                if len(order) > 1:
                    time.sleep(pause)
                number = numbers[name]
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: t * 1e6 for name, t in best.items()}


def import_time(module, runs=5):
    """Best wall time, in seconds, of importing ``module`` in a fresh interpreter.

    Bytecode caching is allowed (and primed by a first, untimed run), as for any installed
    package; otherwise the measurement would be of the Python compiler.
    """
    code = ("import time; t = time.perf_counter(); import %s; "
            "print(time.perf_counter() - t)" % module)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    best = float("inf")
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=False)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=False)
        if out.returncode != 0:
            return None
        best = min(best, float(out.stdout.strip().splitlines()[-1]))
    return best
