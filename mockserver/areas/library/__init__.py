"""Area: library."""
