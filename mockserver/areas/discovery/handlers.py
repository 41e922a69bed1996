"""HTTP handlers of the discovery area (bound to operationIds with @handler)."""
