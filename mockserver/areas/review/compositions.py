"""Compositions: the sources of a project's cut and their words, and the edits made to them.

The rules, in one place:

- Every project has exactly one composition. Fixture compositions (``compositions``, one record
  per project, filed under the project's id) name their sources; a source's words are its
  ``text`` split on spaces, repeated until ``wordCount`` when that is given. A project without
  one gets a small composition derived deterministically from its id (one to three sources of
  a few dozen words), the same on every read; it is stored the first time it is edited.
- Word ids are ``<sourceId>.w<n>`` (``n`` from 1). Timings are seconds from the start of the
  source, derived from each word's length (a short pause after a sentence ends).
- ``version`` (``compositionVersion``) moves on by one with every edit that changes the
  composition; word cursors are bound to it (wordcursor.py).
- Edits (inferred body, ``TranscriptEdit``): ``correct`` replaces one word's text (the original
  text again undoes the correction); ``cut`` marks words cut, ``restore`` brings cut words back.
  A cut word stays in the transcript with ``cut: true`` and keeps its timings, so
  ``wordCount`` counts every word, cut or not.
- An unknown source, or any word id that is not in the source, answers ``404 not_found``
  (details name the missing word ids) and nothing is changed.
- Inferred: cutting a word that is already cut, restoring one that is not, or correcting a
  word to the text it already has is allowed and changes nothing: such words are not in
  ``changedWordIds``, and an edit that changes no word leaves ``compositionVersion`` where it
  was (so a retried edit does not make outstanding word cursors stale).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from mockserver.call import Call
from mockserver.platform.errors import ApiError, not_found

COLLECTION = "compositions"
MEDIA_BASE = "https://media.mock.example"
SENTENCE_END = (".", "!", "?")

# Material for the compositions derived from a project id.
DERIVED_TITLES = ("Narration", "Interview", "Voice-over", "Host segment")
DERIVED_SENTENCES = (
    "Here is the short version of what you need to know.",
    "Most people skip this step, and it costs them later.",
    "Let me show you how it works with a real example.",
    "Start small, keep it simple, and measure what changes.",
    "This is the part everyone asks about in the comments.",
    "Write it down now, because you will want it next week.",
    "The trick is to do it the same way every single time.",
    "If you remember one thing from this video, make it this.",
)


def _hash(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def derived(project_id: str) -> dict[str, Any]:
    """The composition of a project the fixtures do not describe (deterministic)."""
    digest = hashlib.sha256(project_id.encode()).hexdigest()[:10]
    sources = []
    for n in range(1, 2 + _hash(project_id, "sources") % 3):
        count = 3 + _hash(project_id, n, "sentences") % 4
        sentences = [
            DERIVED_SENTENCES[_hash(project_id, n, i) % len(DERIVED_SENTENCES)]
            for i in range(count)
        ]
        sources.append(
            {
                "id": f"src_{digest}_{n}",
                "title": DERIVED_TITLES[_hash(project_id, n, "title") % len(DERIVED_TITLES)],
                "text": " ".join(sentences),
            }
        )
    return {"id": project_id, "projectId": project_id, "version": 1, "sources": sources}


def load(call: Call, project_id: str) -> dict[str, Any]:
    """The project's composition: its stored record, or the derived one (not stored)."""
    record = call.world.get(call.workspace_id, COLLECTION, project_id)
    return record if record is not None else derived(project_id)


def version(composition: dict[str, Any]) -> int:
    return int(composition.get("version", 1))


# -- words ------------------------------------------------------------------------------------


def _tokens(source: dict[str, Any]) -> list[str]:
    return str(source.get("text", "")).split()


def word_count(source: dict[str, Any]) -> int:
    tokens = _tokens(source)
    return int(source.get("wordCount", len(tokens))) if tokens else 0


def word_id(source: dict[str, Any], n: int) -> str:
    return f"{source['id']}.w{n}"


def _has_word(source: dict[str, Any], candidate: str) -> bool:
    prefix = f"{source['id']}.w"
    if not candidate.startswith(prefix):
        return False
    digits = candidate[len(prefix) :]
    if not (digits.isascii() and digits.isdigit()) or str(int(digits)) != digits:
        return False
    return 1 <= int(digits) <= word_count(source)


