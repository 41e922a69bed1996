"""Area: jobs."""
