"""A tool's description as one request offers it: it names only tools that request offers.

Descriptions say when to use another tool instead ("to find text in files use search_files
instead"); with a small ``maxTools`` that tool may not be offered, and a description naming
it would send the model to a tool it cannot call. So a sentence that names a tool the
request does not offer is left out; the rest of the description is kept as written. The
system prompt follows the same rule (:mod:`toolwire.agent.system_prompt`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

__all__ = ["offered_description"]

#: Where a description splits into sentences: after a full stop, before a capital letter.
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z])")


@functools.lru_cache(maxsize=64)
def _names_pattern(known: frozenset[str]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(map(re.escape, sorted(known))) + r")\b")


def offered_description(description: str, own: str, offered: Collection[str], known: frozenset[str]) -> str:
    """``description`` without the sentences that name a tool of ``known`` (every tool name a
    description may use) that is not in ``offered``; ``own`` (the tool's own name) always counts
    as offered."""
    missing = known - set(offered) - {own}
    if not missing:
        return description
    pattern = _names_pattern(known)
    kept = [sentence for sentence in _SENTENCE_END.split(description)
            if not any(name in missing for name in pattern.findall(sentence))]
    return " ".join(kept)
