"""Area: generation."""
