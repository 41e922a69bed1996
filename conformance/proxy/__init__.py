"""Passive conformance: ``conformance proxy`` forwards a client's live traffic to a deployment
and judges what it sees by the contract and the interface document's stated rules, without
sending a request of its own.

* findings.py: what a finding is (the check whose rule broke, the side, the exchange);
* forward.py: forwarding, unchanged and streamed (an ASGI application, served by uvicorn);
* redact.py: what is kept is never a secret (credentials, ``x-secret`` fields);
* judge.py: one exchange judged: the request, the response (the suite's observers);
* sequences.py: the stated rules a sequence of exchanges shows, each a small bounded judge;
* session.py: findings printed as they happen, counted and kept for the reports;
* process.py: the judge in a process of its own;
* report.py, har.py: the reports and the HAR written on exit;
* cli.py: ``conformance proxy`` itself (and ``-- COMMAND``).
"""
