"""The provider layer: models that stream raw response payloads.

``base`` defines the request and the model protocol; ``replay`` is the embedded
offline model; ``openai_model`` (the only module that imports ``openai``) speaks
to any OpenAI-compatible endpoint. :func:`toolwire.llm.factory.make_model` picks one
from a model spec string.
"""
