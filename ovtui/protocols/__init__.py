"""Wire models: the benchmark protocol, the session API and the training session's CaseSpec messages."""
