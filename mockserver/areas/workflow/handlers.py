"""HTTP handlers of the workflow area (bound to operationIds with @handler)."""
