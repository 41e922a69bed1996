"""A model of the workspace, driven through the public API by a Hypothesis state machine.

* :mod:`conformance.model.rules`: the model's rules and the interface document's words for them;
* :mod:`conformance.model.api`: what the model reads of the contract, and its small reads;
* :mod:`conformance.model.requests`: the requests it sends (generated from the contract);
* :mod:`conformance.model.compare`: answers compared with the model (plain functions);
* :mod:`conformance.model.run`: what one run shares across examples (plan, facts, judgements);
* :mod:`conformance.model.machine`: the state machine.

The check that runs it is ``model-workspace`` (:mod:`conformance.checks.model`).
"""
