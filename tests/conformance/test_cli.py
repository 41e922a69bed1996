"""The command line: list-checks, verify-signature, and exit statuses for usage errors and bad
targets."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conformance.checks import FAMILIES, all_checks
from conformance.cli import main
from mockserver.resources import fixtures_dir
from tests.conformance.support import free_port

VECTORS = json.loads((fixtures_dir() / "webhooks" / "vectors.json").read_text())["vectors"]


def status_of(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return int(exit_info.value.code or 0)


def test_list_checks_names_every_check_with_a_description(capsys: pytest.CaptureFixture[str]):
    assert status_of(["list-checks"]) == 0
    out = capsys.readouterr().out
    checks = all_checks()
    assert {c.family for c in checks} == set(FAMILIES)
    for check in checks:
        line = next(line for line in out.splitlines() if line.split()[0] == check.name)
        assert check.description in line
    rate_limit = next(line for line in out.splitlines() if line.startswith("rate-limit "))
    assert "only-when-selected" not in rate_limit, "the probe runs in every run (issue 25)"


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_verify_signature_judges_each_vector(
    vector: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    body = tmp_path / "body"
    body.write_bytes(base64.b64decode(str(vector["body_base64"])))
    argv = ["verify-signature", "--secret", str(vector["secret"]), "--timestamp",
            str(vector["timestamp"]), "--signature", str(vector["signature"]),
            "--body-file", str(body)]  # fmt: skip
    assert status_of(argv) == (0 if vector["valid"] else 1)
    assert capsys.readouterr().out.startswith("valid" if vector["valid"] else "invalid")


def test_verify_signature_refuses_a_timestamp_without_z(tmp_path: Path):
    vector = next(v for v in VECTORS if v["valid"])
    body = tmp_path / "body"
    body.write_bytes(base64.b64decode(str(vector["body_base64"])))
    stamp = str(vector["timestamp"]).replace("Z", "+00:00")
    argv = ["verify-signature", "--secret", str(vector["secret"]), "--timestamp", stamp,
            "--signature", str(vector["signature"]), "--body-file", str(body)]  # fmt: skip
    assert status_of(argv) == 1


def test_verify_signature_with_a_missing_body_file_is_a_usage_error(tmp_path: Path):
    argv = ["verify-signature", "--secret", "s", "--timestamp", "2026-01-01T00:00:00Z",
            "--signature", "sha256=00", "--body-file", str(tmp_path / "missing")]  # fmt: skip
    assert status_of(argv) == 2


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["run"],
        ["run", "--api-key", "k"],
        ["run", "--base-url", "http://127.0.0.1:9"],
        ["run", "--base-url", "not a url", "--api-key", "k"],
        ["run", "--mock", "--base-url", "http://127.0.0.1:9"],
        ["run", "--mock", "--only", "no-such-check"],
        ["run", "--mock", "--skip", "nope"],
        ["run", "--mock", "--profile", "strict"],
        ["run", "--mock", "--max-requests", "0"],
        ["run", "--mock", "--max-requests", "many"],
        ["run", "--mock", "--receiver-listen", "nowhere"],
        ["run", "--base-url", "https://x.example", "--api-key", "k", "--receiver-url",
         "http://public.example/hook"],
        ["frobnicate"],
    ],
)  # fmt: skip
def test_usage_errors_exit_2(argv: list[str]):
    assert status_of(argv) == 2


def test_connection_refused_exits_2(capsys: pytest.CaptureFixture[str]):
    port = free_port()  # nothing listens there
    assert status_of(["run", "--base-url", f"http://127.0.0.1:{port}", "--api-key", "k"]) == 2
    assert "unreachable" in capsys.readouterr().err


def test_dns_failure_exits_2(capsys: pytest.CaptureFixture[str]):
    argv = ["run", "--base-url", "http://conformance-target.invalid", "--api-key", "k"]
    assert status_of(argv) == 2
    assert "unreachable" in capsys.readouterr().err


@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 40, 100])
def test_shards_together_make_exactly_one_full_run(count: int):
    from conformance.api import RunConfig, validate

    full = validate(RunConfig(mock=True))
    active = [c.name for c in full if c.run is not None]
    observers = [c.name for c in full if c.observe is not None]  # some also make requests
    parts = [validate(RunConfig(mock=True, shard=(i, count))) for i in range(1, count + 1)]
    for part in parts:
        # every shard judges all of its own exchanges, in the full run's order
        assert [c.name for c in part if c.observe is not None] == observers
        names = [c.name for c in part]
        assert names == [c.name for c in full if c.name in names]
    dealt = [[c.name for c in part if c.run is not None] for part in parts]
    assert sorted(name for names in dealt for name in names) == sorted(active)  # exactly once
    cost = {c.name: c.cost for c in full}
    loads = [sum(cost[name] for name in names) for names in dealt]
    assert max(loads) - min(loads) <= max(cost.values())  # balanced by cost, not by count
    again = validate(RunConfig(mock=True, shard=(1, count)))
    assert [c.name for c in again] == [c.name for c in parts[0]]  # deterministic


def test_a_check_that_observes_and_makes_requests_makes_them_in_one_shard_only():
    from conformance.api import RunConfig, validate

    both = [c.name for c in validate(RunConfig(mock=True)) if c.run and c.observe]
    assert both, "envelope-json observes every exchange and sends a sample of its own"
    for name in both:
        parts = [validate(RunConfig(mock=True, shard=(i, 3))) for i in (1, 2, 3)]
        mine = [next(c for c in part if c.name == name) for part in parts]
        assert all(c.observe is not None for c in mine)
        assert sum(c.run is not None for c in mine) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--mock", "--workers", "0"],
        ["run", "--mock", "--workers", "two"],
        ["run", "--mock", "--workers", "2", "--no-sandbox"],
        ["run", "--mock-url", "http://127.0.0.1:9", "--workers", "2", "--no-sandbox"],
        ["run", "--mock", "--workers", "2", "--receiver-listen", "127.0.0.1:8443"],
        ["run", "--base-url", "http://127.0.0.1:9", "--api-key", "k", "--no-sandbox"],
        ["run", "--mock-url", "http://127.0.0.1:9", "--api-key", "k"],
        ["run", "--mock-url", "http://127.0.0.1:9", "--same-person-key", "k"],
        ["run", "--base-url", "http://127.0.0.1:9", "--api-key", "k", "--same-person-key", "k"],
        ["run", "--base-url", "http://127.0.0.1:9", "--api-key", "k", "--workers", "2",
         "--allow-faults"],
        ["run", "--base-url", "http://127.0.0.1:9", "--api-key", "k", "--workers", "2",
         "--only", "auth", "rate-limit"],
    ],
)  # fmt: skip
def test_worker_and_sandbox_usage_errors_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
):
    assert status_of(argv) == 2
    assert "error:" in capsys.readouterr().err  # refused before any request


def test_workers_against_a_deployment_are_refused_for_creating_checks(
    capsys: pytest.CaptureFixture[str],
):
    port = free_port()  # refused before anything is sent
    argv = ["run", "--base-url", f"http://127.0.0.1:{port}", "--api-key", "k", "--allow-spend",
            "--workers", "2", "--only", "idempotency", "auth"]  # fmt: skip
    assert status_of(argv) == 2
    err = capsys.readouterr().err
    assert "--workers 2 against --base-url is for a read-only run only" in err
    assert "idempotency-replay" in err and "leave out --allow-spend" in err and "--mock" in err


def test_workers_against_a_deployment_are_allowed_for_a_read_only_run():
    from conformance.api import RunConfig, validate, worker_count

    config = RunConfig(base_url="https://api.example", api_key="k", workers=3)
    checks = validate(config)  # without --allow-spend no check creates or spends
    assert worker_count(config, checks) == 3
    assert any(c.creates or c.spends for c in checks)  # they are selected, and skipped
    # The rate-limit probes drive the one key into 429: left out of a parallel run.
    assert not [c.name for c in checks if c.window]
    assert [
        c.name for c in validate(RunConfig(base_url="https://api.example", api_key="k")) if c.window
    ] == ["rate-limit", "rate-limit-shared-bucket"]


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "a/b", "2"])
def test_a_bad_shard_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--mock", "--shard", text])
    assert exit_info.value.code == 2
    assert "I/N" in capsys.readouterr().err


def test_only_and_skip_take_repeated_options_and_commas():
    from conformance.cli import _names, build_parser

    args = build_parser().parse_args(
        ["run", "--mock", "--only", "auth", "envelope-json,records-defaults", "--only", "schema"]
    )
    assert _names(args.only) == ["auth", "envelope-json", "records-defaults", "schema"]
    args = build_parser().parse_args(["run", "--mock", "--skip", "a,b", "--skip", "c"])
    assert _names(args.skip) == ["a", "b", "c"]


def test_rules_prints_the_rules_a_check_judges(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_:
        main(["rules", "--check", "idempotency-failed-call-frees-key"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "A failed call does not hold its key." in out
    assert "judged by: idempotency-failed-call-frees-key" in out
    with pytest.raises(SystemExit) as exit_:
        main(["rules", "--check", "no-such-check"])
    assert exit_.value.code == 2
