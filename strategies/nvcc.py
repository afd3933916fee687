"""Offline compilation of every kernel specialisation with nvcc (no GPU needed).

CI uses it to check that the kernels compile, to read ptxas's resource report (registers,
spills), and to check in the PTX that fp32 kernels contain no float64 arithmetic (an untyped
literal such as 0.5 would promote a float expression to double).

    python -m strategies.nvcc            # compile all, print the resource report
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .cuda import COMPILE_OPTIONS, KERNEL_DIR, fold_expression, reduce_expression

ARCH = "sm_90"
_F64 = re.compile(r"^\s*(?:@%p\d+\s+)?(?!cvt|mov|ld|st)\w+(?:\.\w+)*\.f64\b", re.M)


@dataclass
class Report:
    expression: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    shared: int


def nvcc() -> str | None:
    return shutil.which("nvcc")


def specialisations() -> dict[str, list[str]]:
    """Kernel file -> every expression the registered GPU strategies (and the reduction) use."""
    import strategies
    from .cuda import CudaStrategy

    out: dict[str, list[str]] = {"reduce.cu": [f(a) for f in (reduce_expression, fold_expression)
                                                for a in ("float", "double")]}
    for name, cls in strategies.REGISTRY.items():
        if issubclass(cls, CudaStrategy):
            s = cls()
            out.setdefault(s.source_file, [])
            out[s.source_file] += [e for e in s.expressions() if e not in out[s.source_file]]
    return out


def translation_unit(file: str, expressions: list[str]) -> str:
    """A .cu that includes `file` and instantiates each expression by taking its address."""
    body = "\n".join(f"  (const void*)&{e}," for e in expressions)
    return (f'#include "{file}"\nextern const void* const instantiated[];\n'
            f'const void* const instantiated[] = {{\n{body}\n}};\n')


def compile_unit(file: str, expressions: list[str], ptx: bool = False, arch: str = ARCH) -> tuple[int, str, str]:
    """Compile; returns (returncode, compiler output, PTX text if ptx else '')."""
    exe = nvcc()
    if exe is None:
        raise FileNotFoundError("nvcc not found on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "unit.cu"
        src.write_text(translation_unit(file, expressions))
        out = Path(tmp) / ("unit.ptx" if ptx else "unit.cubin")
        cmd = [exe, *COMPILE_OPTIONS, f"-arch={arch}", f"-I{KERNEL_DIR}", "-Xptxas", "-v", "-Werror", "all-warnings",
               "-ptx" if ptx else "-cubin", "-o", str(out), str(src)]
        if ptx:
            cmd.remove("-Xptxas"), cmd.remove("-v")
        r = subprocess.run(cmd, capture_output=True, text=True)
        text = out.read_text() if ptx and out.exists() else ""
    return r.returncode, r.stdout + r.stderr, text


_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_USE = re.compile(r"Used (\d+) registers.*?(\d+) bytes smem", re.S)


def resources(output: str) -> list[Report]:
    """Parse ptxas -v: one Report per entry function (mangled names)."""
    reports = []
    for block in output.split("ptxas info    : Compiling entry function")[1:]:
        name = block.split("'")[1]
        regs = re.search(r"Used (\d+) registers", block)
        smem = re.search(r"(\d+) bytes smem", block)
        spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
        stack = re.search(r"(\d+) bytes stack frame", block)
        reports.append(Report(name, int(regs.group(1)) if regs else -1, int(spill.group(1)) if spill else 0,
                              int(spill.group(2)) if spill else 0, int(stack.group(1)) if stack else 0,
                              int(smem.group(1)) if smem else 0))
    return reports


def f64_instructions(ptx: str) -> list[str]:
    """Float64 arithmetic lines in PTX (conversions, moves, loads and stores excluded)."""
    return [m.group(0).strip() for m in _F64.finditer(ptx)]


def main() -> int:
    if nvcc() is None:
        print("nvcc not found on PATH", file=sys.stderr)
        return 2
    bad = 0
    for file, exprs in specialisations().items():
        code, out, _ = compile_unit(file, exprs)
        print(f"{file}: {len(exprs)} specialisations, {'ok' if code == 0 else 'FAILED'}")
        if code:
            print(out)
            bad += 1
            continue
        for rep in resources(out):
            print(f"  {rep.registers:3d} regs  {rep.shared:5d} B smem  stack {rep.stack:4d}  "
                  f"spills {rep.spill_stores}/{rep.spill_loads}  {rep.expression}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
