"""The control plane, served under ``/_mock/`` and described by its own ``openapi.yaml``."""
