"""Film outlines: a three-act screenplay outline generated deterministically from the premise.

The same request (title, logline, genre, format, themes, setting, target audience) always gives
the same outline, word for word; changing any of them changes it. Beats are picked from fixed
templates by a SHA-256 of the premise, so no randomness and no model is involved.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

ACT_TITLES = ("Setup", "Confrontation", "Resolution")
BEATS = (
    (
        "Opening image: {setting}, seen through the eyes of the one who will have to change.",
        "The ordinary world of {setting} shows its first crack, and {theme} is named aloud.",
        "An inciting incident no one in {setting} can ignore sets the {genre} story moving.",
        "A refusal: the protagonist tries to go back to how things were.",
        "A mentor, a rival or a stranger offers a way forward, at a price.",
        "The protagonist commits, and crosses into a world where {theme} is tested.",
    ),
    (
        "Fun and games: the promise of the {genre} premise, played out in full.",
        "New allies and enemies reveal what {theme} really costs.",
        "A midpoint reversal raises the stakes and turns the goal inside out.",
        "The opposition closes in; every shortcut taken so far comes due.",
        "A betrayal from inside the circle leaves the protagonist alone.",
        "All is lost: the old self dies, and {theme} has to be faced without excuses.",
    ),
    (
        "A new plan, built from what the second act taught.",
        "The final confrontation, on ground the audience has learned to fear.",
        "A sacrifice that only the changed protagonist could make.",
        "The climax resolves the {genre} question the opening asked.",
        "Aftermath: {setting} is not the same, and neither is the protagonist.",
        "Closing image: a mirror of the opening, showing how far {theme} has moved.",
    ),
)
SUMMARIES = (
    "{title} opens in {setting}. {logline} The first act sets up who wants what, and why it "
    "cannot stay that way.",
    "The middle of {title} tests that want against {theme}: victories turn hollow and the stakes "
    "climb until the protagonist has nothing left but a choice.",
    "The last act of {title} pays off the {genre} promise: the choice is made, the cost is paid, "
    "and {setting} is left changed.",
)
DEFAULT_THEMES = ("trust", "ambition", "belonging", "loss", "courage", "identity", "freedom")
BEATS_PER_ACT = 4


def _seed(premise: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(premise, sort_keys=True).encode()).hexdigest()


def _pick(seed: str, salt: str, count: int) -> int:
    return int(hashlib.sha256(f"{seed}:{salt}".encode()).hexdigest()[:8], 16) % count


def _beats(seed: str, act: int, words: dict[str, str], themes: list[str]) -> list[str]:
    pool = list(BEATS[act])
    start = _pick(seed, f"act{act}", len(pool))
    chosen = sorted((start + step) % len(pool) for step in range(BEATS_PER_ACT))
    return [
        pool[index].format(**words, theme=themes[(act + n) % len(themes)])
        for n, index in enumerate(chosen)
    ]


def film_outline(body: dict[str, Any], project_id: str) -> dict[str, Any]:
    """The contract's ``FilmOutline`` for a validated ``FilmOutlineRequest`` body."""
    premise = {
        key: body.get(key)
        for key in ("title", "logline", "genre", "format", "themes", "setting", "targetAudience")
    }
    seed = _seed(premise)
    themes = list(body.get("themes") or []) or [
        DEFAULT_THEMES[_pick(seed, "theme", len(DEFAULT_THEMES))]
    ]
    words = {
        "title": body["title"],
        "logline": body["logline"].rstrip()
        + ("" if body["logline"].rstrip()[-1:] in ".!?" else "."),
        "genre": body["genre"],
        "setting": body.get("setting") or "a world on the edge of change",
    }
    acts = []
    for index, act_title in enumerate(ACT_TITLES):
        summary = SUMMARIES[index].format(**words, theme=themes[index % len(themes)])
        if index == 0 and body.get("targetAudience"):
            summary += f" Written for {body['targetAudience']}."
        acts.append(
            {
                "act": index + 1,
                "title": act_title,
                "summary": summary,
                "beats": _beats(seed, index, words, themes),
            }
        )
    return {
        "title": body["title"],
        "logline": body["logline"],
        "genre": body["genre"],
        "format": body["format"],
        "projectId": project_id,
        "themes": themes,
        "acts": acts,
    }
