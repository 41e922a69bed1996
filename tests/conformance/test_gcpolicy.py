"""The suite's own processes collect garbage less often; a process that only loads its pytest
plugin keeps its collector as it was (conformance/gcpolicy.py)."""

from __future__ import annotations

import ast
import subprocess
import sys

from conformance.gcpolicy import THRESHOLDS

SHOW = "import atexit, gc; atexit.register(lambda: print(tuple(gc.get_threshold())))"


def thresholds_after(code: str) -> tuple[int, ...]:
    done = subprocess.run(
        [sys.executable, "-c", f"{SHOW}\n{code}"], capture_output=True, text=True, timeout=60
    )
    return tuple(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def test_the_command_line_sets_the_suites_thresholds():
    code = "from conformance.cli import main\nmain(['list-checks'])"
    assert thresholds_after(code) == THRESHOLDS != (700, 10, 10)


def test_the_pytest_plugin_leaves_its_callers_collector_alone():
    default = thresholds_after("pass")
    assert thresholds_after("import conformance.pytest_plugin") == default != THRESHOLDS


def test_a_worker_sets_the_suites_thresholds_before_its_checks():
    code = (
        "import conformance.workers as w\n"
        "class Conn:\n"
        "    def send(self, item): print(item[0])\n"
        "    def close(self): pass\n"
        "w.work(None, Conn())  # no job: it reports an error, having set its collector first\n"
    )
    assert thresholds_after(code) == THRESHOLDS
