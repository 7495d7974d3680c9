"""Any OpenAI-compatible endpoint through the ``openai`` SDK (the only module importing it).

Streams Chat Completions with tools (``stream=True``, and the optional fields of
:mod:`toolwire.llm.request_params`: ``temperature``, ``stream_options={"include_usage":
true}``). An HTTP 400 naming an optional field is sent again once without it, and
the endpoint is remembered as refusing it (:mod:`toolwire.llm.endpoints`); a
context-length 400 becomes :class:`~toolwire.llm.base.ContextLengthError` with the
sizes it states (:mod:`toolwire.llm.context_errors`). The SDK makes the request (auth,
base URL, HTTP errors); the body is read as raw SSE and decoded by Toolwire's own
framing, so each payload reaches the normalizer exactly as the server sent it,
and ``[DONE]`` tells a complete stream from a dropped one. Closing the generator
closes the HTTP response.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import httpx2 as httpx  # the openai SDK's HTTP library
import openai

from toolwire.llm import endpoints
from toolwire.llm.base import ContextLengthError, ModelError, ModelRequest
from toolwire.llm.context_errors import context_sizes
from toolwire.llm.error_bodies import error_terms
from toolwire.llm.image_input import ImagesRefused, refusal_message, refuses_images
from toolwire.llm.request_params import OPTIONAL_PARAMS, optional_fields, refused_param
from toolwire.redaction import shared as shared_redactor
from toolwire.streaming.framing import Frame, SSEDecoder, decode_data

log = logging.getLogger(__name__)

#: HTTP statuses whose error may refuse an optional field (422: FastAPI-based servers).
_REFUSING = (400, 422)

#: A 400 refusing the ``tools`` field: Ollama (``… does not support tools``), vLLM without
#: ``--enable-auto-tool-choice`` (``"auto" tool choice requires …``), strict gateways.
_REFUSES_TOOLS = re.compile(r"does not support tools|tool choice requires|argument supplied: tools\b"
                            r"|\btools? (?:is|are) not supported|tool calling is not supported", re.I)

#: Environment variables read for the API key, in order.
API_KEY_ENV = ("TOOLWIRE_API_KEY", "OPENAI_API_KEY")


#: The ``code`` of a :class:`ModelError` for a missing or refused key (the turn's ``errorCode``).
NO_API_KEY = "no_api_key"


def is_openai_endpoint(url: str) -> bool:
    """Whether ``url`` is OpenAI's own API (which never answers without a key)."""
    return urlsplit(url).hostname == "api.openai.com"


def no_key_headers(key: str | None) -> dict[str, Any]:
    """The SDK request options leaving the ``Authorization`` header out when there is no key (else none)."""
    return {} if key else {"extra_headers": {"Authorization": openai.Omit()}}


def api_key_from_env() -> str | None:
    """The first of :data:`API_KEY_ENV` that is set and non-empty, else None."""
    for name in API_KEY_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return None


def split_query(base_url: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """``baseUrl`` without its query, and the query's parameters (e.g. Azure's
    ``?api-version=…&api-key=…``), which are then sent with every request.

    The SDK joins the request path to the base URL's raw path, query included
    (``/v1?k=v`` and ``chat/completions`` were posted to ``/v1/?k=vchat/completions``).
    """
    if not base_url or "?" not in base_url:
        return base_url, []
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(query="", fragment="")), parse_qsl(parts.query, keep_blank_values=True)


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or a numeric ``retry-after`` header, else None."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue  # an HTTP date: the turn's own backoff applies
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


class _RefusedInStream(Exception):
    """An HTTP 200 stream opened with an error refusing an optional field (now remembered)."""


class _NotAStream(Exception):
    """The endpoint answered, but not with an event stream."""


