"""Area: webhooks."""
