"""HTTP handlers of the library area (bound to operationIds with @handler)."""
