"""Themes: the canonical taxonomy, deterministic classification and niche profiles."""