def _context_error_event(frame: Frame, url: str) -> ContextLengthError | None:
    """A :class:`ContextLengthError` for an error event that says the request is over the
    context window (servers that start the stream before checking: llama.cpp before late
    2025 answers HTTP 200 then ``error: {…}`` or ``data: {"error": {…}}``; SGLang), else None."""
    if not _is_error(frame):
        return None
    if isinstance(frame.payload, dict):
        error = frame.payload.get("error") or frame.payload
    else:  # ``event: error`` with plain-text data
        error = frame.payload if isinstance(frame.payload, str) else frame.raw.strip()
    text = error_terms(error).text
    if not text:
        return None
    sizes = context_sizes(error, text)
    if sizes is None:
        return None
    return ContextLengthError(f"the model endpoint {url} answered: {text}", limit=sizes[0], requested=sizes[1],
                              status=None)


def _has_content(payload: Any) -> bool:
    """True when a Chat Completions chunk carries something of an answer: a delta with
    more than an empty ``role``/``content`` opening (which servers send before they
    check the request), or a ``finish_reason``."""
    if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
        return False
    for choice in payload["choices"]:
        if not isinstance(choice, dict):
            return True  # not a choice the opening has: the merger judges it
        delta = choice.get("delta")
        if choice.get("finish_reason") or (isinstance(delta, dict) and any(
                value not in (None, "", []) for key, value in delta.items() if key != "role")):
            return True
        if delta is not None and not isinstance(delta, dict):
            return True
    return False


def _is_error(frame: Frame) -> bool:
    """True for a provider error event: it ends the stream with its own message."""
    return frame.event == "error" or (isinstance(frame.payload, dict) and bool(frame.payload.get("error")))


def _has_finish(payload: Any) -> bool:
    """True when a Chat Completions chunk carries a ``finish_reason``."""
    if not isinstance(payload, dict):
        return False
    choices = payload.get("choices")
    return isinstance(choices, list) and any(isinstance(c, dict) and c.get("finish_reason") for c in choices)


def _error_text(exc: "openai.APIStatusError") -> tuple[Any, str]:
    """The error object of a refused request (``body["error"]``: a dict, or Ollama's
    string) and its texts wherever the body holds them (``message``, FastAPI's
    ``detail``, a gateway's wrapped provider body: :mod:`toolwire.llm.error_bodies`),
    else the SDK's message (for a streamed request only ``Error code: N``)."""
    return exc.body, error_terms(exc.body, exc.message).text


def _shown(exc: "openai.APIStatusError") -> str:
    """The SDK's message, with the body's texts when the SDK left them out (a streamed
    request's error is only ``Error code: N``)."""
    missing = [part for part in error_terms(exc.body).text.split(" | ") if part and part not in exc.message]
    return " - ".join([exc.message, *missing])


def _translate(exc: Exception, url: str, read_timeout: float) -> ModelError:
    """Map SDK errors to :class:`ModelError` (429 and 5xx and connection failures retryable).

    Every message names the endpoint, and says which setting or variable to
    look at where one applies (a 401 names the API key variables). A 400 over
    the context window is a :class:`ContextLengthError`. Messages are redacted
    (:mod:`toolwire.redaction`): httpx and the SDK quote the URL, user info and
    key-like query values included, and an endpoint may echo the key.
    """
    error = _translate_raw(exc, url, read_timeout)
    error.args = (shared_redactor().redact(str(error)),)
    return error


