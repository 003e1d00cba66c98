"""kvgen's Python modules import one way, from the lower layers up: the C++ core, helpers over
it, loaders, the model, generation, the package facade, the command line. Read from the source
with ``ast`` (every import, function-local ones included), so a lazy import cannot hide a cycle."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import kvgen

PACKAGE = Path(kvgen.__file__).parent

#: Lowest first. A module may import modules of its own layer or of lower ones, never of higher.
#: A name ending in ``.*`` stands for every module of that subpackage (the folders are the layers).
LAYERS = [
    ("core", ["kvgen._core"]),
    ("helpers", ["kvgen._config", "kvgen._processor"]),
    ("loaders", ["kvgen.loaders.*"]),
    ("families", ["kvgen.families.*"]),
    ("model", ["kvgen._model", "kvgen._default_model"]),
    ("generation", ["kvgen.generation.*"]),
    ("package", ["kvgen", "kvgen._generator"]),
    ("server", ["kvgen.server.*"]),
    ("batch", ["kvgen.batch.*", "kvgen.ray"]),
    ("CLI", ["kvgen.cli", "kvgen.__main__", "kvgen.demo", "kvgen._local_models"]),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (KeyError when no layer names it)."""
    for rank, (_, names) in enumerate(LAYERS):
        for name in names:
            if module == name or (name.endswith(".*") and (module + ".").startswith(name[:-1])):
                return rank
    raise KeyError(module)


def kvgen_imports(module: str, path: Path) -> set[str]:
    """The kvgen modules that ``module`` imports: ``from kvgen import _core`` names the module
    ``kvgen._core`` when it is one, the package ``kvgen`` otherwise (``from kvgen import Model``)."""
    known = set(python_modules()) | {"kvgen._core"}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the package, one level up per extra dot
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                imported.add(submodule if submodule in known else base)
    return {name for name in imported if name == "kvgen" or name.startswith("kvgen.")}


def import_graph() -> dict[str, set[str]]:
    return {module: kvgen_imports(module, path) for module, path in python_modules().items()}


def test_every_module_has_a_layer():
    missing = []
    for module in python_modules():
        try:
            layer_of(module)
        except KeyError:
            missing.append(module)
    assert not missing, f"{missing}: give each a layer in LAYERS"
    modules = set(python_modules())
    gone = [name for _, names in LAYERS for name in names
            if name != "kvgen._core" and name not in modules and not (name.endswith(".*") and name[:-2] in modules)]
    assert not gone, f"LAYERS names modules that are gone: {gone}"


def test_no_module_imports_a_higher_layer():
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in import_graph().items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    graph = {module: targets - {module} for module, targets in import_graph().items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        raise AssertionError(f"import cycle: {' -> '.join(e.args[1])}") from None


def test_the_import_reader_sees_lazy_and_submodule_imports(tmp_path):
    """The checks above are only as good as ``kvgen_imports``: function-local, relative and
    ``from kvgen import <module>`` imports count; ``from kvgen import <name>`` names the package."""
    source = tmp_path / "_probe.py"
    source.write_text("from kvgen import _core, Model\nfrom . import _config\n\n"
                      "def f():\n    from kvgen._model import Model\n    from .loaders.gguf import model\n")
    assert kvgen_imports("kvgen._probe", source) == {"kvgen._core", "kvgen", "kvgen._config", "kvgen._model",
                                                     "kvgen.loaders.gguf.model"}
