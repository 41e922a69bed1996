"""The suite against the bundled mock started as a deployment: the issue-23 acceptance run.

    python bench/deployment.py [--time-budget 10m] [--rate-limit 100] [--seed 1]

Starts ``mockserver`` as a deployment would run: the real clock, the stated rate limit (100
requests a minute per caller; ``--rate-limit`` changes it, for a quicker look), private callbacks
allowed so that the suite's receiver on loopback can be reached, and its control plane never
used by the suite. Then runs, as the README's "Against your deployment" recipe says::

    conformance run --base-url URL --api-key sk_test_acme_owner \
      --second-key sk_test_globex_owner --restricted-key sk_test_acme_editor \
      --allow-spend --time-budget 10m --seed 1 \
      --receiver-listen 127.0.0.1:PORT --receiver-url http://127.0.0.1:PORT \
      --report-json FILE

Printed: the exit status and verdict, the wall time against the time budget, the requests made,
the rules judged of the judgeable ones (and the ratio to the 90% the issue asks for), the checks
failed (none expected: a failure is a defect of the mock or a false failure of the suite), and
the rules not judged by reason. The issue's targets: exit 0, at least 90% of the judgeable rules
judged, the run within ``--time-budget 10m``.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse_duration(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    if text[-1:] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def start_mock(port: int, rate_limit: int) -> subprocess.Popen[bytes]:
    command = [str(BIN / "mockserver"), "--port", str(port), "--allow-private-callbacks",
               "--log-level", "warning"]  # fmt: skip
    if rate_limit != 100:
        command += ["--rate-limit", str(rate_limit)]
    mock = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return mock
        except OSError:
            time.sleep(0.1)
    mock.kill()
    raise SystemExit("the mock did not start within 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-budget", default="10m")
    parser.add_argument("--rate-limit", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    port, receiver = free_port(), free_port()
    mock = start_mock(port, args.rate_limit)
    report_file = Path(tempfile.mkdtemp()) / "deployment.json"
    command = [
        str(BIN / "conformance"), "run", "--base-url", f"http://127.0.0.1:{port}",
        "--api-key", "sk_test_acme_owner", "--second-key", "sk_test_globex_owner",
        "--restricted-key", "sk_test_acme_editor", "--allow-spend",
        "--time-budget", args.time_budget, "--seed", str(args.seed),
        "--receiver-listen", f"127.0.0.1:{receiver}",
        "--receiver-url", f"http://127.0.0.1:{receiver}",
        "--report-json", str(report_file),
    ]  # fmt: skip
    started = time.monotonic()
    try:
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    finally:
        mock.terminate()
        mock.wait(10)
    wall = time.monotonic() - started
    if not report_file.exists():
        print(run.stdout[-4000:], run.stderr[-4000:])
        raise SystemExit(f"no report written (exit {run.returncode})")
    report = json.loads(report_file.read_text())
    rules = report["rules"]
    budget = parse_duration(args.time_budget)
    failed = [c["name"] for c in report["checks"] if c["status"] == "failed"]
    print(f"exit status      {run.returncode} ({report['verdict']})")
    print(f"wall time        {wall:.0f} s of a {budget:.0f} s time budget "
          f"(ratio {wall / budget:.2f}; <= 1.00 meets it)")  # fmt: skip
    print(f"requests         {report['requests']} at {args.rate_limit} a minute")
    percent = rules["percent"]
    print(f"rules judged     {rules['judged']} of {rules['judgeable']} judgeable "
          f"({percent:.1f}%; ratio to the 90% target {percent / 90:.2f})")  # fmt: skip
    print(f"checks failed    {len(failed)}{': ' + ', '.join(failed) if failed else ''}")
    reasons = Counter(entry["category"] for entry in rules["notJudged"])
    for category, count in reasons.most_common():
        print(f"  not judged     {count:3d}  {category}")
    for entry in rules["notJudged"]:
        print(f"    - [{entry['category']}] {entry['rule'][:90]}")


if __name__ == "__main__":
    main()
