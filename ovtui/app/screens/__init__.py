"""Screens of the ovtui app."""
