"""Provider normalizers: one module per wire format, each turning payloads into canonical events.

Every normalizer implements :class:`toolwire.streaming.formats.base.Normalizer`.
:func:`toolwire.streaming.formats.registry.make_normalizer` returns one by format name.
"""
