"""Area: workflow."""
