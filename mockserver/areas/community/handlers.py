"""HTTP handlers of the community area (bound to operationIds with @handler)."""
