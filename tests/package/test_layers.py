"""kvgen's Python modules import one way, from the lower layers up: the C++ core, helpers over
it, loaders, the model, generation, the package facade, the command line. Read from the source
with ``ast`` (every import, function-local ones included), so a lazy import cannot hide a cycle."""

from __future__ import annotations

import ast
import re
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
    ("model", ["kvgen._model", "kvgen._default_model", "kvgen._embedding", "kvgen._mtp_head"]),
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


# ---- the C++ layers ------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]

#: Lowest first, as folders of the repository: a file may include headers of its own layer or of lower
#: ones, never of higher (runtime <- models <- bindings: the runtime does not know the model families, and
#: only the bindings know Python). "core" is what every layer may use: errors, limits, the generation
#: config and token selector, sampling, search, ops (a layer's float math), quantized weights. The C++
#: tests use the core without the bindings.
CPP_LAYERS = [
    ("core", ["cpp/include/kvgen", "cpp/src", "cpp/include/kvgen/ops", "cpp/src/ops", "cpp/include/kvgen/quant",
              "cpp/src/quant", "cpp/include/kvgen/sampling", "cpp/src/sampling", "cpp/include/kvgen/search",
              "cpp/src/search"]),
    ("runtime", ["cpp/include/kvgen/runtime", "cpp/src/runtime"]),
    ("models", ["cpp/include/kvgen/models", "cpp/src/models"]),
    ("C++ tests", ["tests/cpp"]),
    ("bindings", ["cpp/bindings"]),
]
CPP_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".inc", ".def"}
#: Headers of the Python C API and of pybind11: the bindings' alone.
PYTHON_HEADERS = ("Python.h", "pybind11/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def cpp_files() -> list[Path]:
    return sorted(p for folder in ("cpp", "tests/cpp") for p in (ROOT / folder).rglob("*") if p.suffix in CPP_SUFFIXES)


def cpp_layer_of(path: Path) -> int:
    """The rank of the layer whose folder holds ``path`` itself (KeyError when none does)."""
    folder = path.parent.relative_to(ROOT).as_posix()
    for rank, (_, folders) in enumerate(CPP_LAYERS):
        if folder in folders:
            return rank
    raise KeyError(folder)


def cpp_includes(path: Path) -> list[tuple[str, Path | None]]:
    """Every ``#include`` of ``path``: its text, and the repository file it names (a "kvgen/..." header
    under cpp/include, or one beside ``path``), or None for a system or third-party header."""
    found = []
    for bracket, name in INCLUDE.findall(path.read_text(errors="replace")):
        target = None
        if bracket == '"':
            target = next((c.resolve() for c in (ROOT / "cpp/include" / name, path.parent / name) if c.is_file()), None)
        found.append((name, target))
    return found


def test_every_cpp_folder_has_a_layer():
    missing = set()
    for path in cpp_files():
        try:
            cpp_layer_of(path)
        except KeyError:
            missing.add(path.parent.relative_to(ROOT).as_posix())
    assert not missing, f"{sorted(missing)}: give each folder a layer in CPP_LAYERS"
    gone = [folder for _, folders in CPP_LAYERS for folder in folders if not (ROOT / folder).is_dir()]
    assert not gone, f"CPP_LAYERS names folders that are gone: {gone}"


def test_no_cpp_file_includes_a_higher_layer():
    """The runtime includes no models/ header, the core neither, nothing includes the bindings."""
    upward = [
        f"{path.relative_to(ROOT)} ({CPP_LAYERS[cpp_layer_of(path)][0]}) includes {name} "
        f"({CPP_LAYERS[cpp_layer_of(target)][0]})"
        for path in cpp_files()
        for name, target in cpp_includes(path)
        if target is not None and target.is_relative_to(ROOT) and cpp_layer_of(target) > cpp_layer_of(path)
    ]
    assert not upward, "\n".join(upward)


def test_only_the_bindings_include_python_headers():
    offenders = [f"{path.relative_to(ROOT)} includes {name}"
                 for path in cpp_files() if not path.is_relative_to(ROOT / "cpp/bindings")
                 for name, _ in cpp_includes(path) if name.startswith(PYTHON_HEADERS)]
    assert not offenders, "\n".join(offenders)


def test_the_include_reader_sees_every_include(tmp_path):
    """The checks above are only as good as ``cpp_includes``: a "kvgen/..." header resolves under
    cpp/include, a quoted name beside the file resolves there, an angle-bracket one (indented, spaced)
    is seen with no file; and the bindings' pybind11 includes are seen."""
    (tmp_path / "local.h").write_text("")
    source = tmp_path / "probe.cpp"
    source.write_text('#include "local.h"\n  #  include <pybind11/pybind11.h>\n#include "kvgen/models/decoder.h"\n')
    assert cpp_includes(source) == [("local.h", (tmp_path / "local.h").resolve()), ("pybind11/pybind11.h", None),
                                    ("kvgen/models/decoder.h", (ROOT / "cpp/include/kvgen/models/decoder.h").resolve())]
    assert any(name.startswith(PYTHON_HEADERS) for path in (ROOT / "cpp/bindings").iterdir()
               for name, _ in cpp_includes(path))
