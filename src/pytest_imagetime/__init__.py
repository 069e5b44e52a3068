"""pytest-imagetime: the ImageTime benchmark as a pytest plugin."""

__version__ = "0.1.0"
