"""Conformance suite for deployments of the Content Generation and Campaign Automation Service."""

__version__ = "0.1.0"
