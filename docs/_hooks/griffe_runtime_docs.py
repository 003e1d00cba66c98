"""Griffe extension for the API reference: signatures from the source and stubs, text from the module.

The compiled module's stubs (python/kvgen/_core.pyi) give the signatures but carry no
docstrings: those live in the pybind11 bindings. This extension imports kvgen and gives every
documented object that has no docstring in its source the one it has at run time (pybind11's
signature lines taken off the top), and turns a stub function given only as ``@overload``
signatures (a ``.pyi`` has no implementation) into a documented function with those overloads.
"""

from __future__ import annotations

import importlib
import inspect
import re

import griffe

# pybind11 puts "name(arg: type, ...) -> type" (and "Overloaded function." lists) first.
_SIGNATURE = re.compile(r"^\s*(\d+\. )?[\w.]+\(.*\)( -> .*)?$")


def _runtime_doc(path: str) -> str | None:
    module_name, _, rest = path.partition(".")
    target = importlib.import_module(module_name)
    parts = rest.split(".") if rest else []
    for index, part in enumerate(parts):
        module_path = ".".join([module_name, *parts[: index + 1]])
        try:
            target = getattr(target, part)
        except AttributeError:
            try:
                target = importlib.import_module(module_path)
            except ImportError:
                return None
    doc = inspect.getdoc(target)
    if not doc or (inspect.isclass(target) and doc == inspect.getdoc(object)):
        return None
    lines = doc.splitlines()
    while lines and (not lines[0].strip() or _SIGNATURE.match(lines[0]) or lines[0] == "Overloaded function."):
        lines.pop(0)
    return "\n".join(lines).strip() or None


class RuntimeDocstrings(griffe.Extension):
    """Fills missing docstrings of the ``kvgen`` package from the imported module."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.name != "kvgen":
            return
        importlib.import_module("kvgen")  # fails loudly: the reference needs the built extension
        self._walk(pkg, seen=set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if isinstance(obj, (griffe.Module, griffe.Class)):
            for name, overloads in list(obj.overloads.items()):
                if name not in obj.members and overloads:
                    function = overloads[-1]
                    documented = griffe.Function(
                        name, parameters=function.parameters, returns=function.returns,
                        lineno=function.lineno, endlineno=function.endlineno, parent=obj,
                    )
                    documented.overloads = list(overloads)
                    obj.set_member(name, documented)
        if not obj.docstring and not obj.is_alias:
            text = _runtime_doc(obj.path)
            if text:
                obj.docstring = griffe.Docstring(text, parent=obj)
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            if member.is_class or member.is_function or member.is_module or member.is_attribute:
                self._walk(member, seen)
