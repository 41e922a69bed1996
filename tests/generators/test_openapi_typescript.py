"""openapi-typescript generates types for the whole contract, and they type-check with tsc.

Both tools are pinned in ts/package.json and ts/package-lock.json and installed with `npm ci`
(the `node_tools` fixture); the test skips only where Node.js (node or npm) is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import operation_ids, run

TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "noEmit": True,
        "target": "ES2022",
        "module": "ESNext",
        "moduleResolution": "Bundler",
        "noUnusedLocals": False,
        "exactOptionalPropertyTypes": True,
        "noUncheckedIndexedAccess": True,
        "types": [],
    },
    "files": ["api.d.ts", "check.ts"],
}


def _literals(names: list[str]) -> str:
    return "[" + ", ".join(json.dumps(n) for n in names) + "] as const"


def check_source(doc: dict[str, Any]) -> str:
    """A TypeScript file that compiles only if the generated types hold the whole contract."""
    operations = operation_ids(doc) + [
        item["post"]["operationId"] for item in doc["webhooks"].values()
    ]
    return f"""\
import type {{ components, operations, paths, webhooks }} from "./api";

// The same set both ways: nothing missing, nothing extra.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Keys<T> = keyof T & string;

const operationIds = {_literals(operations)};
export const everyOperation: Same<(typeof operationIds)[number], Keys<operations>> = true;

const schemaNames = {_literals(list(doc["components"]["schemas"]))};
export const everySchema: Same<(typeof schemaNames)[number], Keys<components["schemas"]>> = true;

const responseNames = {_literals(list(doc["components"]["responses"]))};
export const everyResponse: Same<
  (typeof responseNames)[number],
  Keys<components["responses"]>
> = true;

const pathNames = {_literals(list(doc["paths"]))};
export const everyPath: Same<(typeof pathNames)[number], Keys<paths>> = true;

const webhookNames = {_literals(list(doc["webhooks"]))};
export const everyWebhook: Same<(typeof webhookNames)[number], Keys<webhooks>> = true;

// Error bodies are typed: code and details are read without casting raw JSON.
type Json<R> = R extends {{ content: {{ "application/json": infer B }} }} ? B : never;

const e402: Json<operations["renderVideo"]["responses"][402]> = {{
  success: false,
  error: "Not enough credits.",
  code: "insufficient_credits",
  details: {{ price: 150, balance: 100, shortfall: 50 }},
}};
export const shortfall: number | undefined = e402.details?.shortfall;

const e409: Json<operations["approveVideoEdit"]["responses"][409]> = {{
  success: false,
  error: "Stale generation.",
  code: "conflict",
  details: {{ currentGeneration: 2 }},
}};
export const currentGeneration: number | undefined = e409.details?.currentGeneration;

const e429: Json<operations["listCampaigns"]["responses"][429]> = {{
  success: false,
  error: "Slow down.",
  code: "a_code_v1_adds_later", // codes are open: v1's codes only grow
}};
export const code: string = e429.code;
export const details: object | undefined = e429.details;

// `products` is ids or exactly ["none"].
export const products: components["schemas"]["ChannelPatch"]["products"][] = [[], ["p1"], ["none"]];
"""


@pytest.fixture(scope="module")
def generated(node_tools: Path, spec: Path, tmp_path_factory: pytest.TempPathFactory):
    """(generator output, the generated api.d.ts)."""
    root = tmp_path_factory.mktemp("openapi-typescript")
    result = run(
        [str(node_tools / "openapi-typescript"), str(spec), "--output", "api.d.ts"], cwd=root
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output, root / "api.d.ts"


def _tsc(node_tools: Path, generated, tmp_path: Path, check: str):
    shutil.copy(generated[1], tmp_path / "api.d.ts")
    (tmp_path / "check.ts").write_text(check, encoding="utf-8")
    (tmp_path / "tsconfig.json").write_text(json.dumps(TSCONFIG, indent=2), encoding="utf-8")
    return run([str(node_tools / "tsc"), "--project", "tsconfig.json"], cwd=tmp_path)


def test_generates_without_a_warning(generated):
    output, api = generated
    # Success prints two lines (the version and the file written); anything else is a warning.
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 2 and "api.d.ts" in lines[1], output
    assert api.stat().st_size > 100_000


def test_generated_types_hold_the_whole_contract_and_type_check(
    node_tools: Path, generated, doc, tmp_path: Path
):
    result = _tsc(node_tools, generated, tmp_path, check_source(doc))
    assert result.returncode == 0, result.stdout + result.stderr


def test_tsc_refuses_a_wrong_error_body(node_tools: Path, generated, tmp_path: Path):
    # The check above means something only if tsc really checks the generated types.
    check = (
        'import type { operations } from "./api";\n'
        'type B = operations["renderVideo"]["responses"][402]["content"]["application/json"];\n'
        'export const b: B = { success: false, error: "e", code: 402 };\n'
    )
    result = _tsc(node_tools, generated, tmp_path, check)
    assert result.returncode != 0
    assert "check.ts" in result.stdout + result.stderr


@pytest.mark.parametrize("name", ["package.json", "package-lock.json"])
def test_node_tools_are_pinned_exactly(name):
    data = json.loads((Path(__file__).parent / "ts" / name).read_text(encoding="utf-8"))
    if name == "package.json":
        pins = data["devDependencies"]
    else:
        pins = {
            key.removeprefix("node_modules/"): value["version"]
            for key, value in data["packages"].items()
            if key in ("node_modules/openapi-typescript", "node_modules/typescript")
        }
    assert set(pins) == {"openapi-typescript", "typescript"}
    for version in pins.values():
        assert version[0].isdigit(), f"{name}: {version} is a range, not a pin"
