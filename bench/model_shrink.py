"""How short the model check's shrunk failing sequences are, per defect of the test overlay.

    python bench/model_shrink.py [--seeds 6] [--first-seed 1] [--caps none,400] [--defects a,b]
                                 [--ref /work/wt/main-ref] [--ref-results FILE] [--save FILE]

For each defect of ``DEFECT_RULES`` (tests/conformance/checks/test_model.py), each of N seeds
from ``--first-seed`` and each request cap (``none``: no ``--max-requests``), the model check
(``--only model-workspace``) is run against a fresh bundled mock with that one defect
(``tests.conformance.support.live_mock``), through ``conformance.api.run``, with the model's
own budget (its shrink replays and seconds, examples and steps untouched). Printed per defect
and cap: how many seeds caught the defect (a failure of the rule it breaks), the median length
of the reported failing sequence of that rule (its curl steps, ``failure.extra["steps"]``,
control-plane calls included), how many of those were shrunk to the end (not stopped early),
and the median requests of the run.

``--ref PATH`` runs the same measurement with another checkout's code (a subprocess with
``PYTHONPATH=PATH``, one process at a time: this tree's runs follow its runs), and prints the
two side by side with the ratio this tree / the other of the median lengths, then per cap the
runs both trees caught, seed by seed: the mean length, how many are over 8 steps, and on how
many this tree is shorter or longer. A defect's median over 6 seeds moves with the seeds drawn
(one tree catching a defect on a seed the other misses, and shrinking it less, raises its
median): compare over 12 or more seeds, and read the seed-by-seed lines. ``--save FILE``
keeps this tree's figures as JSON; ``--ref-results FILE`` reads the other tree's from such a
file instead of running it. The runs of one tree are deterministic per seed, but shrinking also
stops after its seconds (30), so a loaded machine can shorten what a run shrinks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ONLY = ["model-workspace"]


def measure(
    defects: list[str], seeds: int, caps: list[int | None], first: int = 1
) -> dict[str, Any]:
    """Every (defect, cap, seed) run of the tree on ``sys.path`` (its ``conformance``)."""
    import conformance
    from conformance.api import RunConfig, run
    from tests.conformance.checks.test_model import DEFECT_RULES
    from tests.conformance.support import live_mock

    rows: list[dict[str, Any]] = []
    for defect in defects:
        rule = DEFECT_RULES[defect]
        for cap in caps:
            for seed in range(first, first + seeds):
                began = time.monotonic()
                with live_mock(defects=[defect]) as mock:
                    report = run(
                        RunConfig(mock_url=mock.base_url, only=ONLY, seed=seed, max_requests=cap)
                    )
                result = next(c for c in report.checks if c.name == ONLY[0])
                failure = next((f for f in result.failures if f.rule == rule), None)
                row = {
                    "defect": defect,
                    "cap": cap,
                    "seed": seed,
                    "caught": failure is not None,
                    "steps": len(failure.extra["steps"]) if failure else None,
                    "shrunk": bool(failure.extra.get("shrunk")) if failure else None,
                    "requests": report.requests,
                    "seconds": round(time.monotonic() - began, 2),
                    "other": sorted({f.rule for f in result.failures} - {rule}),
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return {"tree": str(Path(conformance.__file__).resolve().parent.parent), "rows": rows}


def summarise(rows: list[dict[str, Any]]) -> dict[tuple[str, int | None], dict[str, Any]]:
    table: dict[tuple[str, int | None], dict[str, Any]] = {}
    for row in rows:
        entry = table.setdefault(
            (row["defect"], row["cap"]), {"seeds": 0, "steps": [], "shrunk": 0, "requests": []}
        )
        entry["seeds"] += 1
        entry["requests"].append(row["requests"])
        if row["caught"]:
            entry["steps"].append(row["steps"])
            entry["shrunk"] += bool(row["shrunk"])
    return table


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(f"{'defect':36} {'cap':>5} {'caught':>7} {'median steps':>13} {'shrunk':>7} "
          f"{'requests':>9}")  # fmt: skip
    for (defect, cap), entry in summarise(rows).items():
        caught = f"{len(entry['steps'])}/{entry['seeds']}"
        print(
            f"{defect:36} {shown(cap) if cap else 'none':>5} {caught:>7} "
            f"{shown(median(entry['steps'])):>13} {entry['shrunk']:>7} "
            f"{shown(median(entry['requests'])):>9}"
        )


def print_ratios(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], ref: str) -> None:
    mine, other = summarise(ours), summarise(theirs)
    print(f"\nthis tree against {ref}: median shrunk steps (caught seeds), ratio this / other")
    print(f"{'defect':36} {'cap':>5} {'other':>12} {'this':>12} {'ratio':>7}")
    shorter = longer = 0
    for key, entry in mine.items():
        theirs_entry = other.get(key)
        if theirs_entry is None:
            continue
        a, b = median(theirs_entry["steps"]), median(entry["steps"])
        ratio = None if a is None or b is None else b / a
        shorter += ratio is not None and ratio < 1
        longer += ratio is not None and ratio > 1
        defect, cap = key
        print(
            f"{defect:36} {shown(cap) if cap else 'none':>5} "
            f"{shown(a) + ' (' + str(len(theirs_entry['steps'])) + ')':>12} "
            f"{shown(b) + ' (' + str(len(entry['steps'])) + ')':>12} "
            f"{'-' if ratio is None else f'{ratio:.2f}':>7}"
        )
    print(f"shorter on {shorter}, longer on {longer} of {len(mine)} (defect, cap) pairs")


def print_paired(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    """Per cap, seed by seed: the runs both trees caught, and how long each shrunk them."""
    other = {(r["defect"], r["cap"], r["seed"]): r for r in theirs}
    print("\nseed by seed, the runs both trees caught: mean steps (over 8 steps), this / other")
    for cap in dict.fromkeys(r["cap"] for r in ours):
        pairs = [
            (r["steps"], other[key]["steps"])
            for r in ours
            if r["cap"] == cap
            and (key := (r["defect"], r["cap"], r["seed"])) in other
            and r["caught"]
            and other[key]["caught"]
        ]
        runs = [r for r in ours if r["cap"] == cap]
        caught = (
            sum(r["caught"] for r in runs),
            sum(other[k]["caught"] for r in runs if (k := (r["defect"], cap, r["seed"])) in other),
        )
        if not pairs:
            continue
        mine, theirs_steps = [a for a, _ in pairs], [b for _, b in pairs]
        print(
            f"cap {shown(cap) if cap else 'none'}: caught {caught[0]} / {caught[1]} of "
            f"{len(runs)}; both {len(pairs)}: mean {statistics.mean(mine):.2f} "
            f"({sum(a > 8 for a in mine)}) / {statistics.mean(theirs_steps):.2f} "
            f"({sum(b > 8 for b in theirs_steps)}); shorter on {sum(a < b for a, b in pairs)}, "
            f"longer on {sum(a > b for a, b in pairs)}"
        )


def in_subprocess(tree: str, argv: list[str]) -> dict[str, Any]:
    """The figures of ``tree``'s code: this script's measurement, run with its PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=tree)
    answer = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", *argv],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        check=True,
    )
    return json.loads(answer.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--caps", default="none,400", help="request caps, 'none' for no cap")
    parser.add_argument("--defects", default="", help="only these defects (comma-separated)")
    parser.add_argument("--ref", default="", help="another checkout to measure side by side")
    parser.add_argument("--ref-results", default="", help="the other checkout's saved figures")
    parser.add_argument("--save", default="", help="keep this tree's figures as JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    caps = [None if c.strip() == "none" else int(c) for c in args.caps.split(",") if c.strip()]
    if args.worker:
        sys.path.insert(0, os.getcwd())
        from tests.conformance.checks.test_model import DEFECT_RULES

        defects = [d for d in args.defects.split(",") if d] or sorted(DEFECT_RULES)
        answer, sys.stdout = sys.stdout, sys.stderr  # what a run prints is not the answer
        json.dump(measure(defects, args.seeds, caps, args.first_seed), answer)
        return
    forwarded = ["--seeds", str(args.seeds), "--first-seed", str(args.first_seed)]
    forwarded += ["--caps", args.caps, "--defects", args.defects]
    reference: dict[str, Any] | None = None
    if args.ref_results:
        reference = json.loads(Path(args.ref_results).read_text())
    elif args.ref:
        reference = in_subprocess(str(Path(args.ref).resolve()), forwarded)
    ours = in_subprocess(str(ROOT), forwarded)
    if args.save:
        Path(args.save).write_text(json.dumps(ours))
    if reference is not None:
        print_table(f"other: {reference['tree']}", reference["rows"])
    print_table(f"this: {ours['tree']}", ours["rows"])
    if reference is not None:
        print_ratios(ours["rows"], reference["rows"], reference["tree"])
        print_paired(ours["rows"], reference["rows"])


if __name__ == "__main__":
    main()
