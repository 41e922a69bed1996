"""Area: community."""
