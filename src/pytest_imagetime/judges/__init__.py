"""Judges (see ``registry.JUDGES``)."""
