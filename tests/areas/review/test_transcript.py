"""Project transcripts: word paging, bounds, stale and altered word cursors, edits."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROJECT = "prj_acme_01"  # fixture: three sources, the middle one with 2400 words
PATH = f"/v1/projects/{PROJECT}/transcript"
INTRO, MAIN, OUTRO = "src_acme_01_intro", "src_acme_01_main", "src_acme_01_outro"


def read(api, path: str = PATH, **params) -> dict:
    response = api.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()["transcript"]


def by_id(transcript: dict) -> dict[str, dict]:
    return {source["id"]: source for source in transcript["sources"]}


def edit(api, body: dict, path: str = PATH):
    return api.post(path, json=body)


def walk_source(api, source_id: str, word_limit: int, path: str = PATH) -> list[dict]:
    """Every word of one source, following its wordsNextCursor."""
    first = by_id(read(api, path, wordLimit=word_limit))[source_id]
    words, cursor = list(first["words"]), first["wordsNextCursor"]
    while cursor is not None:
        page = read(api, path, wordLimit=word_limit, wordCursor=cursor)
        source = by_id(page)[source_id]
        assert len(source["words"]) <= word_limit
        for other in page["sources"]:
            if other["id"] != source_id:
                assert other["words"] == [] and other["wordsNextCursor"] is None
        words.extend(source["words"])
        cursor = source["wordsNextCursor"]
    return words


def test_every_source_is_listed_with_its_word_count_and_first_page(api):
    transcript = read(api, wordLimit=5)
    assert [s["id"] for s in transcript["sources"]] == [INTRO, MAIN, OUTRO]
    assert transcript["projectId"] == PROJECT and transcript["compositionVersion"] == 1
    main = by_id(transcript)[MAIN]
    assert main["wordCount"] == 2400 and len(main["words"]) == 5
    assert [w["id"] for w in main["words"]] == [f"{MAIN}.w{n}" for n in range(1, 6)]
    for source in transcript["sources"]:
        assert len(source["words"]) == min(5, source["wordCount"])
        assert source["wordsNextCursor"] is not None  # every source has more than 5 words
        starts = [w["start"] for w in source["words"]]
        assert starts == sorted(starts) and all(w["end"] > w["start"] for w in source["words"])
        assert not any(w["cut"] for w in source["words"])
    assert transcript["playback"]["durationSeconds"] > 0
    assert [n["id"] for n in transcript["notes"]][:2] == ["cmt_acme_001", "cmt_acme_002"]


def test_word_limit_defaults_to_1000_and_allows_2000(api):
    main = by_id(read(api))[MAIN]
    assert len(main["words"]) == 1000 and main["wordsNextCursor"] is not None
    intro = by_id(read(api))[INTRO]
    assert len(intro["words"]) == intro["wordCount"] and intro["wordsNextCursor"] is None
    widest = by_id(read(api, wordLimit=2000))[MAIN]
    assert len(widest["words"]) == 2000 and widest["wordsNextCursor"] is not None


@pytest.mark.parametrize("limit", [0, -1, 2001, "many"])
def test_word_limit_out_of_bounds_is_refused(api, limit):
    response = api.get(PATH, params={"wordLimit": limit})
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"


def test_paging_one_source_reads_each_word_once_in_order(api):
    words = walk_source(api, MAIN, 700)
    assert [w["id"] for w in words] == [f"{MAIN}.w{n}" for n in range(1, 2401)]
    assert len(walk_source(api, INTRO, 7)) == by_id(read(api))[INTRO]["wordCount"]


def test_pages_of_several_sources_can_be_followed_side_by_side(api):
    first = by_id(read(api, wordLimit=10))
    intro_next = read(api, wordLimit=10, wordCursor=first[INTRO]["wordsNextCursor"])
    outro_next = read(api, wordLimit=10, wordCursor=first[OUTRO]["wordsNextCursor"])
    assert by_id(intro_next)[INTRO]["words"][0]["id"] == f"{INTRO}.w11"
    assert by_id(outro_next)[OUTRO]["words"][0]["id"] == f"{OUTRO}.w11"
    assert by_id(outro_next)[INTRO]["words"] == []


def test_a_word_cursor_goes_stale_when_the_composition_changes(api):
    first = by_id(read(api, wordLimit=100))
    cursor = first[MAIN]["wordsNextCursor"]
    assert read(api, wordLimit=100, wordCursor=cursor)  # still current
    changed = edit(api, {"action": "cut", "sourceId": INTRO, "wordIds": [f"{INTRO}.w1"]})
    assert changed.status_code == 200
    assert changed.json()["compositionVersion"] == 2
    stale = api.get(PATH, params={"wordLimit": 100, "wordCursor": cursor})
    assert stale.status_code == 409, stale.text
    body = stale.json()
    assert body["code"] == "conflict" and body["details"]["reason"] == "stale_cursor"
    # The client restarts from the first page, and the new cursors work.
    again = by_id(read(api, wordLimit=100))
    assert again[INTRO]["words"][0]["cut"] is True
    fresh = read(api, wordLimit=100, wordCursor=again[MAIN]["wordsNextCursor"])
    assert by_id(fresh)[MAIN]["words"][0]["id"] == f"{MAIN}.w101"


def _altered(cursor: str) -> list[str]:
    prefix, head, rest = cursor.split(".", 2)
    claim = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    other = dict(claim, src=INTRO)
    forged = base64.urlsafe_b64encode(json.dumps(other).encode()).rstrip(b"=").decode()
    flipped = rest[:-1] + ("A" if rest[-1] != "A" else "B")
    return [
        f"{prefix}.{forged}.{rest}",  # claims another source
        f"{prefix}.{head}.{flipped}",  # signature altered
        cursor[:-3],  # truncated
        "garbage",
        f"{prefix}.%%%.{rest}",
    ]


def test_an_altered_word_cursor_is_refused_with_400(api):
    cursor = by_id(read(api, wordLimit=50))[MAIN]["wordsNextCursor"]
    for bad in _altered(cursor):
        response = api.get(PATH, params={"wordCursor": bad})
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["code"] == "invalid_request"


def test_a_stale_cursor_forged_to_look_current_is_refused(api):
    cursor = by_id(read(api, wordLimit=50))[MAIN]["wordsNextCursor"]
    edit(api, {"action": "cut", "sourceId": MAIN, "wordIds": [f"{MAIN}.w2"]})
    prefix, head, rest = cursor.split(".", 2)
    claim = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    forged = base64.urlsafe_b64encode(json.dumps(dict(claim, v=2)).encode()).rstrip(b"=")
    response = api.get(PATH, params={"wordCursor": f"{prefix}.{forged.decode()}.{rest}"})
    assert response.status_code == 400


def test_a_word_cursor_of_another_project_or_list_is_refused(api):
    cursor = by_id(read(api, wordLimit=50))[MAIN]["wordsNextCursor"]
    other = api.get("/v1/projects/prj_acme_02/transcript", params={"wordCursor": cursor})
    assert other.status_code == 400
    comments_cursor = api.get(f"/v1/projects/{PROJECT}/comments", params={"limit": 2}).json()
    response = api.get(PATH, params={"wordCursor": comments_cursor["nextCursor"]})
    assert response.status_code == 400


def test_a_word_cursor_expires(api, control):
    cursor = by_id(read(api, wordLimit=50))[MAIN]["wordsNextCursor"]
    control.advance(901)
    response = api.get(PATH, params={"wordCursor": cursor})
    assert response.status_code == 400
    assert response.json()["details"]["reason"] == "cursor_expired"


def test_correct_cut_and_restore_are_reflected_in_the_transcript(api):
    word = f"{MAIN}.w3"
    corrected = edit(api, {"action": "correct", "sourceId": MAIN, "wordId": word, "text": "net"})
    assert corrected.status_code == 200
    assert corrected.json() == {"success": True, "compositionVersion": 2, "changedWordIds": [word]}
    cut = edit(api, {"action": "cut", "sourceId": MAIN, "wordIds": [f"{MAIN}.w1", f"{MAIN}.w2"]})
    assert cut.json()["compositionVersion"] == 3
    words = by_id(read(api, wordLimit=4))[MAIN]["words"]
    assert [w["cut"] for w in words] == [True, True, False, False]
    assert words[2]["text"] == "net" and words[2]["corrected"] is True
    assert words[3]["corrected"] is False
    restored = edit(api, {"action": "restore", "sourceId": MAIN, "wordIds": [f"{MAIN}.w2"]})
    assert restored.json()["changedWordIds"] == [f"{MAIN}.w2"]
    words = by_id(read(api, wordLimit=4))[MAIN]["words"]
    assert [w["cut"] for w in words] == [True, False, False, False]
    assert read(api)["compositionVersion"] == 4


def test_cut_words_shorten_playback(api):
    before = read(api, wordLimit=1)["playback"]["durationSeconds"]
    edit(api, {"action": "cut", "sourceId": INTRO, "wordIds": [f"{INTRO}.w{n}" for n in (1, 2)]})
    assert read(api, wordLimit=1)["playback"]["durationSeconds"] < before


def test_an_edit_that_changes_nothing_keeps_the_version_and_cursors(api):
    word = f"{MAIN}.w5"
    edit(api, {"action": "cut", "sourceId": MAIN, "wordIds": [word]})
    cursor = by_id(read(api, wordLimit=10))[MAIN]["wordsNextCursor"]
    again = edit(api, {"action": "cut", "sourceId": MAIN, "wordIds": [word]})
    assert again.status_code == 200
    assert again.json()["changedWordIds"] == [] and again.json()["compositionVersion"] == 2
    not_cut = edit(api, {"action": "restore", "sourceId": MAIN, "wordIds": [f"{MAIN}.w6"]})
    assert not_cut.json()["changedWordIds"] == []
    assert api.get(PATH, params={"wordCursor": cursor}).status_code == 200


def test_correcting_back_to_the_original_undoes_the_correction(api):
    original = by_id(read(api, wordLimit=1))[MAIN]["words"][0]["text"]
    body = {"action": "correct", "sourceId": MAIN, "wordId": f"{MAIN}.w1"}
    edit(api, {**body, "text": "Gross"})
    edit(api, {**body, "text": original})
    word = by_id(read(api, wordLimit=1))[MAIN]["words"][0]
    assert word["text"] == original and word["corrected"] is False


@pytest.mark.parametrize(
    "body",
    [
        {"action": "cut", "sourceId": "src_nope", "wordIds": [f"{MAIN}.w1"]},
        {"action": "cut", "sourceId": MAIN, "wordIds": [f"{MAIN}.w1", f"{MAIN}.w2401"]},
        {"action": "restore", "sourceId": MAIN, "wordIds": [f"{INTRO}.w1"]},
        {"action": "correct", "sourceId": MAIN, "wordId": f"{MAIN}.w0", "text": "x"},
        {"action": "correct", "sourceId": MAIN, "wordId": f"{MAIN}.w01", "text": "x"},
        {"action": "correct", "sourceId": MAIN, "wordId": f"{MAIN}.w\u00b2", "text": "x"},
        {"action": "cut", "sourceId": MAIN, "wordIds": [f"{MAIN}.w-1", MAIN, "w1"]},
    ],
)
def test_unknown_sources_and_words_answer_404_and_change_nothing(api, body):
    response = edit(api, body)
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    transcript = read(api, wordLimit=2)
    assert transcript["compositionVersion"] == 1
    assert not any(w["cut"] for s in transcript["sources"] for w in s["words"])


@pytest.mark.parametrize(
    "body",
    [
        {"action": "cut", "sourceId": MAIN, "wordIds": []},
        {"action": "cut", "sourceId": MAIN, "wordIds": ["a", "a"]},
        {"action": "correct", "sourceId": MAIN, "wordId": f"{MAIN}.w1", "text": ""},
        {"action": "correct", "sourceId": MAIN, "wordIds": [f"{MAIN}.w1"]},
        {"action": "explode", "sourceId": MAIN, "wordIds": [f"{MAIN}.w1"]},
    ],
)
def test_malformed_edits_answer_400(api, body):
    assert edit(api, body).status_code == 400


def test_other_workspaces_and_viewers(api):
    assert api.get(PATH, key="globex").status_code == 404
    assert api.get("/v1/projects/prj_nope/transcript").status_code == 404
    assert api.get(PATH, key="viewer").status_code == 200
    body = {"action": "cut", "sourceId": MAIN, "wordIds": [f"{MAIN}.w1"]}
    assert api.post(PATH, json=body, key="viewer").status_code == 403
    assert api.post(PATH, json=body, key="globex").status_code == 404
    assert read(api)["compositionVersion"] == 1


def test_every_project_has_a_composition_derived_from_its_id(api):
    created = api.post(
        "/v1/projects", json={"title": "Fresh"}, headers={"Idempotency-Key": "fresh-1"}
    ).json()["project"]
    for path in (f"/v1/projects/{created['id']}/transcript", "/v1/projects/prj_acme_09/transcript"):
        first, second = read(api, path, wordLimit=2000), read(api, path, wordLimit=2000)
        assert first == second and first["sources"] and first["compositionVersion"] == 1
        assert all(0 < s["wordCount"] == len(s["words"]) for s in first["sources"])
    globex = api.get("/v1/projects/prj_globex_01/transcript", key="globex")
    assert globex.status_code == 200


def test_editing_a_derived_composition_keeps_it(api):
    path = "/v1/projects/prj_acme_09/transcript"
    source = read(api, path)["sources"][0]
    word = source["words"][0]["id"]
    response = edit(api, {"action": "cut", "sourceId": source["id"], "wordIds": [word]}, path)
    assert response.json() == {"success": True, "compositionVersion": 2, "changedWordIds": [word]}
    after = read(api, path)
    assert after["compositionVersion"] == 2 and after["sources"][0]["words"][0]["cut"] is True
    assert after["sources"][0]["wordCount"] == source["wordCount"]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(word_limit=st.integers(min_value=160, max_value=2000))
def test_any_word_limit_walks_the_long_source_exactly_once(api, control, word_limit):
    control.reset()
    words = walk_source(api, MAIN, word_limit)
    assert [w["id"] for w in words] == [f"{MAIN}.w{n}" for n in range(1, 2401)]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(["cut", "restore"]), st.sets(st.integers(1, 12), min_size=1)),
        min_size=1,
        max_size=6,
    )
)
def test_cut_and_restore_follow_a_simple_model(api, control, edits):
    control.reset()
    cut: set[int] = set()
    version = 1
    for action, numbers in edits:
        ids = [f"{OUTRO}.w{n}" for n in sorted(numbers)]
        response = edit(api, {"action": action, "sourceId": OUTRO, "wordIds": ids})
        assert response.status_code == 200
        expected = numbers - cut if action == "cut" else numbers & cut
        cut = cut | numbers if action == "cut" else cut - numbers
        version += 1 if expected else 0
        body = response.json()
        assert sorted(body["changedWordIds"]) == sorted(f"{OUTRO}.w{n}" for n in expected)
        assert body["compositionVersion"] == version
    words = by_id(read(api, wordLimit=12))[OUTRO]["words"]
    assert {n for n, w in enumerate(words, 1) if w["cut"]} == cut
