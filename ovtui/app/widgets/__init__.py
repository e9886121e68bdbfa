"""Widgets of the ovtui app."""
