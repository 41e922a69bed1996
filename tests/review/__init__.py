"""Tests of the review, assets and workflow areas (issue 5, sections 6 and 7)."""
