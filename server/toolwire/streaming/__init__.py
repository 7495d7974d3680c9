"""The merge core: pure, synchronous, no I/O.

``delta`` holds the canonical events, ``formats`` the provider normalizers,
``framing`` turns raw bytes (SSE, JSONL, AWS event stream via ``eventstream``)
into payloads, ``merger`` builds :class:`~toolwire.streaming.state.ToolCallState`
records and ``completion`` decides how each call ends; ``merge`` runs a whole
recorded stream through all of them.
"""
