"""The checks a plan goes through before review, one module per gate, each a ``Gate``
(``base``): it writes what it found into the plan's and the items' metadata, where Review shows it
and the review policy reads it, and says what the run's log should show. The builder lists them;
``runner.GateRunner`` runs them in that order (the engine knows it only as ``PlanGates``).

- ``evidence``: the batch's trajectories that support each item, and those the change might break;
- ``readability``: the lines the configured agent cannot act on (an agent that reads by rules);
- ``leaks``: values of the cases a plan was learned from that an item would write down;
- ``contradictions``: an added rule that says the opposite of another (offline), and
  ``model_contradictions``: the model's check of the same, when one is configured;
- ``sanitizer``: hidden characters, injected instructions, tool-call markup, secrets and personal
  data in the lines an item adds (never approved automatically);
- ``validation``: the plan run on held-out cases in an in-memory overlay (flips before → after).
"""
