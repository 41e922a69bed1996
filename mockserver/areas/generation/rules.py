"""Two generation rules decided in one line each, kept in a module of their own (no imports of
the jobs engine) so that mockserver/seams.py can name them as the product's defaults:

- :func:`remix_items`: the stated remix pricing, for a count of each kind of source: with any
  url source one ``video-analysis`` per url source (transcripts then add nothing); from
  transcripts alone one ``script``, or one ``scene-plan`` when ``outputFormat`` is ``scenes``
  (work.py prices a remix with it, as the ``remix_work_items`` seam);
- :func:`check_expected_generation`: an approval's ``expectedGeneration`` must be the proposal's
  current generation, else ``409 conflict`` ``stale_generation`` with
  ``details.currentGeneration``, before any charge (proposals.py, as the
  ``check_expected_generation`` seam).
"""

from __future__ import annotations

from mockserver.platform.errors import conflict

Item = tuple[str, int]  # (capability name, quantity)


def remix_items(url_sources: int, transcript_sources: int, output_format: str) -> list[Item]:
    """The stated remix pricing rule, for a count of each kind of source."""
    if url_sources:
        return [("video-analysis", url_sources)]
    if output_format == "scenes":
        return [("scene-plan", 1)]
    return [("script", 1)]


def check_expected_generation(expected: int | float, current: int) -> None:
    """A stale ``expectedGeneration`` answers ``409 conflict`` (nothing charged yet)."""
    if expected != current:
        raise conflict(
            f"expectedGeneration {expected} is stale; the proposal is at generation {current}",
            reason="stale_generation",
            currentGeneration=current,
        )
