"""The transcript read: every source of the composition with a page of its words.

- Without ``wordCursor``: every source carries its first ``wordLimit`` words (default 1000, at
  most 2000: the contract's bounds) and ``wordsNextCursor``, null when it has no more.
- With ``wordCursor`` (one source's ``wordsNextCursor``): that source carries its next
  ``wordLimit`` words and its next cursor; the other sources carry no words and a null
  ``wordsNextCursor`` (inferred; their own cursors from earlier pages stay usable until the
  composition changes). ``wordCount`` is always the source's whole word count.
- A cursor issued before the composition last changed answers ``409 conflict``
  (``stale_cursor``); an altered one ``400 invalid_request`` (wordcursor.py).
- Also carried (inferred): ``projectId``, ``compositionVersion``, ``playback`` (the composition's
  preview media and how long it plays without its cut words) and ``notes`` (comments.py).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.review import comments, compositions, wordcursor
from mockserver.call import Call


def read(call: Call, project_id: str) -> dict[str, Any]:
    composition = compositions.load(call, project_id)
    current = compositions.version(composition)
    limit: int = call.query["wordLimit"]
    position = None
    if "wordCursor" in call.query:
        position = wordcursor.open_position(call, project_id, call.query["wordCursor"], current)
    sources = []
    for source in composition["sources"]:
        count = compositions.word_count(source)
        start = 0 if position is None else position.offset
        if position is not None and source["id"] != position.source_id:
            words, next_cursor = [], None
        else:
            words = compositions.words(source, start, start + limit)
            end = min(start + limit, count)
            next_cursor = (
                wordcursor.issue(call, project_id, source["id"], current, end)
                if end < count
                else None
            )
        sources.append(
            {
                "id": source["id"],
                "title": source.get("title", source["id"]),
                "wordCount": count,
                "words": words,
                "wordsNextCursor": next_cursor,
            }
        )
    return {
        "projectId": project_id,
        "compositionVersion": current,
        "playback": compositions.playback(call, composition),
        "notes": comments.notes(call, project_id),
        "sources": sources,
    }
