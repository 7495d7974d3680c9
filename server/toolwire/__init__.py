"""Toolwire: the language-server backend of an AI coding assistant."""

__version__ = "0.1.0"