def _translate_raw(exc: Exception, url: str, read_timeout: float) -> ModelError:
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in _REFUSING or status == 413 or status >= 500:
            error, text = _error_text(exc)
            sizes = (None, None) if status == 413 else context_sizes(error, text)
            if sizes is not None:
                return ContextLengthError(f"the model endpoint {url} answered HTTP {status}: {text}",
                                          limit=sizes[0], requested=sizes[1], status=status)
        hint = ""
        if status == 401:
            return ModelError(f"the model endpoint {url} answered HTTP 401: {_shown(exc)} (the API key is missing or "
                              "was refused)", status=status, code=NO_API_KEY)
        if status == 403:
            hint = " (the API key was refused)"
        elif status in _REFUSING and _REFUSES_TOOLS.search(_error_text(exc)[1]):
            hint = (' (the endpoint refuses tool definitions: set the toolCalling setting to "text", or enable tool '
                    "calling on the server, e.g. vLLM --enable-auto-tool-choice --tool-call-parser NAME)")
        return ModelError(f"the model endpoint {url} answered HTTP {status}: {_shown(exc)}{hint}",
                          retryable=status == 429 or status >= 500, status=status,
                          retry_after=_retry_after(getattr(exc.response, "headers", None)))
    if isinstance(exc, (openai.APITimeoutError, httpx.TimeoutException)):
        return ModelError(f"no data from the model endpoint {url} for {read_timeout:g} s "
                          "(the readTimeout setting)", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f"{type(cause).__name__}: {cause}" if cause is not None and str(cause) else str(exc)
        return ModelError(f"cannot reach the model endpoint {url}: {why}", retryable=True)
    return ModelError(f"the model stream from {url} failed: {type(exc).__name__}: {exc}", retryable=True)


class OpenAIModel:
    """Chat Completions streaming against ``base_url``.

    Args:
        model: The model id sent to the endpoint (e.g. ``gpt-4o-mini``).
        base_url: Endpoint base URL (``https://host/v1``); None for the SDK default
            (``OPENAI_BASE_URL`` or OpenAI's).
        api_key: The key; None reads :data:`API_KEY_ENV`. With none, no ``Authorization`` is sent
            (local servers need none), and a request to OpenAI's own endpoint fails at once with
            ``code="no_api_key"`` (so does an HTTP 401 anywhere).
        connect_timeout: Seconds to connect (the ``connectTimeout`` setting).
        read_timeout: Seconds without data before the request fails, before or
            during the response (the ``readTimeout`` setting).
        max_retries: SDK-level retries. 0 by default: the turn
            (:mod:`toolwire.agent.turn`) is the one retry layer, with backoff and
            jitter and the endpoint's ``Retry-After``; retrying in both layers
            would multiply the attempts (3 x 4 = 12 requests for one failure).
    """

    format = "openai-chat"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 connect_timeout: float = 10.0, read_timeout: float = 120.0, max_retries: int = 0) -> None:
        self.model = model
        self.model_id = f"openai:{model}"
        self.read_timeout = read_timeout
        redactor = shared_redactor()  # whoever builds the model, its secrets are known
        redactor.add(api_key)
        redactor.add_url(base_url)
        base_url, query = split_query(base_url)
        key = api_key or api_key_from_env()
        self.has_key = key is not None
        self._no_key = no_key_headers(key)
        self._client = openai.AsyncOpenAI(
            api_key=key or "unused",  # the SDK insists on one; with none no Authorization is sent (_no_key)
            base_url=base_url,
            default_query=dict(query) or None,
            timeout=openai.Timeout(read_timeout, connect=connect_timeout),
            max_retries=max_retries,
        )
        #: The endpoint as messages name it: user info and key-like query values masked.
        self.url = redactor.redact(str(self._client.base_url).rstrip("/") + (f"?{urlencode(query)}" if query else ""))
        self.endpoint_key = f"{self.url} {model}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """Yield the response's SSE events as ``openai-chat`` frames, payloads exactly as sent.

        An error event that opens an HTTP 200 stream (before any part of an answer) and
        refuses an optional field is taken as its HTTP 400 would be (gateways that start
        the stream before the provider answers): the request is sent again without it.
        See :meth:`_stream_once` for the rest.
        """
        if not self.has_key and is_openai_endpoint(self.url):
            raise ModelError(f"no API key is set for the model endpoint {self.url}", code=NO_API_KEY)
        while True:  # ends: each retry leaves out one more field, of a finite few
            try:
                async for frame in self._stream_once(request):
                    yield frame
                return
            except _RefusedInStream:
                continue

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """One request: yield the response's SSE events as ``openai-chat`` frames.

        The body is read as bytes and parsed by our own SSE decoder
        (:class:`~toolwire.streaming.framing.SSEDecoder`), so the ``[DONE]``
        sentinel is seen: a body that ends with neither ``[DONE]`` nor any
        ``finish_reason`` was cut off (the connection closed early).

        Raises:
            ModelError: HTTP or connection failure before the response, a read
                failure or stall during it, or a body cut off as above.
        """
        received = done = finished = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                response, body = await self._open(stack, request)
                kind = response.headers.get("content-type", "")
                if "text/event-stream" not in kind:
                    body = (await response.read())[:200].decode("utf-8", "replace")
                    raise _NotAStream(f"the endpoint answered {kind or 'without a content type'}, not an event "
                                      f"stream (does it support stream=true?): {body!r}")
                decoder = SSEDecoder()
                answered = False  # a choice arrived: an error event is then the answer's end, not a refusal
                async for data in response.iter_bytes():
                    received = True
                    for event, text in decoder.feed(data):
                        frame = decode_data(event, text)
                        if not answered and (refused := _context_error_event(frame, self.url)) is not None:
                            raise refused
                        if not answered and self._refused_in(frame, body):
                            raise _RefusedInStream
                        answered = answered or self._has_content(frame.payload)
                        done = done or frame.done or _is_error(frame)
                        finished = finished or self._has_finish(frame.payload)
                        yield frame
                for event, text in decoder.close():
                    frame = decode_data(event, text)
                    if not answered and (refused := _context_error_event(frame, self.url)) is not None:
                        raise refused
                    if not answered and self._refused_in(frame, body):
                        raise _RefusedInStream
                    done = done or frame.done or _is_error(frame)
                    finished = finished or self._has_finish(frame.payload)
                    yield frame
        except _NotAStream as exc:
            raise ModelError(shared_redactor().redact(str(exc))) from None  # not retried: the same request gets the same answer
        except (ContextLengthError, _RefusedInStream, ImagesRefused):
            raise
        except Exception as exc:  # the SDK, httpx and the socket can all fail
            error = _translate(exc, self.url, self.read_timeout)
            if received and not isinstance(exc, (openai.APIStatusError, openai.APITimeoutError, httpx.TimeoutException)):
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                error = ModelError(shared_redactor().redact(f"the model stream from {self.url} broke mid-response: {why}"),
                                   retryable=True)
            raise error from exc
        if not (done or finished):
            raise ModelError(f"the stream from {self.url} ended before the response was complete "
                             f"({self._cut_words}: the connection was cut)", retryable=True)

    #: The optional fields of this wire (:mod:`toolwire.llm.request_params`).
    _params = OPTIONAL_PARAMS
    #: What a cut stream lacked, for its error.
    _cut_words = "no [DONE], no finish_reason"
    _has_content = staticmethod(_has_content)
    _has_finish = staticmethod(_has_finish)

    def _create(self, body: dict[str, Any]) -> Any:
        """The SDK's streaming-response context for ``body``."""
        return self._client.chat.completions.with_streaming_response.create(**body, **self._no_key)

    def _body(self, request: ModelRequest, left_out: set[str]) -> dict[str, Any]:
        """The request body: model, messages, the optional fields not left out, tools.
        The Responses output items kept in the history are not Chat Completions fields."""
        messages = request.messages
        if any("output_items" in m for m in messages):
            messages = [{k: v for k, v in m.items() if k != "output_items"} for m in messages]
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                **optional_fields(request, left_out, self._params)}
        if request.tools:
            body["tools"] = request.tools
        return body

    async def _open(self, stack: contextlib.AsyncExitStack, request: ModelRequest) -> tuple[Any, dict[str, Any]]:
        """Send the request and return the streaming response (entered on ``stack``) and the body sent.

        An HTTP 400/422 whose error names an optional field that was sent (its
        ``param``, else its message) is sent again without that field, once per
        field; the endpoint and model are remembered as refusing it, logged the
        first time. Any other failure propagates (the SDK's exception).
        """
        left_out = set(endpoints.refused(self.endpoint_key))
        while True:
            body = self._body(request, left_out)
            try:
                return await stack.enter_async_context(self._create(body)), body
            except openai.APIStatusError as exc:
                if exc.status_code not in _REFUSING:
                    raise
                error, text = _error_text(exc)
                if context_sizes(error, text) is not None:
                    raise
                if refuses_images(exc.status_code, body, text):
                    if endpoints.remember_no_images(self.endpoint_key):
                        log.warning("the model endpoint %s refused the images for model %s (HTTP %s: %s); requests "
                                    "to it go without images from now on", self.url, self.model, exc.status_code,
                                    text[:200])
                    raise ImagesRefused(refusal_message(self.model), status=exc.status_code) from None
                row = refused_param(body, error_terms(exc.body).params, text, self._params)
                if row is None or row.name in left_out:
                    raise
                left_out.add(row.name)
                self._remember(row, f"HTTP {exc.status_code}: {text[:200]}")

    def _remember(self, row: Any, why: str) -> bool:
        """Remember that the endpoint and model refuse ``row``'s field; log it the first time."""
        if not endpoints.remember_refused(self.endpoint_key, row.name):
            return False
        log.warning("the model endpoint %s refused %s for model %s (%s); sending requests to it without %s from "
                    "now on (the %s setting: null leaves it out)", self.url, row.name, self.model, why, row.name,
                    row.setting)
        return True

    def _refused_in(self, frame: Frame, body: dict[str, Any]) -> bool:
        """True (and remembered) when ``frame`` is an error event refusing an optional field of ``body``."""
        if not _is_error(frame):
            return False
        payload = frame.payload if frame.payload is not None else frame.raw.strip()
        terms = error_terms(payload)
        row = refused_param(body, terms.params, terms.text, self._params)
        return row is not None and self._remember(row, f"an error event of an HTTP 200 stream: {terms.text[:200]}")

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


