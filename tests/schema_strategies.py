"""Hypothesis strategies from the JSON Schema subset ``protocol.schema.json`` uses.

hypothesis-jsonschema (the usual library) is unmaintained since 2024 and breaks on
the pinned Hypothesis (its object strategy calls a removed internal API), so the
fuzz test builds its strategies here: ``type`` (string, integer, number, boolean,
null, object, array), ``enum``, ``const``, ``anyOf``/``oneOf``, ``$ref`` into
``$defs``, ``properties``/``required``/``additionalProperties``, ``items``,
``minLength``/``maxLength``, ``minimum``/``maximum``/``exclusiveMinimum``. Anything else raises, so a new construct in the
schema is noticed instead of silently ignored.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

KNOWN = {"type", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "properties", "required",
         "additionalProperties", "items", "minLength", "maxLength", "minimum", "maximum",
         "exclusiveMinimum", "default", "description", "title", "discriminator"}

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**31, 2**31), st.text(max_size=20))
ANY_JSON = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)


def from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """A strategy of JSON values valid against ``schema`` (within the subset above)."""
    defs = schema.get("$defs", defs or {})
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"schema keywords not supported by the fuzz strategies: {sorted(unknown)}")
    if "$ref" in schema:
        return st.deferred(lambda: from_schema(defs[schema["$ref"].split("/")[-1]], defs))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, defs) for s in schema[key]])
    kind = schema.get("type")
    if kind is None:
        return ANY_JSON
    if kind == "string":
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=min(max(40, low), schema.get("maxLength", 40)))
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -2**31 - 1) + 1)
        return st.integers(min_value=low, max_value=schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", schema.get("exclusiveMinimum")), max_value=schema.get("maximum"),
                         exclude_min="exclusiveMinimum" in schema, allow_nan=False, allow_infinity=False, width=32)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema["items"], defs) if "items" in schema else ANY_JSON
        return st.lists(items, max_size=4)
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = st.fixed_dictionaries(
            {name: from_schema(spec, defs) for name, spec in props.items() if name in required},
            optional={name: from_schema(spec, defs) for name, spec in props.items() if name not in required})
        if props or schema.get("additionalProperties") is False:
            return fixed
        return st.dictionaries(st.text(max_size=10), ANY_JSON, max_size=4)
    raise ValueError(f"unsupported type {kind!r}")


def is_valid(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    """Whether ``value`` fits ``schema`` (the same subset; used to pick values that do not fit)."""
    if "$ref" in schema:
        return is_valid(value, defs[schema["$ref"].split("/")[-1]], defs)
    if "const" in schema:
        return value == schema["const"] and type(value) is type(schema["const"])
    if "enum" in schema:
        return any(value == e and type(value) is type(e) for e in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return any(is_valid(value, s, defs) for s in schema[key])
    kind = schema.get("type")
    checks = {
        None: lambda: True,
        "string": lambda: isinstance(value, str) and schema.get("minLength", 0) <= len(value) <= schema.get(
            "maxLength", len(value)),
        "integer": lambda: type(value) is int and in_bounds(value, schema),
        "number": lambda: type(value) in (int, float) and in_bounds(value, schema),
        "boolean": lambda: type(value) is bool,
        "null": lambda: value is None,
        "array": lambda: isinstance(value, list) and all(is_valid(v, schema.get("items", {}), defs) for v in value),
        "object": lambda: isinstance(value, dict) and set(schema.get("required", [])) <= set(value) and all(
            is_valid(v, schema["properties"][k], defs) for k, v in value.items() if k in schema.get("properties", {})),
    }
    return checks[kind]()


def in_bounds(value: float, schema: dict[str, Any]) -> bool:
    """``minimum``, ``maximum``, ``exclusiveMinimum`` of a number."""
    return (value >= schema.get("minimum", value) and value <= schema.get("maximum", value)
            and ("exclusiveMinimum" not in schema or value > schema["exclusiveMinimum"]))
