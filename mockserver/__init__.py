"""A stateful mock of the Content Generation and Campaign Automation Service.

It is driven by the service's contract, ``spec/openapi.yaml``.
"""

__version__ = "0.1.0"
