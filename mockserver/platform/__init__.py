"""Cross-cutting concerns of the mock: each lives in exactly one module here."""
