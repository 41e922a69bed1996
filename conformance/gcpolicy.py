"""How often the suite's own processes collect cyclic garbage.

A run keeps a large heap for its whole length (two loaded contracts, Hypothesis's strategy caches,
every exchange for the report) while it makes cyclic garbage fast (Hypothesis's ``ConjectureData``
and its spans, for every value drawn). With CPython's default thresholds, ``(700, 10, 10)``, a full
collection walks that whole heap every hundred young ones: measured with ``gc.callbacks`` on
``conformance run --mock --allow-spend``, the collector took 1.1-1.4 s of the run's ~7 s of CPU,
0.8 s of it in full collections. With :data:`THRESHOLDS` young collections cost the same and full
ones become rare: 0.5-0.7 s in all, the peak memory unchanged (180 MiB).

Only processes the suite owns call :func:`collect_less_often`: the command line and its workers
(and the kit's own test processes). The pytest plugin runs inside its caller's process and leaves
that process's collector as it is.
"""

from __future__ import annotations

import gc

THRESHOLDS = (2000, 100, 100)  # gen-0 allocations, gen-0 runs per gen-1, gen-1 runs per gen-2


def collect_less_often() -> None:
    """Set this process's collector to :data:`THRESHOLDS`."""
    gc.set_threshold(*THRESHOLDS)
