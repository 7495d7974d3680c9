"""The LSP front-end: the handlers of ``toolwire serve`` and its wire models.

``boot`` holds the server class, its protocol object and what must exist before
``initialize`` is answered; ``server`` the ``toolwire/`` handlers and the rest of
LSP; ``protocol`` and ``messages`` the wire models (``schema`` renders them);
``documents`` the editor's open buffers; ``bridge`` the adapters from the agent's
interfaces to LSP messages. The JSON-RPC plumbing under it is :mod:`toolwire.rpc`;
the headless client behind ``toolwire run`` is :mod:`toolwire.headless`.
"""
