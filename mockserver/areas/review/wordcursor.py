"""Word cursors of the transcript read: signed, bound to a project, a source and a version.

A ``wordCursor`` is ``w1.<head>.<cursor>``: ``head`` (base64url JSON) names the source and the
composition version it paged, and ``cursor`` is a platform cursor (cursors.py: HMAC-signed,
short-lived) whose position is the number of that source's words already read and whose
filters are the project, the source and the version. Altering any part, or sending the cursor
for another project, breaks the signature check: ``400 invalid_request``
(``details.reason`` ``cursor_invalid``); an expired one answers ``400`` too
(``cursor_expired``). A cursor whose version is no longer the composition's answers
``409 conflict`` with ``details.reason`` ``stale_cursor``: the client restarts from the first
page.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from mockserver.call import Call
from mockserver.platform.errors import ApiError, conflict, invalid_request

PREFIX = "w1"
SCOPE = "getProjectTranscript.wordCursor"


@dataclass(frozen=True)
class WordPosition:
    source_id: str
    version: int
    offset: int  # words of the source already read


def _filters(project_id: str, source_id: str, version: int) -> dict[str, object]:
    return {"projectId": project_id, "sourceId": source_id, "version": version}


def issue(call: Call, project_id: str, source_id: str, version: int, offset: int) -> str:
    head = json.dumps({"src": source_id, "v": version}, separators=(",", ":")).encode()
    token = call.runtime.cursors.issue(SCOPE, _filters(project_id, source_id, version), offset)
    return f"{PREFIX}.{base64.urlsafe_b64encode(head).rstrip(b'=').decode()}.{token}"


def _unusable() -> ApiError:
    return invalid_request(
        "unusable wordCursor: it was altered or belongs to another project; read the "
        "transcript again from the first page",
        reason="cursor_invalid",
    )


def open_position(call: Call, project_id: str, token: str, current_version: int) -> WordPosition:
    """The position a word cursor carries (400 if unusable, 409 ``stale_cursor`` if stale)."""
    parts = token.split(".", 2)
    if not token.isascii() or len(parts) != 3 or parts[0] != PREFIX:
        raise _unusable()
    try:
        text = parts[1] + "=" * (-len(parts[1]) % 4)
        head = json.loads(base64.urlsafe_b64decode(text.encode("ascii")))
        source_id, version = str(head["src"]), int(head["v"])
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise _unusable() from None
    try:
        position = call.runtime.cursors.open(
            parts[2], SCOPE, _filters(project_id, source_id, version)
        )
    except ApiError as refused:
        if (refused.details or {}).get("reason") == "cursor_expired":
            raise
        raise _unusable() from None
    call.runtime.seams.refuse_stale_word_cursor(version, current_version)  # refuse_stale
    return WordPosition(source_id, version, position.seq)


def refuse_stale(version: int, current_version: int) -> None:
    """A cursor whose composition version is no longer the current one answers
    ``409 conflict`` ``stale_cursor`` (the ``refuse_stale_word_cursor`` seam)."""
    if version != current_version:
        raise conflict(
            "the composition changed since this wordCursor was issued; read the transcript "
            "again from the first page",
            reason="stale_cursor",
            compositionVersion=current_version,
        )
