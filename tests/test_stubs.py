"""The hand-written type stubs of kvgen._core name exactly what the module exports.

The GenerationConfig fields of the stub follow the schema (generation_config_fields.def):
``python tests/test_stubs.py`` prints the lines to paste into _core.pyi after a change.
"""

import ast
from pathlib import Path

import kvgen
from kvgen import _core

STUB = Path(kvgen.__file__).with_name("_core.pyi")


def stub_tree():
    return ast.parse(STUB.read_text())


def test_stub_lists_every_module_attribute():
    tree = stub_tree()
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    exported = {n for n in dir(_core) if not n.startswith("__")}
    assert names == exported


def config_stub_lines() -> list[str]:
    """The GenerationConfig field lines of _core.pyi, as the schema says they read."""
    schema = _core.GenerationConfig._schema()
    return [f"    {name}: {annotation} = {default!r}" for name, annotation, _, default, _ in schema]


def normalized(source: str) -> str:
    """Python source as ast.unparse writes it (quotes, spacing)."""
    return ast.unparse(ast.parse(source.strip()))


def stub_config_class() -> ast.ClassDef:
    return next(n for n in stub_tree().body if isinstance(n, ast.ClassDef) and n.name == "GenerationConfig")


def test_stub_config_fields_follow_the_schema():
    """Every field in the schema, in order, with its type and default; nothing else."""
    stubbed = [ast.unparse(n) for n in stub_config_class().body if isinstance(n, ast.AnnAssign)]
    expected = [normalized(line) for line in config_stub_lines()]
    assert stubbed == expected, "regenerate the GenerationConfig fields of _core.pyi: python tests/test_stubs.py"


def test_stub_lists_every_config_method():
    cls = stub_config_class()
    fields = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    public = {n for n in dir(kvgen.GenerationConfig) if not n.startswith("_")} - fields
    assert public <= methods


def test_stub_classes_list_every_runtime_member():
    for cls in (n for n in stub_tree().body if isinstance(n, ast.ClassDef)):
        stubbed = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        stubbed |= {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
        runtime = getattr(_core, cls.name)
        public = {n for n in dir(runtime) if not n.startswith("_")} - {n for n in dir(object)}
        assert public <= stubbed, f"{cls.name}: {sorted(public - stubbed)} missing from _core.pyi"


if __name__ == "__main__":
    print("\n".join(config_stub_lines()))
