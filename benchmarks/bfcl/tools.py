"""BFCL function schemas as OpenAI tools and as a compact text listing.

BFCL schemas use Python-flavoured types ("dict", "float", "tuple", "any"); OpenAI tools need JSON-schema
types and names matching ^[a-zA-Z0-9_-]{1,64}$, so "math.factorial" is offered as "math_factorial" and
mapped back (`original_names`) before scoring: the checker sees names as written in the schema.
"""

from __future__ import annotations

import json
from typing import Any

# BFCL type -> JSON-schema type. "any" (and unknown types) become an untyped schema: any JSON value.
JSON_SCHEMA_TYPES = {
    "dict": "object", "object": "object",
    "float": "number", "number": "number", "double": "number",
    "integer": "integer", "int": "integer", "long": "integer",
    "string": "string", "str": "string",
    "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array",
}
_DROPPED_KEYS = frozenset({"optional"})  # BFCL-only bookkeeping, not JSON schema


def tool_name(name: str) -> str:
    """The OpenAI-safe tool name for a BFCL function name."""
    return name.replace(".", "_")


def original_names(functions: list[dict[str, Any]]) -> dict[str, str]:
    """tool name -> BFCL function name, for the functions of one row."""
    return {tool_name(f["name"]): f["name"] for f in functions}


def convert_schema(node: dict[str, Any]) -> dict[str, Any]:
    """One BFCL (sub)schema with JSON-schema types, recursively through properties and items."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "type":
            mapped = JSON_SCHEMA_TYPES.get(value) if isinstance(value, str) else None
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: convert_schema(sub) if isinstance(sub, dict) else sub
                                 for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out["items"] = convert_schema(value)
        else:
            out[key] = value
    return out


def to_openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    parameters = convert_schema(function.get("parameters") or {})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": tool_name(function["name"]),
            "description": function.get("description", ""),
            "parameters": parameters,
        },
    }


def native_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [to_openai_tool(f) for f in functions]


def _type_text(schema: dict[str, Any]) -> str:
    kind = str(schema.get("type", "any"))
    items = schema.get("items")
    if kind in ("array", "tuple") and isinstance(items, dict):
        return f"{kind} of {_type_text(items)}"
    return kind


def render_functions(functions: list[dict[str, Any]]) -> str:
    """A compact listing: one line per function, one indented line per parameter (BFCL types)."""
    lines: list[str] = []
    for function in functions:
        parameters = function.get("parameters") or {}
        properties: dict[str, Any] = parameters.get("properties") or {}
        required = set(parameters.get("required") or [])
        lines.append(f"- {function['name']}: {function.get('description', '').strip()}")
        for name, schema in properties.items():
            flag = "required" if name in required else "optional"
            text = f"    - {name} ({_type_text(schema)}, {flag})"
            description = str(schema.get("description", "")).strip()
            if description:
                text += f": {description}"
            if "enum" in schema:
                text += f" One of: {json.dumps(schema['enum'], ensure_ascii=False)}."
            if "default" in schema:
                text += f" Default: {json.dumps(schema['default'], ensure_ascii=False)}."
            if isinstance(schema.get("properties"), dict):
                text += f" Keys: {', '.join(schema['properties'])}."
            lines.append(text)
    return "\n".join(lines)


def render_question(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = str(message.get("content", ""))
        role = message.get("role", "user")
        parts.append(content if role == "user" else f"[{role}] {content}")
    return "\n\n".join(parts)
