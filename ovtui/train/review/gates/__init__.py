"""The gates a plan passes before it is applied or shown for review."""
