"""Which tree-sitter nodes are symbols, per language: a syntax tree to `SymbolSpan`s.

Top-level definitions become symbols, including those inside containers that do not make a
symbol of their own (C preprocessor conditionals, `extern "C"` blocks, C++ namespaces, Python
module-level `if`/`try`). The members of classes become methods (`Class.method`), except in Go
and Rust, whose methods are top-level declarations (`Receiver.method`, inside `impl` blocks).
Lines are tree-sitter rows plus one; the caller maps them to `str.splitlines` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cortex.core.code.parse import SymbolSpan

_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_LAST_PART = re.compile(r"::|\.")
Node = Any  # tree_sitter.Node: the bindings are imported only where a grammar is loaded


@dataclass(frozen=True, slots=True)
class Grammar:
    """How one language's syntax tree names its symbols."""

    kinds: dict[str, str]  # node type -> symbol kind
    transparent: frozenset[str] = frozenset()  # containers whose children are read as top level
    wrappers: frozenset[str] = frozenset()  # a definition inside: the wrapper's lines, its kind
    preceding: frozenset[str] = frozenset()  # sibling nodes above a definition that belong to it
    methods: frozenset[str] = frozenset()  # member node types that are methods
    members: frozenset[str] = frozenset()  # nodes inside a class body that hold more members
    qualify: str = "."  # joins a container's name and a member's
    namespaces: frozenset[str] = field(default_factory=frozenset)  # containers that prefix names


_C_CONTAINERS = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "declaration_list"}
)
_JS_KINDS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "lexical_declaration": "function",
    "variable_declaration": "function",
}
_JS = Grammar(
    _JS_KINDS,
    wrappers=frozenset({"export_statement"}),
    methods=frozenset({"method_definition"}),
)
_TS = Grammar(
    {
        **_JS_KINDS,
        "abstract_class_declaration": "class",
        "interface_declaration": "type",
        "type_alias_declaration": "type",
        "enum_declaration": "type",
        "function_signature": "function",
    },
    wrappers=frozenset({"export_statement", "ambient_declaration"}),
    methods=frozenset({"method_definition", "abstract_method_signature"}),
)
GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        {"function_definition": "function", "class_definition": "class"},
        transparent=frozenset(
            {
                "if_statement",
                "elif_clause",
                "else_clause",
                "try_statement",
                "except_clause",
                "finally_clause",
                "block",
            }
        ),
        wrappers=frozenset({"decorated_definition"}),
        methods=frozenset({"function_definition"}),
    ),
    "javascript": _JS,
    "typescript": _TS,
    "go": Grammar(
        {"function_declaration": "function", "method_declaration": "function", "type_spec": "type"},
        transparent=frozenset({"type_declaration"}),
    ),
    "rust": Grammar(
        {
            "function_item": "function",
            "struct_item": "type",
            "enum_item": "type",
            "trait_item": "type",
            "union_item": "type",
            "mod_item": "type",
            "impl_item": "impl",
            "type_item": "type",
            "macro_definition": "function",
        },
        preceding=frozenset({"attribute_item"}),
    ),
    "java": Grammar(
        {
            "class_declaration": "class",
            "interface_declaration": "class",
            "enum_declaration": "class",
            "record_declaration": "class",
            "annotation_type_declaration": "class",
        },
        methods=frozenset({"method_declaration", "constructor_declaration"}),
        members=frozenset({"enum_body_declarations"}),
    ),
    "c": Grammar(
        {
            "function_definition": "function",
            "struct_specifier": "class",
            "union_specifier": "class",
            "enum_specifier": "class",
            "type_definition": "type",
        },
        transparent=_C_CONTAINERS,
    ),
    "cpp": Grammar(
        {
            "function_definition": "function",
            "struct_specifier": "class",
            "union_specifier": "class",
            "enum_specifier": "class",
            "class_specifier": "class",
            "type_definition": "type",
        },
        transparent=_C_CONTAINERS | {"linkage_specification", "namespace_definition"},
        wrappers=frozenset({"template_declaration"}),
        methods=frozenset({"function_definition"}),
        qualify="::",
        namespaces=frozenset({"namespace_definition"}),
    ),
    "ruby": Grammar(
        {"method": "function", "singleton_method": "function", "class": "class", "module": "class"},
        methods=frozenset({"method", "singleton_method"}),
        members=frozenset({"body_statement"}),
        qualify="::",
    ),
}


def _text(node: Node | None) -> str:
    return "" if node is None else str(node.text.decode("utf-8", "replace"))


def _declarator_name(node: Node) -> Node | None:
    """The name inside a C/C++ declarator chain (`*foo(...)` -> `foo`, `Cls::m(...)` -> `Cls::m`)."""
    while node is not None and node.type not in ("function_declarator", "type_identifier"):
        node = node.child_by_field_name("declarator")
    if node is not None and node.type == "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _body(node: Node) -> Node | None:
    return node.child_by_field_name("body")


