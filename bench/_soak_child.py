"""``python -m dltui ...`` with a heap watcher beside it, for ``bench/soak.py --lab``.

    python bench/_soak_child.py DUMP_FILE EVERY_S [--tracemalloc] [--collect] -- DLTUI_ARGS...

A daemon thread appends one JSON line to DUMP_FILE every EVERY_S seconds: gc's counts and
collections per generation, the number of objects gc tracks, the allocated blocks, and the
40 most numerous types — so a soak whose RSS grows can say which objects pile up between
periods without a second run. ``--tracemalloc`` also keeps a tracemalloc snapshot each time
and writes the 25 lines whose allocations grew most since the previous one (tracemalloc
slows every allocation: the CPU figures of such a run are not the dashboard's). ``--collect``
counts only what is alive: a full collection first (as the freezer's thaw does), so the
frozen garbage — cycles the dashboard's freezer reclaims only at its next thaw — is not
counted as growth (one extra full collection a period).

Counting the types holds the GIL for some 100 ms once a period: one frame late.
"""

from __future__ import annotations

import collections
import gc
import json
import runpy
import sys
import threading
import time
import tracemalloc


def watch(path: str, every_s: float, trace: bool, collect: bool = False) -> None:
    previous = None
    while True:
        time.sleep(every_s)
        # the dashboard freezes its heap (dltui.ui.heap): gc.get_objects() lists only what is
        # not frozen, so the frozen generation is thawed for the count and frozen again at once
        # (no collection in between: what was frozen stays so, with at most a tick's young
        # objects along with it, as the dashboard's own freeze does)
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        if collect:
            gc.collect()
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        gc.freeze()
        record: dict = {
            "t": time.time(),
            "gc_count": gc.get_count(),
            "gc_stats": gc.get_stats(),
            "gc_objects": sum(counts.values()),
            "frozen": frozen,
            "collected_first": collect,
            "blocks": sys.getallocatedblocks(),
            "types": counts.most_common(40),
        }
        if trace:
            snap = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)]
            )
            if previous is not None:
                record["grew"] = [
                    [str(s.traceback), s.size_diff, s.count_diff]
                    for s in snap.compare_to(previous, "lineno")[:25]
                ]
            previous = snap
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def main() -> None:
    split = sys.argv.index("--")
    mine, theirs = sys.argv[1:split], sys.argv[split + 1 :]
    trace = "--tracemalloc" in mine
    if trace:
        tracemalloc.start(1)
    collect = "--collect" in mine
    threading.Thread(
        target=watch, args=(mine[0], float(mine[1]), trace, collect), daemon=True
    ).start()
    sys.argv = ["dltui", *theirs]
    runpy.run_module("dltui", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
