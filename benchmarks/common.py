"""Shared set-up for the asv suite: the project runs in place from the repository root."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# A small grid by default; MDFORCE_ASV_FULL=1 runs the full sweep.
FULL = os.environ.get("MDFORCE_ASV_FULL") == "1"
