"""Area: autopilots."""
