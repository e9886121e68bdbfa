"""The checks a plan goes through before review, one module per gate; each writes what it found
into the plan's and the items' metadata, where Review shows it and the review policy reads it.

- ``validation``: the plan run on held-out cases in an in-memory overlay (flips before → after);
- ``evidence``: the batch's trajectories that support each item, and those the change might break;
- ``leaks``: values of the cases a plan was learned from that an item would write down;
- ``sanitizer``: hidden characters, injected instructions, tool-call markup, secrets and personal
  data in the lines an item adds (never approved automatically).
"""
