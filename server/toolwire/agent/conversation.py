"""The conversation sent to the model, and its integrity rules.

Messages are kept in OpenAI Chat Completions shape. Providers answer HTTP 400 to
a history where an assistant tool call has no tool result, a result has no call,
or arguments are not a JSON object (``""`` included). :meth:`Conversation.repair`
is run before every model request; it adds error results for missing ones and
never drops half of a call/result pair.

A Chat Completions ``tool`` message takes text only, so the images a tool returned
(an MCP tool's, :attr:`toolwire.tools.base.ToolResult.images`) go in one ``user`` message
right after the tool messages of their assistant message (:meth:`Conversation.add_images`):
``Image from NAME (CALL_ID):`` then the image as an ``image_url`` data URL, for each.

Every text stored is valid Unicode: a lone surrogate (what Python makes of a
file name or a JSON ``\\udcXX`` escape that is not UTF-8) cannot be encoded for
any provider, and once in the history it would make every later request of
the session fail. :func:`valid_text` replaces each one with U+FFFD when a
message is added, and :meth:`Conversation.repair` does the same for anything
that got in otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from toolwire.tools.base import ImagePart
from toolwire.workspace.names import valid_text

#: Result text for a call that never got one (turn cancelled, server restarted).
MISSING_RESULT = "Error: this tool call has no result (it was interrupted before it finished)."


#: Start of the note that replaces an old tool result dropped to fit the context window.
DROPPED_PREFIX = "[older tool result dropped to fit the context window;"

#: Start of the note that replaces the images of an older tool-images message dropped to fit.
IMAGES_DROPPED = "[older images dropped to fit the context window:"

#: Characters an image part counts for in the history's size (about 1600 tokens: Anthropic
#: counts width x height / 750 tokens, at most about 1600 for an image it does not scale
#: down; OpenAI at most 1105 for a high-detail image at 2048 px), whatever its bytes.
IMAGE_CHARS = 6400

#: The text before each image of a tool-images message.
_IMAGE_INTRO = re.compile(r"Image from \S+ \(\S+\):")


def is_tool_images(message: dict[str, Any]) -> bool:
    """Whether ``message`` is the ``user`` message :meth:`Conversation.add_images` adds (not the user's)."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list) or not content:
        return False
    return all(isinstance(part, dict) and (part.get("type") == "image_url" or (
        part.get("type") == "text" and (_IMAGE_INTRO.fullmatch(text := str(part.get("text", "")))
                                        or text.startswith(IMAGES_DROPPED)))) for part in content)


def message_chars(message: dict[str, Any]) -> int:
    """Characters ``message`` counts for (its JSON as sent), an image part :data:`IMAGE_CHARS`
    whatever the size of its data URL."""
    content = message.get("content")
    if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
        return len(json.dumps(message, ensure_ascii=False))
    images = sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    rest = [p for p in content if not (isinstance(p, dict) and p.get("type") == "image_url")]
    return len(json.dumps({**message, "content": rest}, ensure_ascii=False)) + images * IMAGE_CHARS


def _scrub(value: Any) -> tuple[Any, bool]:
    """``value`` (JSON-like) with :func:`valid_text` applied to every string; True when any changed."""
    if isinstance(value, str):
        fixed = valid_text(value)
        return fixed, fixed is not value
    if isinstance(value, list):
        pairs = [_scrub(v) for v in value]
        return [p[0] for p in pairs], any(p[1] for p in pairs)
    if isinstance(value, dict):
        items = {k: _scrub(v) for k, v in value.items()}
        return {k: v[0] for k, v in items.items()}, any(v[1] for v in items.values())
    return value, False


def _is_object(text: str) -> bool:
    """True when ``text`` is a JSON object (what providers require of call arguments)."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return False


class Conversation:
    """The message history of one session.

    Attributes:
        messages: Chat Completions messages, oldest first.
        turn: The turn that messages added now belong to (:meth:`start_turn`), for
            :meth:`drop_turn`; None before the first turn.

    Which turn added each message is kept beside the messages (never in them:
    they are sent as they are), through :meth:`repair` too.
    """

    def __init__(self, system: str | None = None) -> None:
        self.messages: list[dict[str, Any]] = []
        self.turn: str | None = None
        self._owners: list[str | None] = []  # per message: the turn that added it
        self._typed: dict[str, str] = {}  # per turn: the user's own text of the user message it added
        self.system_base = system or ""
        self.last_dropped: list[str] = []  # call ids whose results the last fit() shrank
        if system:
            self._append({"role": "system", "content": system})

    def to_record(self) -> dict[str, Any]:
        """Everything needed to rebuild this history in another process (:meth:`from_record`):
        ``{"messages", "owners", "typed", "systemBase", "turn"}``, JSON-ready."""
        owners = self._owners if len(self._owners) == len(self.messages) else [None] * len(self.messages)
        return {"messages": self.messages, "owners": list(owners), "typed": dict(self._typed),
                "systemBase": self.system_base, "turn": self.turn}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "Conversation":
        """The history :meth:`to_record` saved, repaired if it is not valid.

        Raises:
            ValueError: ``record`` does not have the shape :meth:`to_record` gives.
        """
        messages, owners, typed = record.get("messages"), record.get("owners"), record.get("typed")
        if not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)
                and isinstance(owners, list) and len(owners) == len(messages) and isinstance(typed, dict)):
            raise ValueError("not a saved conversation")
        conversation = cls()
        conversation.messages = list(messages)
        conversation._owners = [o if isinstance(o, str) else None for o in owners]
        conversation._typed = {str(k): str(v) for k, v in typed.items()}
        conversation.system_base = str(record.get("systemBase") or "")
        turn = record.get("turn")
        conversation.turn = turn if isinstance(turn, str) else None
        conversation.repair()
        return conversation

    def set_system_extra(self, extra: str) -> None:
        """The system message becomes the base prompt (the one the conversation started
        with), then a blank line and ``extra`` (the project rules, :mod:`toolwire.agent.project_rules`);
        ``""`` leaves the base alone. Called when a session opens and when a turn starts only,
        so every request of a turn carries the same system prompt."""
        text = valid_text(f"{self.system_base}\n\n{extra}" if self.system_base and extra else self.system_base or extra)
        if self.messages and self.messages[0].get("role") == "system":
            if self.messages[0].get("content") != text:
                self.messages[0] = {**self.messages[0], "content": text}
        elif text:
            if len(self._owners) != len(self.messages):
                self._owners = [None] * len(self.messages)
            self.messages.insert(0, {"role": "system", "content": text})
            self._owners.insert(0, None)

    def _append(self, message: dict[str, Any]) -> None:
        if len(self._owners) != len(self.messages):  # messages replaced from outside: owners unknown
            self._owners = [None] * len(self.messages)
        self.messages.append(message)
        self._owners.append(self.turn)

    def start_turn(self, turn_id: str) -> None:
        """Messages added from now on belong to turn ``turn_id``."""
        self.turn = turn_id

    def drop_turn(self, turn_id: str) -> int:
        """Remove every message turn ``turn_id`` added (its user message, the assistant's
        messages, tool calls and their results); the rest stays as it is.

        A turn's calls and results are all its own, so no pair is split; the history
        is repaired anyway. Returns how many messages were removed.
        """
        if len(self._owners) != len(self.messages):
            return 0
        keep = [i for i, owner in enumerate(self._owners) if owner != turn_id]
        removed = len(self.messages) - len(keep)
        self.messages = [self.messages[i] for i in keep]
        self._owners = [self._owners[i] for i in keep]
        if removed:
            self.repair()
        return removed

    def holds_turn(self, turn_id: str) -> bool:
        """Whether a message of turn ``turn_id`` is in the history (a rewound turn's are not)."""
        return turn_id in self._owners

    def add_user(self, text: str, typed: str | None = None, images: Sequence[ImagePart] = ()) -> None:
        """Append a user message; ``typed``: the user's own text in it, when ``text`` carries
        more for the model (the notes after it; the overview put before it later), kept
        beside the message for :meth:`shown` (never sent). With ``images`` (the prompt's) the
        content is a list: the text part, then each image as an ``image_url`` data URL."""
        content: str | list[dict[str, Any]] = valid_text(text)
        if images:
            content = [{"type": "text", "text": content}] + [
                {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
                for image in images]
        self._append({"role": "user", "content": content})
        if typed is not None and self.turn is not None:
            self._typed[self.turn] = valid_text(typed)

    def shown(self) -> list[dict[str, Any]]:
        """The messages for a front-end to show (a snapshot, a replayed history): as sent, and
        each user message whose own text is known with it as ``userText`` (without the
        workspace overview and the notes the session added for the model); the message that
        shows the model the images of tool calls (:meth:`add_images`) with ``toolImages: true``
        instead (it is not a user's message, nor a turn's start)."""
        owners = self._owners if len(self._owners) == len(self.messages) else [None] * len(self.messages)
        out = []
        for message, owner in zip(self.messages, owners, strict=True):
            if is_tool_images(message):
                message = {**message, "toolImages": True}
            elif message.get("role") == "user" and owner in self._typed:
                message = {**message, "userText": self._typed[owner]}
            elif "output_items" in message:  # the provider's items are the model's, not a front-end's
                message = {k: v for k, v in message.items() if k != "output_items"}
            out.append(message)
        return out

    def add_assistant(self, text: str, calls: list[tuple[str, str, str]],
                      reasoning: tuple[str, str] | None = None,
                      items: Sequence[dict[str, Any]] = ()) -> None:
        """Append the assistant's response.

        Args:
            text: Assistant text (may be empty).
            calls: ``(call id, tool name, argument text)`` per call, in call order;
                argument text that is empty becomes ``"{}"``.
            reasoning: ``(field, text)``: reasoning the provider streamed in ``field``
                and requires back. Thinking models on Chat Completions (DeepSeek's
                reasoner, Kimi's thinking models) answer HTTP 400 when an assistant
                message holding tool calls lacks its ``reasoning_content``, and
                DeepSeek refuses it on a message without tool calls; so it is kept
                only on a message with calls (DeepSeek API docs, "Thinking Mode",
                tool calls; Moonshot docs, kimi-k2-thinking multi-step tool use).
            items: The Responses API output items as they came (reasoning with its
                encrypted content, provider-side tool items, messages, calls), kept as
                ``output_items`` so the next Responses request sends them back
                (:mod:`toolwire.llm.responses_input`); never sent to Chat Completions.

        An empty response (no text, no calls) adds nothing: OpenAI-compatible APIs
        refuse an assistant message with neither content nor tool calls.
        """
        if not text and not calls:
            return
        text = valid_text(text)
        calls = [(valid_text(cid), valid_text(name), valid_text(args)) for cid, name, args in calls]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if items:
            message["output_items"] = list(items)
        if calls and reasoning is not None and reasoning[1]:
            message[reasoning[0]] = reasoning[1]
        if calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args if args.strip() else "{}"}}
                for cid, name, args in calls
            ]
        self._append(message)

    def add_tool_result(self, call_id: str, content: str) -> None:
        """Append the result of one call."""
        self._append({"role": "tool", "tool_call_id": valid_text(call_id), "content": valid_text(content)})

    def add_images(self, shown: Sequence[tuple[str, str, Sequence[ImagePart]]]) -> None:
        """Append the ``user`` message that shows the model the images of calls, after the
        tool messages of their assistant message.

        Args:
            shown: ``(tool name, call id, images)`` per call, in call order; nothing is added
                when there is no image.
        """
        content: list[dict[str, Any]] = []
        for name, call_id, images in shown:
            for image in images:
                content.append({"type": "text", "text": f"Image from {valid_text(name)} ({valid_text(call_id)}):"})
                content.append({"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}})
        if content:
            self._append({"role": "user", "content": content})

    def size(self) -> int:
        """Characters of the history as sent (a cheap proxy for tokens: about 4 per token; an
        image :data:`IMAGE_CHARS`)."""
        return sum(message_chars(m) for m in self.messages)

    def fit(self, max_chars: int) -> int:
        """Shrink the oldest tool results until the history fits ``max_chars``.

        A result is replaced by a short note giving its original size; the tool
        message itself stays, so a call is never separated from its result. The images
        of older calls (:meth:`add_images`) give way the same way, their message left with
        a note naming them. The results of the latest assistant message are never shrunk.

        Returns:
            How many results were shrunk (their call ids: :attr:`last_dropped`).
        """
        self.last_dropped = []
        total = self.size()
        if total <= max_chars:
            return 0
        last_assistant = max((i for i, m in enumerate(self.messages) if m.get("role") == "assistant"), default=-1)
        for position, message in enumerate(self.messages):
            if total <= max_chars or position >= last_assistant:
                break
            total -= self._drop(message)
        return len(self.last_dropped)

    def compact(self) -> int:
        """Replace every tool result (and the images of calls) older than the last turn by the
        note :meth:`fit` leaves, whatever the history's size; the last turn's messages stay as
        they are. The call ids replaced are :attr:`last_dropped`.

        Returns:
            The characters freed (as :meth:`size` counts them).
        """
        self.last_dropped = []
        return sum(self._drop(message) for message in self.messages[:self._last_turn_start()])

    def _last_turn_start(self) -> int:
        """Where the last turn's messages begin: its first message, or (its turn unknown: the
        messages came from outside, the turn was rewound) the last user message's position."""
        if self.turn is not None and len(self._owners) == len(self.messages) and self.turn in self._owners:
            return self._owners.index(self.turn)
        users = [i for i, m in enumerate(self.messages) if m.get("role") == "user" and not is_tool_images(m)]
        return users[-1] if users else 0

    def _drop(self, message: dict[str, Any]) -> int:
        """Replace a tool result by its note (its call id joins :attr:`last_dropped`), or the
        images of a tool-images message by a note naming them; the characters freed, 0 for any
        other message or one already replaced."""
        content = message.get("content")
        if is_tool_images(message):
            names = " ".join(p["text"].removeprefix("Image from ").rstrip(":") for p in content
                             if p.get("type") == "text")
            if not any(p.get("type") == "image_url" for p in content):
                return 0
            before = message_chars(message)
            message["content"] = [{"type": "text", "text": f"{IMAGES_DROPPED} {names}]"}]
            return before - message_chars(message)
        if message.get("role") != "tool" or not isinstance(content, str) or content.startswith(DROPPED_PREFIX):
            return 0
        note = f"{DROPPED_PREFIX} it was {len(content)} characters]"
        message["content"] = note
        self.last_dropped.append(message.get("tool_call_id"))
        return len(json.dumps(content, ensure_ascii=False)) - len(json.dumps(note))

    def problems(self) -> list[str]:
        """Every integrity problem, as sentences; empty when the history is valid."""
        out: list[str] = []
        pending: list[str] = []
        for position, message in enumerate(self.messages):
            role = message.get("role")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if not pending or pending[0] != call_id:
                    out.append(f"message {position}: result for {call_id!r} is out of order or has no call")
                else:
                    pending.pop(0)
                continue
            if pending:
                out.append(f"message {position}: calls {pending} have no result")
                pending = []
            for call in message.get("tool_calls") or []:
                if not _is_object(call["function"]["arguments"]):
                    out.append(f"message {position}: call {call['id']!r} has arguments that are not a JSON object")
                pending.append(call["id"])
        if pending:
            out.append(f"end: calls {pending} have no result")
        return out

    def repair(self) -> list[str]:
        """Make the history valid without dropping half of any pair.

        Missing results get :data:`MISSING_RESULT`; results are put in call order;
        results with no call are removed (they are not half of a pair); invalid
        argument text is replaced by ``"{}"`` only in what is sent (the call keeps
        its id and name).

        Returns:
            What was repaired (empty when nothing was wrong).
        """
        scrubbed, changed = _scrub(self.messages)
        if changed:
            self.messages = scrubbed
        problems = self.problems() + (["text that is not valid Unicode was replaced with U+FFFD"] if changed else [])
        if not problems:
            return []
        repaired: list[dict[str, Any]] = []
        owners: list[str | None] = []
        index = 0
        messages = self.messages
        known = self._owners if len(self._owners) == len(messages) else [None] * len(messages)
        while index < len(messages):
            message, owner = messages[index], known[index]
            index += 1
            if message.get("role") == "tool":
                continue  # orphan: its call was not directly before it
            calls = message.get("tool_calls") or []
            for call in calls:
                if not _is_object(call["function"]["arguments"]):
                    call["function"]["arguments"] = "{}"
            repaired.append(message)
            owners.append(owner)
            if not calls:
                continue
            results: dict[str, dict[str, Any]] = {}
            while index < len(messages) and messages[index].get("role") == "tool":
                result = messages[index]
                results.setdefault(result.get("tool_call_id"), result)
                index += 1
            for call in calls:
                repaired.append(results.get(call["id"]) or {"role": "tool", "tool_call_id": call["id"], "content": MISSING_RESULT})
                owners.append(owner)  # a call's result belongs to the turn of its call
        self.messages = repaired
        self._owners = owners
        return problems