#: At most this many models are kept from one endpoint's ``GET /models`` (ids longer than :data:`MAX_MODEL_ID` skipped).
MAX_LISTED_MODELS = 500
MAX_MODEL_ID = 200
#: A model id offered: no white space, control, bidirectional or invisible character (a picker shows it as it is).
_MODEL_ID = re.compile(r"[^\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]+")


async def endpoint_models(base_url: str | None, api_key: str | None, timeout: float) -> list[str] | None:
    """The model ids of an OpenAI-compatible endpoint's ``GET /models``, sorted, through the SDK
    (for ``toolwire/models/list``): bounded by ``timeout`` (connect and read), never retried. None
    when the endpoint fails, times out, refuses the key or lists nothing, and for OpenAI's own
    endpoint without a key (nothing is sent)."""
    key = api_key or api_key_from_env()
    redactor = shared_redactor()
    redactor.add(api_key)
    redactor.add_url(base_url)
    url, query = split_query(base_url)
    client = openai.AsyncOpenAI(api_key=key or "unused", base_url=url, default_query=dict(query) or None,
                                timeout=openai.Timeout(timeout, connect=timeout), max_retries=0)
    try:
        if key is None and is_openai_endpoint(str(client.base_url)):
            return None
        with anyio.fail_after(timeout * 2):  # connect, then the answer: never longer than this
            page = await client.models.list(**no_key_headers(key))
        ids = [m.id for m in page.data if isinstance(getattr(m, "id", None), str) and 0 < len(m.id) <= MAX_MODEL_ID
               and _MODEL_ID.fullmatch(m.id) and redactor.redact(m.id) == m.id and not (key and key in m.id)]
    except Exception as exc:  # noqa: BLE001 - any failure means: no list from this endpoint
        log.info("GET /models of %s failed: %s", redactor.redact(str(client.base_url)),
                 redactor.redact(f"{type(exc).__name__}: {exc}"))
        return None
    finally:
        await client.close()
    return sorted(set(ids))[:MAX_LISTED_MODELS] or None


def endpoint_name(base_url: str | None) -> str:
    """The endpoint ``base_url`` names (None: the SDK's default), as the SDK resolves it, for a cache key."""
    url, query = split_query(base_url)
    return str(openai.AsyncOpenAI(api_key="unused", base_url=url).base_url).rstrip("/") + (
        f"?{urlencode(query)}" if query else "")
