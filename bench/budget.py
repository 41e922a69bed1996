"""Which checks judge within a request budget, against the bundled mock run as a deployment.

    python bench/budget.py [--budgets 300,400,500,600,800] [--seed 1] [--bisect 25]

For each budget, and once without one, a fresh mock is started as a deployment would run it
(``mockserver --port P --allow-private-callbacks --rate-limit 100000``: the real clock, a rate
limit high enough not to slow the run; its control plane is never used) and the suite is run
against it through the API only, as the README's recipe for CI does::

    python -m conformance run --base-url URL --api-key sk_test_acme_owner
        --second-key sk_test_globex_owner --restricted-key sk_test_acme_editor --allow-spend
        --seed 1 --no-progress --report-json FILE [--max-requests N]

A check *judged* when its result holds at least one judgement (a pass or a failure). Coverage
is at check granularity: a stated rule is judged when one of its checks judged. Printed per
budget: the requests made, the wall time, how many of the checks that judge unbounded also
judged, and which did not; last, the smallest budget tried at which every one of them judged
(with ``--bisect STEP``: narrowed between the largest budget that missed some and the smallest
that did not, to STEP requests).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = [
    "--api-key", "sk_test_acme_owner", "--second-key", "sk_test_globex_owner",
    "--restricted-key", "sk_test_acme_editor",
]  # fmt: skip


@dataclass
class Outcome:
    budget: int | None
    requests: int = 0
    wall: float = 0.0
    judged: set[str] = field(default_factory=set)
    rules: str = ""  # rules judged of those judgeable (conformance/coverage.py), as reported


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_mock() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    mock = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "--port", str(port), "--allow-private-callbacks",
         "--rate-limit", "100000", "--log-level", "error"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return mock, url
        except OSError:
            time.sleep(0.1)
    mock.kill()
    raise SystemExit("the mock did not start within 30 s")


def run(budget: int | None, seed: int) -> Outcome:
    mock, url = start_mock()
    try:
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "report.json"
            command = [sys.executable, "-m", "conformance", "run", "--base-url", url, *KEYS,
                       "--allow-spend", "--seed", str(seed), "--no-progress",
                       "--report-json", str(report)]  # fmt: skip
            if budget is not None:
                command += ["--max-requests", str(budget)]
            started = time.monotonic()
            subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
            wall = time.monotonic() - started
            found = json.loads(report.read_text())
    finally:
        mock.terminate()
        mock.wait(timeout=30)
    judged = {c["name"] for c in found["checks"] if c["judgements"] > 0}
    rules = found["rules"]
    judged_rules = f"{rules['judged']}/{rules['judgeable']} rules ({rules['percent']:.1f}%)"
    return Outcome(budget, found["requests"], wall, judged, judged_rules)


def show(outcome: Outcome, wanted: set[str]) -> None:
    missing = sorted(wanted - outcome.judged)
    budget = "unbounded" if outcome.budget is None else str(outcome.budget)
    print(
        f"{budget:>9}  {outcome.requests:5d} requests  {outcome.wall:6.1f} s  "
        f"{len(wanted & outcome.judged)}/{len(wanted)} judged, {outcome.rules}"
        + (f"  missing: {', '.join(missing)}" if missing else ""),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="300,400,500,600,800")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bisect", type=int, metavar="STEP", help="narrow to STEP requests")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    unbounded = run(None, args.seed)
    wanted = unbounded.judged
    show(unbounded, wanted)
    outcomes = {}
    for budget in sorted(int(b) for b in args.budgets.split(",")):
        outcomes[budget] = run(budget, args.seed)
        show(outcomes[budget], wanted)
    enough = [b for b, o in outcomes.items() if wanted <= o.judged]
    if args.bisect and enough:
        low = max([b for b in outcomes if b < min(enough)], default=0)
        high = min(enough)
        while high - low > args.bisect:
            middle = (low + high) // 2
            outcomes[middle] = run(middle, args.seed)
            show(outcomes[middle], wanted)
            low, high = (low, middle) if wanted <= outcomes[middle].judged else (middle, high)
        enough.append(high)
    if enough:
        print(f"every check that judges unbounded judged within {min(enough)} requests")
    else:
        print("no budget tried was enough for every check that judges unbounded")


if __name__ == "__main__":
    main()
