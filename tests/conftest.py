"""Shared test configuration. Area-specific fixtures live in the test modules that use them."""
