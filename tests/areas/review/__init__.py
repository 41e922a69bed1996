"""Tests of the review area (mockserver/areas/review/): notes, watch links, transcripts."""
