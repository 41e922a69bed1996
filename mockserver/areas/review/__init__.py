"""Area: review."""
