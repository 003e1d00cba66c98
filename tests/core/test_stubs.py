"""The hand-written type stubs of kvgen._core name exactly what the module exports.

The GenerationConfig fields and keyword ``__init__`` of the stub follow the schema
(generation_config_fields.def): after a change, ``python tests/core/test_stubs.py --write`` rewrites
them in _core.pyi (without ``--write`` it prints them).
"""

import ast
import sys
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


def config_init_lines() -> list[str]:
    """GenerationConfig's typed keyword ``__init__`` in _core.pyi: every field with its default,
    so that editors complete the names and type checkers reject a misspelled one."""
    schema = _core.GenerationConfig._schema()
    return (["    def __init__(", "        self, *,"]
            + [f"        {name}: {annotation} = {default!r}," for name, annotation, _, default, _ in schema]
            + ["    ) -> None: ..."])


def write_config_block() -> None:
    """Replaces the fields and ``__init__`` at the top of the stub's GenerationConfig class."""
    lines = STUB.read_text().splitlines()
    start = lines.index("class GenerationConfig:") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("    def __init__("))
    while not lines[end].endswith("..."):  # the __init__ spans lines up to its "...) -> None: ..."
        end += 1
    end += 1
    lines[start:end] = config_stub_lines() + config_init_lines()
    STUB.write_text("\n".join(lines) + "\n")


def normalized(source: str) -> str:
    """Python source as ast.unparse writes it (quotes, spacing)."""
    return ast.unparse(ast.parse(source.strip()))


def stub_config_class() -> ast.ClassDef:
    return next(n for n in stub_tree().body if isinstance(n, ast.ClassDef) and n.name == "GenerationConfig")


def test_stub_config_fields_follow_the_schema():
    """Every field in the schema, in order, with its type and default; nothing else."""
    stubbed = [ast.unparse(n) for n in stub_config_class().body if isinstance(n, ast.AnnAssign)]
    expected = [normalized(line) for line in config_stub_lines()]
    assert stubbed == expected, ("regenerate the GenerationConfig block of _core.pyi: "
                                 "python tests/core/test_stubs.py --write")


def test_stub_config_init_follows_the_schema():
    """The stub's ``__init__`` takes every field by keyword with its type and default, no **kwargs."""
    init = next(n for n in stub_config_class().body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    expected = normalized("class C:\n" + "\n".join(config_init_lines()))
    assert normalized("class C:\n    " + ast.unparse(init).replace("\n", "\n    ")) == expected, (
        "regenerate the GenerationConfig block of _core.pyi: python tests/core/test_stubs.py --write")


def test_runtime_signature_follows_the_schema():
    """``inspect.signature(GenerationConfig)`` lists the fields as the stub does."""
    import inspect

    parameters = inspect.signature(kvgen.GenerationConfig).parameters
    schema = _core.GenerationConfig._schema()
    assert [(p.name, p.kind, p.annotation, p.default) for p in parameters.values()] == [
        (name, inspect.Parameter.KEYWORD_ONLY, annotation, default) for name, annotation, _, default, _ in schema]


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
    if "--write" in sys.argv[1:]:
        write_config_block()
    else:
        print("\n".join(config_stub_lines() + config_init_lines()))
