"""Whether the model is sent images now: the ``imageInput`` setting, and what the endpoint said.

With ``imageInput`` ``"auto"`` (the default) or true, a prompt's images and a tool's images go
to the model as image parts; false, or once the endpoint and model refused a request for its
images (:mod:`toolwire.llm.image_input`), a prompt with images is refused before anything is
sent, a tool's images are described in text, and image parts already in the history are sent
as a note.
"""

from __future__ import annotations

from typing import Any, Literal

from toolwire.llm import endpoints


def image_input(session: Any) -> Literal["auto"] | bool:
    """The ``imageInput`` setting as it applies to ``session`` now: False once its endpoint and
    model refused images, else the setting."""
    if not endpoints.accepts_images(endpoints.endpoint_key(session.model)):
        return False
    return session.settings.image_input


def image_refusal(session: Any) -> str | None:
    """Why a prompt with images is refused before sending (a sentence for the user), or None
    when images go to the model."""
    if image_input(session) is not False:
        return None
    if session.settings.image_input is False:
        return "the prompt has an image and the imageInput setting is false: images are not sent to the model"
    model = getattr(session.model, "model", None) or session.model.model_id
    return f"the model {model} does not accept images (it refused them earlier in this process); send the prompt without them"
