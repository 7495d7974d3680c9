"""The LSP layer: the only package that imports pygls and lsprotocol.

``server`` holds the language server and its handlers, ``protocol`` the wire models,
``bridge`` the adapters from agent interfaces to LSP, ``headless`` the client
behind ``toolwire run``.
"""
