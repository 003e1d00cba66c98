"""The quick-start notebook (python/notebooks/quickstart.ipynb, linked from the README) runs
headless from top to bottom without an error, and is committed without outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "python" / "notebooks" / "quickstart.ipynb"


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)


def test_notebook_runs_without_errors(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # a cell that raises fails the run (CellExecutionError names the cell and the error)
    run_in = {"metadata": {"path": str(tmp_path)}}
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources=run_in).execute()
    errors = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
              if output.output_type == "error"]
    assert not errors
    streamed = [output for cell in notebook.cells if "stream(" in cell.source for output in cell.outputs]
    assert len([o for o in streamed if o.output_type == "stream"]) >= 1
    assert any("image/png" in output.get("data", {}) for cell in notebook.cells for output in cell.get("outputs", []))
