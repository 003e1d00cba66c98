"""The hand-written type stubs of kvgen._core name exactly what the module exports."""

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


def test_stub_lists_every_config_field_and_method():
    tree = stub_tree()
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GenerationConfig")
    fields = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    assert fields == set(kvgen.GenerationConfig.fields())
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
