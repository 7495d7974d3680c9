"""The Agent Client Protocol front-end (``toolwire acp``).

The only package that imports the ACP SDK (``acp``); it never imports ``toolwire.lsp``,
and ``toolwire.lsp`` never imports it: both front-ends share the core in
``toolwire.agent``.
"""
