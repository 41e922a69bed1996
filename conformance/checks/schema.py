"""Schema: generated requests (Schemathesis) for every operation, and every response judged.

* ``schema-responses`` (observer): every response the run receives has a documented status, the
  documented content type, and a body and headers valid against the contract under the profile;
* ``schema-server-errors`` (observer): no 5xx the run did not provoke;
* ``schema-positive``: requests generated from the whole contract get no 5xx (under ``contract``,
  any documented answer passes);
* ``schema-negative``: requests that break a stated constraint are refused with 400
  ``invalid_request`` (404 when the broken part is the path; 413 for a big body);
* ``schema-stateful``: sequences that follow the contract's ``links``;
* ``schema-deprecated-fields``: a response property the contract marks ``deprecated: true`` is
  still returned wherever the replacement its description names (``use `download```) is; the
  reads that can carry one are made (with the deprecated query parameters sent), and a render
  job is followed to its end where the run may spend.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import requests
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from schemathesis import GenerationMode
from schemathesis.core.transport import Response

from conformance.checks import check, observer, prepares
from conformance.checks.jobs import (
    RENDER,
    RENDER_KIND,
    Tracked,
    deprecated_in,
    follow,
    job_starters,
    replacement,
    start_jobs,
)
from conformance.context import Context
from conformance.contract import ContractView, Operation, link_value
from conformance.generation import prepare, salted
from conformance.model.run import StopRun
from conformance.passes import BREADTH
from conformance.polling import beyond
from conformance.refusals import refusal, refused_since
from conformance.requestcheck import negatable
from conformance.skips import INFERRED_OPERATION, Skip
from conformance.target import BudgetExhausted, Exchange

FAMILY = "schema"
DEFAULT_EXAMPLES = 10
MAX_EXAMPLES = 50
_RETRYABLE = ("capability_unavailable", "upstream_unavailable")


@observer(
    "schema-responses",
    FAMILY,
    "every response: documented status, content type, body and headers valid for the profile",
)
def responses(ctx: Context, exchange: Exchange) -> None:
    op = ctx.held.operations.get(exchange.operation_id or "")
    if op is None or not ctx.contract.applicable(op):
        return
    problems = ctx.session.responses.check(
        op.operation_id, exchange.status, exchange.response_headers, exchange.response_body
    )
    if not problems:
        ctx.passed()
        return
    for problem in problems:
        where = f" at {problem.pointer}" if problem.pointer else ""
        ctx.fail(
            problem.rule,
            f"{op.label} → {exchange.status}: {problem.message}{where}",
            exchange=exchange,
            quote=_response_quote(ctx, op, exchange.status),
            key=(op.operation_id, exchange.status, problem.rule, problem.pointer),
        )


def _response_quote(ctx: Context, op: Operation, status: int) -> str:
    found = ctx.session.responses.response_for(op.operation_id, status)
    documented = ", ".join(op.statuses)
    if found is None:
        return f"{op.label} documents {documented}."
    key, response = found
    return f"{op.label} {key}: {' '.join(str(response.get('description', '')).split())}"


@observer("schema-server-errors", FAMILY, "no 5xx that the run did not provoke")
def server_errors(ctx: Context, exchange: Exchange) -> None:
    if exchange.check == "schema-positive":
        return  # judged there, with the generated case
    if exchange.status < 500 or exchange.provoked or exchange.code in _RETRYABLE:
        ctx.passed()
        return
    ctx.fail(
        "no-5xx",
        f"{exchange.method} {exchange.path} answered {exchange.answered}",
        exchange=exchange,
        quote=ctx.held.error_description(exchange.status) or "A 5xx is a server error.",
        key=(exchange.operation_id or exchange.path, exchange.status),
    )


def _applicable(ctx: Context) -> int:
    """How many operations the contract's profile lets the run judge."""
    return sum(1 for op in ctx.held.operations.values() if ctx.contract.applicable(op))


