"""The models a person may switch to (``toolwire/models/list``, ACP's model option).

The endpoint's own list (``GET /models``, :func:`toolwire.llm.openai_model.endpoint_models`) when it
answers, else the configured models (the active spec, the ``model`` setting); always the embedded
offline demo, ``replay``, last. Each endpoint's list is fetched once per process (:class:`ModelChoices`).
"""

from __future__ import annotations

from typing import Any

from toolwire.settings import Settings

#: The embedded demo's entry.
DEMO = {"spec": "replay", "name": "Offline demo", "source": "builtin"}
#: The spec prefixes an endpoint's model ids are offered with (``openai-responses:`` when the active spec is one).
ENDPOINT_KINDS = ("openai", "openai-responses")


class ModelChoices:
    """The model lists of the endpoints asked so far (the successful answers, for the process's life)."""

    def __init__(self) -> None:
        self._lists: dict[tuple[str, str | None], list[str]] = {}

    async def listing(self, active: str, settings: Settings) -> dict[str, Any]:
        """``{"active", "models": [{"spec", "name", "source"}]}`` for the active spec under ``settings``."""
        return self.known(active, settings, await self._endpoint_ids(settings))

    def known(self, active: str, settings: Settings, ids: list[str] | None = None) -> dict[str, Any]:
        """As :meth:`listing`, without asking the endpoint: its list if it was fetched (or ``ids``), else the configured."""
        if ids is None:
            ids = self._lists.get(self._key(settings))
        kind = active.partition(":")[0]
        prefix = kind if kind in ENDPOINT_KINDS else "openai"
        models: list[dict[str, Any]] = []
        if ids:
            models = [{"spec": f"{prefix}:{i}", "name": i, "source": "endpoint"} for i in ids]
        listed = {m["spec"] for m in models}
        for spec in (active, settings.model):
            if spec and spec not in listed and spec != "replay":
                kind, _, name = spec.partition(":")
                models.append({"spec": spec, "name": name if kind in ENDPOINT_KINDS and name else spec,
                               "source": "configured"})
                listed.add(spec)
        models.append(dict(DEMO))
        return {"active": active, "models": models}

    @staticmethod
    def _key(settings: Settings) -> tuple[str, str | None]:
        from toolwire.llm.openai_model import api_key_from_env, endpoint_name  # the SDK: imported when first used

        return endpoint_name(settings.base_url), settings.api_key or api_key_from_env()

    async def _endpoint_ids(self, settings: Settings) -> list[str] | None:
        from toolwire.llm.openai_model import endpoint_models, is_openai_endpoint

        cache_key = self._key(settings)
        url, key = cache_key
        if key is None and is_openai_endpoint(url):
            return None  # nothing is asked of OpenAI without a key
        if cache_key in self._lists:
            return self._lists[cache_key]
        ids = await endpoint_models(settings.base_url, settings.api_key, settings.connect_timeout)
        if ids:
            self._lists[cache_key] = ids
        return ids
