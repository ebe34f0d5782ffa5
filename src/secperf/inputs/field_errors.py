"""One pydantic validation error as one line naming its TOML key path, shared by the input files
built of sections (a pattern file, a system file): `[stack].protocol: 'x' is not allowed; allowed:
mqtt, coap, ...`, `[device] has unknown key 'cpu'; allowed: core, stack, config`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel
from pydantic_core import ErrorDetails

Loc = tuple[int | str, ...]  # a pydantic error's location


def key_path(loc: Loc, sections: tuple[str, ...]) -> str:
    """`[section].key[0].sub` for a pydantic location; pydantic's own branch names (union, literal,
    function and constrained validators) are not keys and are left out."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i == 0 and part in sections:
            out += f"[{part}]"
        elif "[" in str(part) or str(part).startswith(("function-", "constrained-")):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def describe(
    err: ErrorDetails,
    *,
    root: type[BaseModel],
    models: Mapping[str, type[BaseModel]],
    sections: tuple[str, ...],
    allowed_values: Callable[[Loc], str] = lambda loc: "",
    sort_fields: bool = False,
) -> str:
    """The line for one error of `root.model_validate`: `models` maps a section to its model (for the
    keys an unknown key could have been), `allowed_values` names a literal's choices where the
    message's own list is not the one to show."""
    kind, loc = err["type"], tuple(err["loc"])

    def path(x: Loc) -> str:
        return key_path(x, sections)

    if kind == "extra_forbidden":
        parent = loc[:-1]
        model = models[str(parent[0])] if parent else root
        where = path(parent) if parent else "the top level"
        fields = sorted(model.model_fields) if sort_fields else list(model.model_fields)
        return f"{where} has unknown key {loc[-1]!r}; allowed: {', '.join(fields)}"
    if kind == "missing":
        return f"{path(loc)}: missing (required)"
    if kind == "literal_error":
        return f"{path(loc)}: {err.get('input')!r} is not allowed; allowed: {allowed_values(loc) or err['msg']}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{path(loc)}: must be a table ([{path(loc).strip('[]')}])"
    msg = err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    shown = "a table" if isinstance(got, dict) else repr(got)
    return f"{path(loc)}: {msg[0].lower() + msg[1:]} (got {shown})"
