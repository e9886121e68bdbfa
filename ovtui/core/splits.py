"""The protocol's split names, apart from the config's models: the CLI's parsers default to them
without loading pydantic (tests/cli/test_startup.py)."""

# The split training's before/after figures, its gate, `eval` and `compare` score by default, and
# the held-out split sealed by default: tuning on what reports the final figure would bias it.
VALIDATION_SPLIT = "validation"
TEST_SPLIT = "test"
