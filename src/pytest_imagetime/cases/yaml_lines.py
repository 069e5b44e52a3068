"""Case files as YAML: plain data fast, and line numbers when a problem needs one.

Imported only when a case file is parsed: a file kept by ``case_cache`` is built without
PyYAML, so a run whose case files are all kept never imports it.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml import MarkedYAMLError as MarkedYAMLError  # what parse raises

Located = dict[tuple[str | int, ...], int]


# libyaml's parser when present: it is faster than the pure-Python one.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _to_data(node: yaml.Node, where: tuple[str | int, ...], lines: Located,
             scalars: yaml.constructor.SafeConstructor) -> Any:
    lines[where] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(scalars.construct_object(key_node))
            out[key] = _to_data(value_node, (*where, key), lines, scalars)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_data(v, (*where, i), lines, scalars) for i, v in enumerate(node.value)]
    return scalars.construct_object(node)


_STR_TAG = "tag:yaml.org,2002:str"


def _to_plain(node: yaml.Node, scalars: yaml.constructor.SafeConstructor) -> Any:
    """What _to_data returns, without the line map a valid file never needs. Strings, nearly
    every scalar of a case file, skip the constructor: for them it returns the node's value."""
    if isinstance(node, yaml.MappingNode):
        return {_key(key_node, scalars): _to_plain(value_node, scalars)
                for key_node, value_node in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_to_plain(v, scalars) for v in node.value]
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value
    return scalars.construct_object(node)


def _key(node: yaml.Node, scalars: yaml.constructor.SafeConstructor) -> str:
    """A mapping key as the data holds it: a string key as written, any other as str()."""
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return str(node.value)
    return str(scalars.construct_object(node))


def parse(text: str) -> tuple[Any, list[int] | None, yaml.Node] | None:
    """The file's plain data, the line of each case and its node tree (to locate anything
    else); None for an empty file; raises yaml.MarkedYAMLError."""
    node = yaml.compose(text, Loader=_Loader)
    if node is None:
        return None
    scalars = yaml.constructor.SafeConstructor()
    return _to_plain(node, scalars), _case_lines(node, scalars), node


def _case_lines(root: yaml.Node, scalars: yaml.constructor.SafeConstructor) -> list[int] | None:
    """The line of each case, read straight off the nodes."""
    lines = None
    if isinstance(root, yaml.MappingNode):
        for key_node, value_node in root.value:  # the last 'cases' wins, as in the data
            if _key(key_node, scalars) == "cases":
                lines = ([n.start_mark.line + 1 for n in value_node.value]
                         if isinstance(value_node, yaml.SequenceNode) else None)
    return lines


def locate(root: yaml.Node, lines: Located) -> None:
    """Fill ``lines`` with the line of every data path under ``root``."""
    _to_data(root, (), lines, yaml.constructor.SafeConstructor())
