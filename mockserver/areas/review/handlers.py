"""HTTP handlers of the review area (bound to operationIds with @handler)."""
