"""The SASS of kernel specialisations, with an instruction count per loop, for reading what a
kernel's inner loop costs (needs nvcc and cuobjdump):

    python3 research/sass.py verlet.cu 'verlet_force<float, float, LennardJones, false, true, 1, 128, 0, 12, 4>'

The unit is compiled as strategies.nvcc compiles it (the expression's options, the Lennard-Jones
functor, sm_90 unless --arch). Prints the disassembly, then per kernel every backward branch (a
loop) with the instructions from its target to the branch.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from strategies import nvcc  # noqa: E402
from strategies.cuda import options  # noqa: E402

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRA = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")


def loops(sass: str) -> list[tuple[str, int, int, list[str]]]:
    """(kernel, start offset, end offset, instructions) for every backward branch."""
    out, kernel, body = [], "", []
    for line in sass.splitlines():
        if "Function :" in line:
            kernel, body = line.split("Function :")[1].strip(), []
            continue
        m = _LINE.search(line)
        if not m:
            continue
        at, text = int(m.group(1), 16), m.group(2)
        body.append((at, text))
        b = _BRA.search(text)
        if b and int(b.group(1), 16) <= at:
            target = int(b.group(1), 16)
            out.append((kernel, target, at, [t for a, t in body if target <= a <= at]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="kernel file in strategies/kernels, e.g. verlet.cu")
    ap.add_argument("expressions", nargs="+")
    ap.add_argument("--arch", default=nvcc.ARCH)
    a = ap.parse_args()
    exe, dump = nvcc.nvcc(), shutil.which("cuobjdump")
    if exe is None or dump is None:
        print("sass: needs nvcc and cuobjdump on PATH", file=sys.stderr)
        return 2
    text = ""
    for e in a.expressions:
        with tempfile.TemporaryDirectory() as tmp:
            src, cub = Path(tmp) / "unit.cu", Path(tmp) / "unit.cubin"
            src.write_text(nvcc.translation_unit(a.file, [e], nvcc.LennardJones().cuda_header))
            r = subprocess.run([exe, *options(e), f"-arch={a.arch}", f"-I{nvcc.KERNEL_DIR}", "-cubin", "-o",
                                str(cub), str(src)], capture_output=True, text=True)
            if r.returncode:
                print(f"sass: {e}: nvcc failed: {r.stderr.strip()[-500:]}", file=sys.stderr)
                return 2
            text += subprocess.run([dump, "-sass", str(cub)], capture_output=True, text=True).stdout
    print(text)
    for kernel, lo, hi, body in loops(text):
        print(f"loop {kernel[:70]} [{lo:#x}, {hi:#x}]: {len(body)} instructions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
