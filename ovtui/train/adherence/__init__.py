"""Adherence: whether a rollout did what the experiences it used say (``checker``), read from their
lines (``directives``), and what that adds up to per experience (``summary``, kept by ``store``)."""
