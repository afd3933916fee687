"""A `python -m harness` command run in the test's own process (numba's compiled functions stay
warm between tests, where a subprocess would compile them again): its exit status and output."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent


def harness(*args, cwd: Path = ROOT) -> SimpleNamespace:
    """returncode, stdout and stderr of `python -m harness ARGS` run from `cwd`."""
    from harness import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as e:  # argparse: --help, or a usage error
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