def _examples(ctx: Context, operations: int, per_example: float) -> int:
    """Examples per operation: the default unbounded; one in a bounded run's breadth pass (to
    judge once); in its depth pass as many as the check's allowance (its share of the budget
    left, conformance/plan.py) allows at ``per_example`` requests an example."""
    remaining = ctx.target.remaining
    if ctx.phase == BREADTH:
        return 1
    if remaining is None:
        return DEFAULT_EXAMPLES
    return max(1, min(MAX_EXAMPLES, int(remaining // max(1.0, operations * per_example))))


def _has_inferred_request(ctx: Context, op: Operation) -> bool:
    full = ctx.contract.full.operations[op.operation_id]
    held = ctx.held.operations[op.operation_id]
    return full.parameters != held.parameters or full.body_schema != held.body_schema


@check(
    "schema-positive",
    FAMILY,
    "requests generated from the contract, for every operation, answer no 5xx",
    cost=25,
    deep=True,
)
def positive(ctx: Context) -> None:
    per_op = _examples(ctx, _applicable(ctx), 1.5)  # per_op cases, and half as many real ids
    generator = ctx.session.generator
    for op in ctx.share(ctx.held.operations.values()):
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        real = ctx.session.ids.path_parameters(op) if op.path_parameters else None
        cases = generator.cases(op, GenerationMode.POSITIVE, per_op, salt="positive")
        if real:  # half of per_op: the first half of per_op drawn (draw() keeps its prefix)
            cases += generator.cases(
                op, GenerationMode.POSITIVE, max(1, per_op // 2), salt="positive-real",
                path_parameters=real,
            )  # fmt: skip
        seen = set()
        for case in cases:
            prepared = prepare(case, ctx.target.base_url)
            if prepared is None or prepared.fingerprint in seen:
                continue
            seen.add(prepared.fingerprint)
            exchange = ctx.send(prepared, op)
            if ctx.unavailable(exchange):
                break
            _judge_positive(ctx, op, exchange)


def _judge_positive(ctx: Context, op: Operation, exchange: Exchange) -> None:
    if exchange.status >= 500 and exchange.code not in _RETRYABLE:
        ctx.fail(
            "no-5xx",
            f"a valid request to {op.label} answered {exchange.answered}",
            exchange=exchange,
            quote=ctx.held.error_description(exchange.status),
            key=(op.operation_id, exchange.status),
        )
    elif (
        400 <= exchange.status < 500
        and exchange.status not in _documented(op)
        and not (ctx.profile == "contract" and _has_inferred_request(ctx, op))
    ):
        ctx.fail(
            "documented-status",
            f"a valid request to {op.label} answered {exchange.status}, which it does not document",
            exchange=exchange,
            key=(op.operation_id, exchange.status),
        )
    else:
        ctx.passed()


def _documented(op: Operation) -> set[int]:
    return {int(s) for s in op.statuses if s.isdigit()}


@check(
    "schema-negative",
    FAMILY,
    "requests that break a stated constraint are refused with 400 invalid_request",
    cost=100,  # the longest check of a run, about half its time
    deep=True,
)
def negative(ctx: Context) -> None:
    per_op = _examples(ctx, _applicable(ctx), 1)
    checker = ctx.session.request_checker
    codes = ctx.held.error_codes.get(400, ())
    for op in ctx.share(ctx.held.operations.values()):
        if not ctx.contract.applicable(op):
            ctx.skip(INFERRED_OPERATION)
            continue
        if not negatable(ctx.held, op):
            ctx.skip("no stated constraint to break")
            continue
        sent, seen = 0, set()
        for case in _negative_candidates(ctx, op, per_op):
            prepared = prepare(case, ctx.target.base_url)
            if prepared is None or prepared.fingerprint in seen:
                continue
            seen.add(prepared.fingerprint)
            broken = checker.violations(op, prepared.url, prepared.headers, prepared.body)
            if not broken:
                continue  # not negative under this profile: never sent as a probe
            sent += 1
            exchange = ctx.send(prepared, op)
            if exchange.capability_unavailable:
                ctx.skip("capability unavailable")
                break
            allowed = {400, 413} | ({404} if any(v.location == "path" for v in broken) else set())
            shown = "; ".join(f"{v.location} {v.name}: {v.message}" for v in broken[:3])
            wrong = _refusal_problem(exchange, allowed, codes)
            ctx.expect(
                wrong is None,
                "refused",
                f"{op.label} with {shown}: {_refusal_diff(exchange, allowed, codes, wrong)}",
                exchange=exchange,
                quote=ctx.held.quote("#/components/responses/BadRequest"),
                key=(op.operation_id, exchange.status, broken[0].location),
            )
            if sent >= per_op:
                break  # before the next case is asked for: it may have to be drawn
        if sent == 0:
            ctx.skip("no stated constraint to break")


def _negative_candidates(ctx: Context, op: Operation, per_op: int) -> Iterator[Any]:
    """The negative cases for ``op``: ``per_op`` of them, then two more, drawn only when some of
    the first cannot be sent (a duplicate, one that breaks nothing under the profile): the same
    cases as ``per_op + 2`` drawn at once, without drawing two that are seldom sent."""
    generator = ctx.session.generator
    first = generator.negative_cases(op, per_op, salt="neg", most=per_op + 2)
    yield from first
    yield from generator.negative_cases(op, per_op + 2, salt="neg", most=per_op + 2)[len(first) :]


def _refusal_problem(exchange: Exchange, allowed: set[int], codes: Any) -> str | None:
    """Which part of the answer to a request that breaks a stated constraint is wrong: the
    status, the code, or the body (None: it was refused as the contract says)."""
    if exchange.status not in allowed:
        return "status wrong"
    if exchange.status != 400 or exchange.code in codes:
        return None
    body = exchange.json()
    if not isinstance(body, dict) or not isinstance(body.get("code"), str):
        return "body not the standard error body"
    return "code wrong"


def _refusal_diff(exchange: Exchange, allowed: set[int], codes: Any, wrong: str | None) -> str:
    """``expected 400 invalid_request (or 413), got 422 with no code (status wrong)``."""
    others = " or ".join(str(s) for s in sorted(allowed) if s != 400)
    expected = f"400 {' or '.join(codes)}".strip() + (f" (or {others})" if others else "")
    got = f"{exchange.status} {exchange.code or 'with no code'}"
    return f"expected {expected}, got {got}" + (f" ({wrong})" if wrong else "")


@check(
    "schema-stateful",
    FAMILY,
    "sequences that follow the contract's links: no 5xx, and a link's target exists",
    creates=True,
    cost=10,
    deep=True,
)
def stateful(ctx: Context) -> None:
    """Every link followed once (in a bounded run's breadth pass up to the first judgement),
    then sequences of the state machine (not in the breadth pass)."""
    schema = ctx.session.generator.positive_schema
    allowed = [
        op.operation_id
        for op in ctx.held.operations.values()
        if ctx.why_not_send(op) is None and not op.public
    ]
    if not allowed:
        raise Skip("no operation may be called")
    machine = _machine(ctx, schema.include(operation_id=allowed).as_state_machine())
    try:
        _follow_links(ctx, set(allowed))
        if ctx.phase == BREADTH:
            return
        remaining = ctx.target.remaining
        examples = 10 if remaining is None else max(1, min(20, remaining // 12))
        hypothesis_seed(salted(ctx.seed, "stateful"))(machine)
        machine.run(
            settings=settings(
                max_examples=examples,
                stateful_step_count=6,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=False,
            )
        )
    except BudgetExhausted as exhausted:
        ctx.skip(exhausted.reason)
    except StopRun as stopped:
        ctx.skip(stopped.reason)
    except ExceptionGroup as group:
        if not (stopped := group.subgroup(BudgetExhausted)):
            raise
        ctx.skip(_first(stopped).reason)


def _first(group: BaseExceptionGroup[Any]) -> Any:
    """The first exception of a (nested) group."""
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def _follow_links(ctx: Context, allowed: set[str]) -> None:
    """Every link the contract gives a success, followed once from a valid call of its
    operation: the rule's part no seed can miss (the state machine then tries sequences of its
    own). A link whose target answers 404 fails ``link-target-exists``, as in a sequence."""
    for op in ctx.share(ctx.held.operations.values(), "links"):
        links = [(n, link) for n, link in _links_of(ctx, op) if link.get("parameters")]
        if op.operation_id not in allowed or not links:
            continue
        prepared = ctx.sample(op, salt="links", idempotency_key=_key_for(ctx, op))
        if prepared is None:
            continue
        exchange = ctx.send(prepared, op)
        if ctx.unavailable(exchange) or not exchange.ok:
            continue
        used = {str(k): str(v) for k, v in (prepared.case.path_parameters or {}).items()}
        for name, link in links:
            target = ctx.held.operations.get(str(link.get("operationId", "")))
            if (
                target is None
                or target.operation_id not in allowed
                or not target_must_exist(link, target.method)
            ):
                continue
            values = {
                param: link_value(str(expression), used, exchange.json())
                for param, expression in link["parameters"].items()
            }
            if not all(isinstance(v, str) and v for v in values.values()):
                continue
            follow = ctx.sample(
                target, salt="links", path_parameters=values, idempotency_key=_key_for(ctx, target)
            )
            if follow is None:
                continue
            answer = ctx.send(follow, target)
            if not ctx.unavailable(answer):
                _expect_link_target(ctx, name, link, answer, f" from {op.label}")


def target_must_exist(link: dict[str, Any], method: str) -> bool:
    """Whether following ``link`` (with ``method``) must not answer 404: not when the link
    says a 404 may come, nor for a DELETE."""
    return method != "DELETE" and "404" not in str(link.get("description", ""))


def _expect_link_target(
    ctx: Context, name: str, link: dict[str, Any], exchange: Exchange, source: str = ""
) -> None:
    """``link-target-exists``: a link followed from a success did not lead to a 404."""
    ctx.expect(
        exchange.status != 404,
        "link-target-exists",
        f"link {name}{source} led to {exchange.method} {exchange.path}, which answered 404",
        exchange=exchange,
        quote=str(link.get("description", f"link {name}")),
        key=(name,),
    )


def _links_of(ctx: Context, op: Operation) -> list[tuple[str, dict[str, Any]]]:
    """The links of ``op``'s successful answers, by name."""
    return [
        (name, dict(link))
        for status, response in op.definition.get("responses", {}).items()
        if status.startswith("2")
        for name, link in ctx.held.resolve(response).get("links", {}).items()
    ]


def _key_for(ctx: Context, op: Operation) -> str | None:
    return ctx.new_key() if op.idempotency_key else None


def _machine(ctx: Context, base: Any) -> Any:
    statuses: dict[str, int] = {}
    exchanges: dict[str, Exchange] = {}
    deleted: set[str] = set()

    class Machine(base):  # type: ignore[misc, valid-type]
        def step(self, input: Any) -> Any:
            output = super().step(input)
            transition = input.transition
            applied = {name for location, name in input.applied_parameters
                       if str(getattr(location, "value", location)) == "path"}  # fmt: skip
            wanted = set(input.case.path_parameters)
            if transition is None or not wanted or not wanted <= applied:
                return output
            exchange = exchanges.get(input.case.id)
            link = link_of(ctx.contract.full, transition.id)
            values = {str(v) for v in input.case.path_parameters.values()}
            if (
                exchange is not None
                and statuses.get(transition.parent_id, 0) // 100 == 2
                and target_must_exist(link, output.case.method)
                and not values & deleted
            ):
                _expect_link_target(ctx, transition.id, link, exchange)
            return output

        def call(self, case: Any, **kwargs: Any) -> Response:
            op = ctx.held.find(case.method, case.formatted_path) or ctx.held.operations.get(
                case.operation.definition.raw.get("operationId", "")
            )
            prepared = prepare(case, ctx.target.base_url)
            if prepared is None or op is None:
                raise Skip("a stateful case could not be sent")
            try:
                exchange = ctx.send(prepared, op)
            except BudgetExhausted as exhausted:
                # Ends the Hypothesis run at once: an error here would be replayed, and the
                # replay (with no budget) would not draw alike ("flaky strategy").
                raise StopRun(exhausted.reason) from None
            exchanges[case.id] = exchange
            statuses[case.id] = exchange.status
            if case.method == "DELETE" and exchange.ok:
                deleted.update(str(v) for v in case.path_parameters.values())
            if exchange.status >= 500 and exchange.code not in _RETRYABLE:
                ctx.fail(
                    "no-5xx",
                    f"{exchange.method} {exchange.path} answered {exchange.status} in a sequence",
                    exchange=exchange,
                    key=(op.operation_id, exchange.status),
                )
            else:
                ctx.passed()
            headers = {k: [v] for k, v in exchange.response_headers.items()}
            request = requests.Request(prepared.method, prepared.url).prepare()
            return Response(exchange.status, headers, exchange.response_body, request, 0.0, True)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            return None  # judged in call() and by the observers

    return Machine


def link_of(full: Any, transition: str) -> dict[str, Any]:
    """The link a state-machine transition followed: its id is ``SOURCE -> [STATUS] NAME ->
    TARGET`` (``POST /v1/video/render -> [200] GetJobProposal -> GET /v1/jobs/{jobId}/...``),
    or the link's name alone."""
    parts = transition.split(" -> ")
    name = parts[1].split("] ", 1)[-1] if len(parts) == 3 else transition
    source = parts[0] if len(parts) == 3 else None
    for op in full.operations.values():
        if source is not None and f"{op.method} {op.path}" != source:
            continue
        for response in op.definition.get("responses", {}).values():
            links = full.resolve(response).get("links", {})
            if name in links:
                return dict(links[name])
    return {}


# -- deprecated response fields ------------------------------------------------------------------

RETURNED = "A deprecated field stays accepted and returned."


def _carries_deprecated(view: ContractView, schema: Any, seen: set[int]) -> bool:
    node = view.resolve(schema)
    if not isinstance(node, dict) or id(node) in seen:
        return False
    seen.add(id(node))
    if deprecated_in(view, node):
        return True
    parts = [*node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", [])]
    parts += list(node.get("properties", {}).values())
    parts += [node["items"]] if isinstance(node.get("items"), dict) else []
    return any(_carries_deprecated(view, part, seen) for part in parts)


@dataclass
class _Place:
    """An object of a response whose schema declares a deprecated property."""

    where: str
    value: dict[str, Any]
    parent: Any
    holder: str  # the $ref of the schema declaring it ("" when written inline)
    name: str
    replacement: str
    description: str


def _places(
    view: ContractView,
    schema: Any,
    value: Any,
    out: dict[tuple[int, str], _Place],
    where: str = "",
    parent: Any = None,
    holder: str = "",
    depth: int = 0,
) -> None:
    """Walk a response body beside its schema, noting each deprecated property's object."""
    if depth > 40:
        return
    holder = schema.get("$ref", holder) if isinstance(schema, dict) else holder
    node = view.resolve(schema)
    if not isinstance(node, dict):
        return
    for part in [*node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", [])]:
        _places(view, part, value, out, where, parent, holder, depth + 1)
    if isinstance(value, dict):
        for name, raw in node.get("properties", {}).items():
            if name in deprecated_in(view, {"properties": {name: raw}}):
                other = replacement(view, raw) or ""
                text = " ".join(str(view.resolve(raw).get("description", "")).split())
                place = _Place(where, value, parent, holder, name, other, text)
                out.setdefault((id(value), name), place)
            if name in value:
                _places(view, raw, value[name], out, f"{where}/{name}", value, "", depth + 1)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            _places(view, node["items"], item, out, f"{where}/{index}", parent, "", depth + 1)


def _in_scope(place: _Place, renders: set[str]) -> bool:
    """Job artifacts carry the deprecated copy on render jobs only (JobArtifacts says so)."""
    if not place.holder.endswith("/JobArtifacts"):
        return True
    job = place.parent if isinstance(place.parent, dict) else {}
    return job.get("kind") == RENDER_KIND or job.get("id") in renders


def _judge_deprecated(
    ctx: Context, op: Operation, exchange: Exchange, renders: set[str]
) -> tuple[int, int]:
    """Judge one response; answers (places judged, places seen)."""
    schema = ctx.held.success_schema(op)
    if schema is None or not exchange.ok:
        return 0, 0
    places: dict[tuple[int, str], _Place] = {}
    _places(ctx.held, schema, exchange.json(), places)
    judged = 0
    for place in places.values():
        if place.replacement not in place.value or not _in_scope(place, renders):
            continue
        judged += 1
        ctx.expect(
            place.name in place.value,
            "deprecated-returned",
            f"{op.label}: {place.where or '(body)'} has {place.replacement} but not its "
            f"deprecated {place.name}",
            exchange=exchange,
            quote=f"{place.description} {RETURNED}".strip(),
            key=(op.operation_id, place.where.strip("/0123456789"), place.name),
        )
    return judged, len(places)


def _query_with_deprecated(op: Operation) -> dict[str, Any]:
    """The deprecated query parameters, each at the first value its schema allows."""
    query = {}
    for param in op.parameters:
        if param.location == "query" and param.deprecated:
            parts = [
                param.schema,
                *[p for p in param.schema.get("allOf", []) if isinstance(p, dict)],
            ]
            query[param.name] = next(
                (p["minimum"] for p in parts if isinstance(p, dict) and "minimum" in p), 0
            )
    return query


@check(
    "schema-deprecated-fields",
    FAMILY,
    "deprecated response fields (project kind, nextAfter, a render job's artifacts.video) are "
    "still returned wherever their replacement is",
)
def deprecated_fields(ctx: Context) -> None:
    judged = 0
    for op in ctx.held.operations.values():
        schema = ctx.held.success_schema(op)
        if op.method != "GET" or schema is None or not _carries_deprecated(ctx.held, schema, set()):
            continue
        if reason := ctx.why_not_send(op):
            ctx.skip(reason)
            continue
        path = ctx.session.ids.path_parameters(op) if op.path_parameters else {}
        if path is None:
            ctx.skip("no id to read")
            continue
        exchange = ctx.call(op, path_parameters=path, params=_query_with_deprecated(op))
        if ctx.unavailable(exchange):
            continue
        judged += _judge_deprecated(ctx, op, exchange, set())[0]
    judged += _done_render(ctx, ctx.prepared)
    if not judged:
        raise Skip("no response read could carry a deprecated field beside its replacement")


@prepares("schema-deprecated-fields")
def _start_render(ctx: Context) -> list[Tracked]:
    """A render job (when a render may be started), to be followed to its end."""
    starters = job_starters(ctx, only=[RENDER])
    if not starters:
        ctx.skip("a done render job needs a paid render (--allow-spend)")
        return []
    mark = ctx.target.count
    jobs = start_jobs(ctx, starters)
    if not jobs:
        ctx.skip(refusal("no render job could be started", refused_since(ctx, mark, starters)))
    return jobs


def _done_render(ctx: Context, jobs: list[Tracked]) -> int:
    """Judge the reads of the render jobs started, followed to their end."""
    if not jobs:
        return 0
    read = ctx.contract.full.operations["getJob"]
    renders = {job.job_id for job in jobs}
    judged = 0

    def judge(tracked: Any, exchange: Exchange, job: dict[str, Any]) -> None:
        nonlocal judged
        judged += _judge_deprecated(ctx, read, exchange, renders)[0]

    follow(ctx, jobs, judge)
    if not any(job.terminal for job in jobs):
        ctx.skip(beyond(ctx, "the render job did not end"))
    return judged
