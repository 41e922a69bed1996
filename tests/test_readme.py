"""The README's Quick start and CI stay true to each other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quick_start_is_exactly_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("mockserver")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_as_written():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start_commands()[1] in ci.splitlines()


def test_every_check_and_family_is_explained():
    from conformance.checks import FAMILIES, all_checks

    table = README.split("#### What each check means", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"`([a-z0-9-]+)`", table))
    assert [c.name for c in all_checks() if c.name not in named] == []
    families = README.split("`--only` and `--skip` take check names or families", 1)[1]
    assert all(f"`{family}`" in families.split(".", 1)[0] for family in FAMILIES)
