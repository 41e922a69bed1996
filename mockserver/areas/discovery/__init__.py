"""Area: discovery."""
