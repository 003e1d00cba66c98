import sys
from pathlib import Path

# tests/ holds helper modules (hf_reference) next to the tests.
sys.path.insert(0, str(Path(__file__).parent))
