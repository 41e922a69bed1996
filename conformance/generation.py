"""Generated requests, through Schemathesis 4.x and Hypothesis.

* Positive data is generated from the whole contract (the best guess at valid input).
* Negative data is generated from the document the profile holds the deployment to, so that under
  ``contract`` it breaks only what the interface document states; path values that can only be
  too long, too short or off their pattern are broken by the suite itself (conformance/negpaths.py).
* Cases are drawn first (Hypothesis, seeded with the run's ``--seed``) and sent afterwards through
  :class:`conformance.target.Target`; no case is sent by Schemathesis itself.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from conformance import negpaths
from conformance.contract import Contract, Operation
from conformance.requestcheck import negatable

# Authentication is the target's business (it adds the key); links are the contract's only.
SCHEMATHESIS_CONFIG: dict[str, Any] = {
    "generation": {
        "with-security-parameters": False,
        "allow-x00": False,
        "allow-extra-parameters": False,
        "exclude-header-characters": "\r\n",
    },
    "phases": {"stateful": {"inference": {"algorithms": []}}},
}
_DROPPED_HEADERS = {
    "x-schemathesis-testcaseid",
    "user-agent",
    "accept-encoding",
    "connection",
    "content-length",
    "accept",
}
USER_AGENT = "cgcas-conformance"


# Loading a schema and drawing cases cost far more than sending them; a process that runs the
# suite several times (the pytest plugin, the kit's tests) reuses both. Cases are never mutated.
_SCHEMAS: dict[str, Any] = {}
_CASES: dict[tuple[Any, ...], list[Any]] = {}  # drawn by Hypothesis's engine, by count
_DRAWS: dict[tuple[Any, ...], Draws] = {}  # drawn directly: more can be taken later
# By operation, mode and explicit path values, whatever the seed: the strategy, and its simplest
# value with the choices that made it (the first value of every seed's draws, see draw()).
_STRATEGIES: dict[tuple[Any, ...], Any] = {}
_SIMPLEST: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
_MAX_CACHED = 20000


def _remember(cache: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    if len(cache) > _MAX_CACHED:
        cache.clear()
    cache[key] = value


def document_key(document: dict[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load_schema(document: dict[str, Any], key: str | None = None) -> Any:
    key = key or document_key(document)
    if key not in _SCHEMAS:
        config = SchemathesisConfig.from_dict(copy.deepcopy(SCHEMATHESIS_CONFIG))
        _SCHEMAS[key] = schemathesis.openapi.from_dict(copy.deepcopy(document), config=config)
    return _SCHEMAS[key]


def salted(seed: int, *parts: str) -> int:
    digest = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def draw(strategy: st.SearchStrategy[Any], count: int, seed: int) -> list[Any]:
    """Up to ``count`` values of a strategy, reproducibly for a seed (no shrinking, no database).

    The values are drawn straight from the strategy (:class:`Draws`): the simplest value first,
    as Hypothesis's engine starts, then values drawn at random from a generator seeded with
    ``seed``. The engine's search around what it has found (copies of parts of earlier
    examples, a tree of what it has run, shrinking) serves finding and minimising a failure, which
    a draw made before anything is sent cannot use; it cost a quarter of the drawing time. As in
    the engine, a value drawn from the same choices as an earlier one is drawn again, the global
    ``random`` is seeded for each value, and a value the strategy rejects is drawn again (up to
    ten tries a value). The values for a smaller ``count`` are the first of those for a bigger
    one. Where this Hypothesis has not the internals it needs, the engine draws
    (:func:`_draw_engine`).
    """
    if count <= 0:
        return []
    try:
        return Draws(strategy, seed).take(count)
    except _Unsupported:
        return _draw_engine(strategy, count, seed)


class _Unsupported(Exception):
    """This Hypothesis cannot draw directly (its internals are not the ones expected)."""


def _direct_internals() -> Any:
    try:
        from hypothesis.control import BuildContext
        from hypothesis.errors import StopTest, UnsatisfiedAssumption
        from hypothesis.internal.conjecture.choice import ChoiceTemplate
        from hypothesis.internal.conjecture.data import ConjectureData
        from hypothesis.internal.entropy import deterministic_PRNG
    except ImportError:
        return None
    return (BuildContext, StopTest, UnsatisfiedAssumption, ChoiceTemplate, ConjectureData,
            deterministic_PRNG)  # fmt: skip


_DIRECT = _direct_internals()
_TRIES_PER_VALUE = 10  # a value the strategy rejects (a filter, an assumption) is drawn again


class Draws:
    """The values of a strategy drawn so far for a seed; :meth:`take` draws more as asked, so
    asking for more later draws only the new ones (see :func:`draw`).

    The first value, drawn from the simplest choices, is the same for every seed: ``simplest``
    (its choices and value, as :attr:`simplest` kept it from an earlier seed's draws) stands in
    for drawing it again."""

    def __init__(
        self,
        strategy: st.SearchStrategy[Any],
        seed: int,
        simplest: tuple[tuple[Any, ...], Any] | None = None,
    ) -> None:
        if _DIRECT is None:
            raise _Unsupported
        self.strategy = strategy
        self.random = random.Random(seed)
        self.found: list[Any] = []
        self.seen: set[tuple[Any, ...]] = set()
        self.attempts = 0
        self.simplest = simplest  # (choices, value) of the first value, when it was drawn
        self.done = False  # the strategy is invalid, or Hypothesis gave up on it
        if simplest is not None:
            self.attempts = 1
            self.seen.add(simplest[0])
            self.found.append(simplest[1])
            return
        try:
            strategy.validate()
        except HypothesisException:
            self.done = True

    def take(self, count: int) -> list[Any]:
        """The first ``count`` values (fewer when no more could be drawn)."""
        build, stop, unsatisfied, template, conjecture, prng = _DIRECT
        while not self.done and len(self.found) < count:
            if self.attempts >= count * _TRIES_PER_VALUE:
                break
            first = self.attempts == 0
            self.attempts += 1
            try:
                prefix = (template("simplest", count=None),) if first else None
                data = conjecture(random=self.random, prefix=prefix)
                context = build(data, wrapped_test=_no_test)
            except TypeError as exc:  # another signature: not the internals expected
                raise _Unsupported from exc
            try:
                with prng(), context:
                    value = data.draw(self.strategy)
            except (stop, unsatisfied):
                continue  # rejected, or too big: drawn again
            except HypothesisException:  # e.g. an invalid strategy: the engine gives up, so do we
                self.done = True
                break
            if not hasattr(data, "choices"):
                raise _Unsupported
            choices = tuple(data.choices)
            if choices in self.seen:
                continue  # the same choices make the same value: a new one is drawn, as the
            self.seen.add(choices)  # engine never runs the same choices twice
            self.found.append(value)
            if first:
                self.simplest = (choices, value)
        return self.found[:count]


def _no_test() -> None:
    return None


def _draw_engine(strategy: st.SearchStrategy[Any], count: int, seed: int) -> list[Any]:
    """Up to ``count`` values through Hypothesis's engine, seeded."""
    found: list[Any] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    with contextlib.suppress(HypothesisException):  # e.g. nothing could be generated
        collect()
    return found


@dataclass
class Prepared:
    """A generated case as bytes on the wire (before the target adds the key)."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    case: Any = None

    @property
    def fingerprint(self) -> tuple[str, str, tuple[tuple[str, str], ...], bytes]:
        return (self.method, self.url, tuple(sorted(self.headers.items())), self.body)


def prepare(case: Any, base_url: str) -> Prepared | None:
    """The request a case stands for; None when it cannot be put on the wire."""
    if any(str(v) in (".", "..") for v in (case.path_parameters or {}).values()):
        return None  # a dot segment is normalised away by HTTP clients: another path entirely
    try:
        kwargs = case.as_transport_kwargs(base_url=base_url)
        kwargs.pop("auth", None)
        request = requests.Request(
            method=kwargs["method"],
            url=kwargs["url"],
            headers=kwargs.get("headers"),
            params=kwargs.get("params"),
            json=kwargs.get("json"),
            data=kwargs.get("data"),
            cookies=kwargs.get("cookies"),
        ).prepare()
    except Exception:  # a case requests cannot encode is simply not sent
        return None
    headers = {
        str(k): str(v) for k, v in request.headers.items() if k.lower() not in _DROPPED_HEADERS
    }
    headers["User-Agent"] = USER_AGENT
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not all(_sendable(k) and _sendable(v) for k, v in headers.items()):
        return None
    return Prepared(str(request.method), str(request.url), headers, body, case)


def _sendable(text: str) -> bool:
    try:
        text.encode("ascii")
    except UnicodeEncodeError:
        return False
    return all(32 <= ord(c) < 127 or c == "\t" for c in text)


class Generator:
    """Draws positive and negative cases for the contract's operations."""

    def __init__(self, contract: Contract, seed: int) -> None:
        self.contract = contract
        self.seed = seed
        self.positive_key = document_key(contract.document)
        self.positive_schema = load_schema(contract.document, self.positive_key)
        # The operations whose path values the suite breaks itself; Schemathesis breaks the rest
        # of their requests, from a document where those path parameters are plain strings.
        self.path_bounds = negpaths.path_bounds(contract.held)
        held_key = document_key(contract.held.document)
        self.negative_key = f"{held_key}:paths:{','.join(sorted(self.path_bounds))}"
        self._negative_schema: Any = None

    @property
    def negative_schema(self) -> Any:
        if self._negative_schema is None:
            if self.negative_key not in _SCHEMAS:
                held = self.contract.held
                document = negpaths.without_path_bounds(held, set(self.path_bounds))
                load_schema(document, self.negative_key)
            self._negative_schema = _SCHEMAS[self.negative_key]
        return self._negative_schema

    def api_operation(self, op: Operation, mode: GenerationMode) -> Any:
        schema = self.positive_schema if mode == GenerationMode.POSITIVE else self.negative_schema
        return schema[op.path][op.method]

    def cases(
        self,
        op: Operation,
        mode: GenerationMode,
        count: int,
        *,
        salt: str = "",
        path_parameters: dict[str, Any] | None = None,
        keep: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        seed = salted(self.seed, op.operation_id, mode.value, salt)
        schema_key = self.positive_key if mode == GenerationMode.POSITIVE else self.negative_key
        key = (schema_key, op.operation_id, mode.value, seed,
               tuple(sorted((path_parameters or {}).items())))  # fmt: skip
        if keep is None and key in _DRAWS:
            return _DRAWS[key].take(count)
        if keep is None and (*key, count) in _CASES:
            return list(_CASES[(*key, count)])
        shared = (*key[:3], key[4])  # the key without the seed
        strategy = _STRATEGIES.get(shared)
        if strategy is None:
            strategy = self.api_operation(op, mode).as_strategy(
                generation_mode=mode, path_parameters=path_parameters
            )
            _remember(_STRATEGIES, shared, strategy)
        simplest = _SIMPLEST.get(shared) if keep is None else None
        if keep is not None:
            strategy = strategy.filter(keep)
        try:
            draws = Draws(strategy, seed, simplest)
            found = draws.take(count)
        except _Unsupported:
            found = _draw_engine(strategy, count, seed)
            if keep is None:
                _remember(_CASES, (*key, count), found)
            return list(found)
        if keep is None:
            _remember(_DRAWS, key, draws)
            if draws.simplest is not None:
                _remember(_SIMPLEST, shared, draws.simplest)
        return found

    def negative_cases(
        self, op: Operation, count: int, *, salt: str = "", most: int | None = None
    ) -> list[Any]:
        """Up to ``count`` cases that break what the held document states of ``op``: the path
        values the suite breaks itself first, then Schemathesis's (which never break those).

        ``most`` is the most cases the caller may ask for (``count`` unless given): the path
        values take a share of it, so that the cases for a smaller ``count`` are the first of
        those for ``most`` (as long as :func:`draw` draws directly)."""
        most = max(count, most or count)
        bounds = self.path_bounds.get(op.operation_id)
        if bounds is None:
            return self.cases(op, GenerationMode.NEGATIVE, count, salt=salt)
        rest = negatable(self.contract.held, op, path=False)
        own = min(count, max(2, most // 4) if rest else most)
        found = self.broken_paths(op, bounds, own, salt=salt)
        if rest and count > own:
            found += self.cases(op, GenerationMode.NEGATIVE, count - own, salt=salt)
        return found

    def broken_paths(
        self, op: Operation, bounds: tuple[negpaths.PathBounds, ...], count: int, *, salt: str = ""
    ) -> list[Any]:
        """Valid generated requests to ``op``, each with one path value broken."""
        base = self.one_positive(op, salt=f"{salt}-path")
        if base is None:
            return []
        seed = salted(self.seed, op.operation_id, "negative-path", salt)
        operation = self.api_operation(op, GenerationMode.POSITIVE)
        cases = []
        for name, value in negpaths.broken_values(bounds, count, seed):
            path = {**base.path_parameters, name: quote(value, safe="")}
            cases.append(
                operation.Case(
                    path_parameters=path,
                    headers=base.headers,
                    cookies=base.cookies,
                    query=base.query,
                    body=base.body,
                    media_type=base.media_type,
                )
            )
        return cases

    def one_positive(
        self, op: Operation, *, salt: str = "", path_parameters: dict[str, Any] | None = None
    ) -> Any | None:
        found = self.cases(
            op, GenerationMode.POSITIVE, 1, salt=salt, path_parameters=path_parameters
        )
        return found[0] if found else None
