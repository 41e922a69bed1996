"""Area: assets."""
