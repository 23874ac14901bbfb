"""`python -m bench` from the repository root: the benchmark suite (see bench/suite.py).

bench/ is a folder of scripts that import each other by their own names (`from append
import ...`), as `python bench/append.py` runs them; run as a module, the folder joins the
import path first, so the suite's modules are the same ones the scripts use.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import main

if __name__ == "__main__":
    raise SystemExit(main())
