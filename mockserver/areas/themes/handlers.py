"""HTTP handlers of the themes area (bound to operationIds with @handler)."""
