"""Passive conformance: ``conformance proxy`` forwards a client's live traffic to a deployment
and judges what it sees by the contract and the interface document's stated rules, without
sending a request of its own (findings.py says what a finding is)."""
