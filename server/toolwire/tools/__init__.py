"""Edit and git tools. ``default_registry()`` returns the tools a session offers."""