def _name(language: str, node: Node) -> tuple[str, Node | None]:
    """(name, the node that names it) of a definition; ("", None) for an anonymous one."""
    kind = node.type
    if kind in ("lexical_declaration", "variable_declaration"):
        for decl in node.named_children:
            value = decl.child_by_field_name("value") if decl.type == "variable_declarator" else None
            if value is not None and value.type in _FUNCTION_VALUES:
                name = decl.child_by_field_name("name")
                return (_text(name), name) if name is not None and name.type == "identifier" else ("", None)
        return "", None
    if kind == "function_definition" and language in ("c", "cpp"):
        name = _declarator_name(node.child_by_field_name("declarator"))
        return _text(name), name
    if kind == "type_definition":
        name = node.child_by_field_name("declarator")
        typ = node.child_by_field_name("type")
        has_body = typ is not None and _body(typ) is not None
        return (_text(name), name) if has_body and name is not None else ("", None)
    if kind in ("struct_specifier", "union_specifier", "enum_specifier", "class_specifier"):
        name = node.child_by_field_name("name")
        return (_text(name), name) if _body(node) is not None else ("", None)
    if kind == "impl_item":
        trait, typ = node.child_by_field_name("trait"), node.child_by_field_name("type")
        return (f"{_text(trait)} for {_text(typ)}" if trait is not None else _text(typ)), typ
    if kind == "method_declaration" and language == "go":
        name = node.child_by_field_name("name")
        receiver = node.child_by_field_name("receiver")
        types = _walk_types(receiver) if receiver is not None else []
        owner = _text(types[0]) if types else ""
        return (f"{owner}.{_text(name)}" if owner else _text(name)), name
    name = node.child_by_field_name("name")
    return _text(name), name


def _walk_types(node: Node) -> list[Node]:
    """The type identifiers in a Go receiver, outermost first (`(r *Server[T])` -> `Server`)."""
    found = []
    stack = [node]
    while stack:
        cur = stack.pop(0)
        if cur.type == "type_identifier":
            found.append(cur)
        stack.extend(cur.named_children)
    return found


@dataclass(slots=True)
class _Walk:
    language: str
    grammar: Grammar
    spans: list[SymbolSpan] = field(default_factory=list)

    def top(self, node: Node, prefix: str = "") -> None:
        children = node.named_children
        for n, child in enumerate(children):
            if child.type in self.grammar.namespaces:
                name = _text(child.child_by_field_name("name"))
                inner = _body(child)
                if inner is not None:
                    self.top(inner, f"{prefix}{name}{self.grammar.qualify}" if name else prefix)
                continue
            if child.type in self.grammar.transparent:
                self.top(child, prefix)
                continue
            self.definition(child, self._start(children, n), prefix, owner="")

    def _start(self, siblings: list[Node], n: int) -> int:
        """The first row of the definition at `n`, with the attribute lines right above it."""
        row = int(siblings[n].start_point.row)
        k = n - 1
        while k >= 0 and siblings[k].type in self.grammar.preceding and siblings[k].end_point.row >= row - 1:
            row = int(siblings[k].start_point.row)
            k -= 1
        return row

    def definition(self, node: Node, start: int, prefix: str, owner: str) -> None:
        inner = node
        while inner.type in self.grammar.wrappers:
            found = inner.child_by_field_name("definition") or inner.child_by_field_name("declaration")
            if found is None:
                found = next((c for c in inner.named_children if c.type in self.grammar.kinds), None)
            if found is None:
                return
            inner = found
        is_method = bool(owner) and inner.type in self.grammar.methods
        kind = "method" if is_method else self.grammar.kinds.get(inner.type)
        if kind is None:
            return
        name, name_node = _name(self.language, inner)
        if not name:
            return
        if is_method:
            qualname = f"{owner}.{name}"
        else:  # a top-level symbol, or a class inside a class
            qualname = f"{owner}{self.grammar.qualify}{name}" if owner else prefix + name
        if kind == "function" and self.language in ("go", "cpp"):
            name = _LAST_PART.split(name)[-1]  # `Server.Start`, `Shape::area`: named `Start`, `area`
        def_row = int((name_node or inner).start_point.row)
        end = inner.end_point
        end_row = int(end.row) - (1 if end.column == 0 and end.row > inner.start_point.row else 0)
        self.spans.append(
            SymbolSpan(name, qualname, kind, start + 1, max(def_row, start) + 1, end_row + 1, owner)
        )
        if kind in ("class", "type") and not is_method:
            self.members(_body(inner), qualname)

    def members(self, body: Node | None, owner: str) -> None:
        if body is None:
            return
        children = body.named_children
        for n, child in enumerate(children):
            if child.type in self.grammar.members:
                self.members(child, owner)
            elif (
                child.type in self.grammar.methods
                or child.type in self.grammar.wrappers
                or self.grammar.kinds.get(child.type) == "class"
            ):
                self.definition(child, self._start(children, n), "", owner)


def spans_of(language: str, root: Node) -> list[SymbolSpan]:
    """The symbols of a parsed file, in source order (a class before its methods)."""
    walk = _Walk(language, GRAMMARS[language])
    walk.top(root)
    return walk.spans
