"""The review loop: review policies, pending plans, re-planning and the gates that assess a plan."""
