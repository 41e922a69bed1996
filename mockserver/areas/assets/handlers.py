"""HTTP handlers of the assets area (bound to operationIds with @handler)."""
