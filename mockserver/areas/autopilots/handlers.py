"""HTTP handlers of the autopilots area (bound to operationIds with @handler)."""
