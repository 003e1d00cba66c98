"""Without the batch extra's pydantic, importing kvgen.batch names the extra to install."""

import subprocess
import sys


def test_batch_without_pydantic_gives_install_hint():
    code = (
        "import sys; sys.modules['pydantic'] = None\n"
        "try:\n    import kvgen.batch\nexcept ModuleNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'kvgen[batch]'" in out