def words(source: dict[str, Any], start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
    """The source's words ``start`` to ``stop`` (0-based), as the contract's TranscriptWord."""
    tokens = _tokens(source)
    total = word_count(source)
    stop = total if stop is None else min(stop, total)
    cut = set(source.get("_cut", []))
    corrections: dict[str, str] = source.get("_corrections", {})
    shown: list[dict[str, Any]] = []
    at = 0.0
    for index in range(stop):
        token = tokens[index % len(tokens)]
        length = 0.22 + 0.045 * len(token)
        if index >= start:
            identifier = word_id(source, index + 1)
            shown.append(
                {
                    "id": identifier,
                    "text": corrections.get(identifier, token),
                    "start": round(at, 3),
                    "end": round(at + length, 3),
                    "cut": identifier in cut,
                    "corrected": identifier in corrections,
                }
            )
        at += length + (0.35 if token.endswith(SENTENCE_END) else 0.05)
    return shown


def kept_seconds(composition: dict[str, Any]) -> float:
    """How long the composition plays: every word that is not cut."""
    total = 0.0
    for source in composition["sources"]:
        total += sum(w["end"] - w["start"] for w in words(source) if not w["cut"])
    return round(total, 3)


def playback(call: Call, composition: dict[str, Any]) -> dict[str, Any]:
    return {
        "url": f"{MEDIA_BASE}/{call.workspace_id}/{composition['projectId']}/"
        f"composition-v{version(composition)}.mp4",
        "durationSeconds": kept_seconds(composition),
    }


def source(composition: dict[str, Any], source_id: str) -> dict[str, Any] | None:
    return next((s for s in composition["sources"] if s["id"] == source_id), None)


# -- edits ------------------------------------------------------------------------------------


def _missing_words(src: dict[str, Any], word_ids: Iterable[str]) -> None:
    missing = [w for w in word_ids if not _has_word(src, w)]
    if missing:
        raise ApiError(
            "not_found",
            f"{len(missing)} word id(s) are not in source {src['id']!r}",
            details={"sourceId": src["id"], "wordIds": missing[:50]},
        )


def edit(call: Call, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Apply one edit (every check first); the version and the ids of the words it changed."""
    composition = load(call, project_id)
    src = source(composition, body["sourceId"])
    if src is None:
        raise not_found(f"source {body['sourceId']!r} of the composition")
    action = body["action"]
    word_ids = [body["wordId"]] if action == "correct" else body["wordIds"]
    _missing_words(src, word_ids)
    changed = _changes(src, action, word_ids, body.get("text"))
    if not changed:
        return {"compositionVersion": version(composition), "changedWordIds": []}
    if call.world.get(call.workspace_id, COLLECTION, project_id) is None:
        call.world.insert(call.workspace_id, COLLECTION, composition)  # a derived one, kept now
    _apply(src, action, changed, body.get("text"))
    composition["version"] = version(composition) + 1
    composition["updatedAt"] = call.now_iso
    return {"compositionVersion": composition["version"], "changedWordIds": changed}


def _original(src: dict[str, Any], identifier: str) -> str:
    tokens = _tokens(src)
    n = int(identifier.rsplit(".w", 1)[1])
    return tokens[(n - 1) % len(tokens)]


def _changes(src: dict[str, Any], action: str, word_ids: list[str], text: str | None) -> list[str]:
    cut = set(src.get("_cut", []))
    if action == "cut":
        return [w for w in word_ids if w not in cut]
    if action == "restore":
        return [w for w in word_ids if w in cut]
    current = src.get("_corrections", {}).get(word_ids[0], _original(src, word_ids[0]))
    return [] if current == text else word_ids


def _apply(src: dict[str, Any], action: str, changed: list[str], text: str | None) -> None:
    if action == "cut":
        src["_cut"] = [*src.get("_cut", []), *changed]
    elif action == "restore":
        gone = set(changed)
        src["_cut"] = [w for w in src.get("_cut", []) if w not in gone]
    else:
        corrections = src.setdefault("_corrections", {})
        if text == _original(src, changed[0]):
            corrections.pop(changed[0], None)
        else:
            corrections[changed[0]] = text
