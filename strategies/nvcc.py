"""Offline compilation of every kernel specialisation with nvcc (no GPU needed).

CI uses it to check that the kernels compile, to read ptxas's resource report (registers,
spills), and to check in the PTX that fp32 kernels contain no float64 arithmetic (an untyped
literal such as 0.5 would promote a float expression to double).

    python -m strategies.nvcc                  # compile all, print the resource report
    python -m strategies.nvcc --experimental   # the experimental strategies and launch values too
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mdcore import LennardJones, Potential

from .cuda import CONVERT_EXPRESSION, KERNEL_DIR, fold_expression, options, reduce_expression

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


def specialisations(potential: Potential | None = None, defaults: bool = False,
                    experimental: bool = False) -> dict[str, tuple[list[str], bool]]:
    """Kernel file -> (every expression the registered GPU strategies (and the reduction) use,
    whether the file's unit needs the potential's functor). Traversal kernels are instantiated
    with `potential` (default: Lennard-Jones); with `defaults`, only each strategy's default
    launch (every precision, output flavour and periodicity: every traversal kernel template
    with every type the functor is instantiated for, without the launch-parameter variants).
    Experimental strategies and launch values only with `experimental`."""
    import strategies
    from .cuda import CudaStrategy

    potential = potential or LennardJones()
    data: dict[str, list[str]] = {"reduce.cu": [f(a) for f in (reduce_expression, fold_expression)
                                                for a in ("float", "double", "Fixed")],
                                   "fixed.cu": [CONVERT_EXPRESSION]}
    from .integrate import EXPRESSIONS as integrator

    data["integrate.cu"] = list(integrator)
    from .kspace import expressions as kspace

    data["kspace.cu"] = kspace()
    from .kspace_mc import expressions as moves

    data["kspace_mc.cu"] = moves()
    traversal: dict[str, list[str]] = {}
    for name in strategies.names(experimental=experimental):
        cls = strategies.REGISTRY[name]
        if not issubclass(cls, CudaStrategy):
            continue
        s = cls()
        for file, exprs in s.data_expressions(experimental).items():
            data.setdefault(file, [])
            data[file] += [e for e in exprs if e not in data[file]]
        traversal.setdefault(s.source_file, [])
        exprs = s.default_expressions(potential) if defaults else s.expressions(potential, experimental)
        traversal[s.source_file] += [e for e in exprs if e not in traversal[s.source_file]]
    out: dict[str, tuple[list[str], bool]] = {}
    for file in sorted(set(data) | set(traversal)):
        out[file] = (data.get(file, []) + traversal.get(file, []), file in traversal)
    return out


def _template_args(expression: str) -> tuple[str, list[str]]:
    """('verlet_force', ['float', 'double', ...]) of 'verlet_force<float, double, ...>' (top-level commas)."""
    name, _, rest = expression.partition("<")
    args, depth, cur = [], 0, ""
    for ch in rest[:-1] if rest.endswith(">") else rest:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return name, args


def _pairs(expression: str) -> set:
    """Every pair of (position, value) of a specialisation's template arguments, with its kernel."""
    name, args = _template_args(expression)
    return {(name, i, a, j, b) for i, a in enumerate(args) for j, b in enumerate(args) if i < j} | \
        {(name, i, a) for i, a in enumerate(args)}


def covering(expressions: list[str], keep: list[str] = ()) -> list[str]:
    """A subset of `expressions` in which every pair of values of two template arguments of each
    kernel that occurs among them occurs at least once (`keep` always in; pairwise coverage):
    every branch a template parameter selects, and every combination of two, is compiled without
    the cross product of all of them. Greedy, in the given order."""
    chosen = [e for e in expressions if e in set(keep) or not _template_args(e)[1]]  # no arguments: no choice
    covered = set().union(*(_pairs(e) for e in chosen)) if chosen else set()
    todo = [e for e in expressions if e not in set(chosen)]
    gain = {e: _pairs(e) for e in todo}
    while todo:
        best = max(todo, key=lambda e: len(gain[e] - covered))
        if not gain[best] - covered:
            break
        chosen.append(best)
        covered |= gain[best]
        todo.remove(best)
    picked = set(chosen)
    return [e for e in expressions if e in picked]


def translation_unit(file: str, expressions: list[str], functor: str | None = None) -> str:
    """A .cu that includes `file` (after `functor`'s header, a file name in the unit's include
    path) and instantiates each expression by taking its address."""
    body = "\n".join(f"  (const void*)&{e}," for e in expressions)
    head = f'#include "{functor}"\n' if functor else ""
    return (f'{head}#include "{file}"\nextern const void* const instantiated[];\n'
            f'const void* const instantiated[] = {{\n{body}\n}};\n')


_ENTRY = "ptxas info    : Compiling entry function"


def compile_unit(file: str, expressions: list[str], ptx: bool = False, arch: str = ARCH,
                 potential: Potential | None = None, workers: int | None = None,
                 include: tuple[str, ...] = (), keep_ptx: bool = False) -> tuple[int, str, str]:
    """Compile; returns (returncode, compiler output, PTX text if ptx else ''). `potential`: the
    functor the traversal kernels among the expressions are instantiated with. Expressions
    with different compiler options (strategies.cuda.options: the fixed-point ones) compile in
    units of their own, as at run time; a long list is cut into up to `workers` units (default:
    the CPU count) that nvcc compiles at once. The results are joined in the given order. `include`:
    further folders where `file` and its headers may be found (after the kernels'). keep_ptx: compile
    to cubin (with ptxas's resource report) and return the PTX it was made from as well."""
    return compile_units({file: expressions}, potential=potential, workers=workers, ptx=ptx, arch=arch,
                         include=include, keep_ptx=keep_ptx)[file]


# the fewest expressions worth an nvcc process of their own (each process parses the headers again)
MIN_CHUNK = 8


def _chunks(expressions: list[str], parts: int) -> list[tuple[tuple[str, ...], list[str]]]:
    """(compiler options, expressions) units: one per option set, each cut into at most `parts`
    consecutive slices of at least MIN_CHUNK expressions."""
    groups: dict[tuple, list[str]] = {}
    for e in expressions:
        groups.setdefault(options(e), []).append(e)
    out = []
    for opts, exprs in groups.items():
        k = max(1, min(parts, len(exprs) // MIN_CHUNK))
        size = -(-len(exprs) // k)
        out += [(opts, exprs[i:i + size]) for i in range(0, len(exprs), size)]
    return out


def compile_units(units: dict[str, list[str]], potential: Potential | None = None, workers: int | None = None,
                  ptx: bool = False, arch: str = ARCH, include: tuple[str, ...] = (),
                  keep_ptx: bool = False) -> dict[str, tuple[int, str, str]]:
    """compile_unit for several files at once (nvcc is one process per unit, each in a temporary
    folder of its own, `workers` at a time): {file: (returncode, compiler output, PTX text if ptx
    else '')}, in the order given. A file's kernels without template parameters compile in each
    of its units: the output reports them once."""
    from concurrent.futures import ThreadPoolExecutor

    workers = max(1, workers or os.cpu_count() or 1)
    jobs = [(file, opts, exprs) for file, all_exprs in units.items() for opts, exprs in _chunks(all_exprs, workers)]
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), workers))) as ex:
        futures = [(file, ex.submit(_compile, file, exprs, ptx, arch, potential, opts, include, keep_ptx))
                   for file, opts, exprs in jobs]
        done = [(file, fut.result()) for file, fut in futures]
    joined: dict[str, tuple[int, str, str]] = {}
    seen: dict[str, set[str]] = {}
    for file, (c, o, x) in done:
        code, out, text = joined.get(file, (0, "", ""))
        head, *blocks = o.split(_ENTRY)
        for b in blocks:
            name = b.split("'")[1] if "'" in b else b
            if name not in seen.setdefault(file, set()):
                seen[file].add(name)
                head += _ENTRY + b
        joined[file] = (max(code, c), out + head, text + x)
    return {file: joined.get(file, (0, "", "")) for file in units}


def _compile(file: str, expressions: list[str], ptx: bool, arch: str, potential: Potential | None,
             opts: tuple[str, ...], include: tuple[str, ...] = (), keep_ptx: bool = False) -> tuple[int, str, str]:
    exe = nvcc()
    if exe is None:
        raise FileNotFoundError("nvcc not found on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        functor = None
        if potential is not None and potential.cuda_source is None:
            functor = potential.cuda_header  # found on the kernels' include path
        elif potential is not None:  # its own text (which includes common.cuh itself)
            functor = "functor_under_test.cuh"
            (Path(tmp) / functor).write_text(potential.cuda_source)
        src = Path(tmp) / "unit.cu"
        src.write_text(translation_unit(file, expressions, functor))
        out = Path(tmp) / ("unit.ptx" if ptx else "unit.cubin")
        cmd = [exe, *opts, f"-arch={arch}", f"-I{KERNEL_DIR}", *(f"-I{d}" for d in include), f"-I{tmp}", "-Xptxas", "-v",
               "-Werror",
               "all-warnings", "-ptx" if ptx else "-cubin", "-o", str(out), str(src)]
        if ptx:
            cmd.remove("-Xptxas"), cmd.remove("-v")
        elif keep_ptx:  # the intermediate files stay in tmp: unit.ptx among them
            cmd[1:1] = ["-keep", f"-keep-dir={tmp}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        made = out if ptx else Path(tmp) / "unit.ptx"
        text = made.read_text() if (ptx or keep_ptx) and made.exists() else ""
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


_ENTRY_PTX = re.compile(r"^\.(?:visible |weak )?\.entry (\w+)\(", re.M)
_FUNC_PTX = re.compile(r"^\.(?:visible |weak )?\.func\s+(?:\([^)]*\)\s*)?(\w+)", re.M)
_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)")


def _bodies(ptx: str, pattern: re.Pattern) -> dict[str, str]:
    """name -> its text, from its header to the closing brace at the start of a line."""
    out = {}
    for m in pattern.finditer(ptx):
        end = ptx.find("\n}", m.start())
        out[m.group(1)] = ptx[m.start(): end + 2 if end >= 0 else len(ptx)]
    return out


def demangle(names: list[str]) -> list[str]:
    """C++ names of mangled ones (c++filt, or the CUDA toolkit's cu++filt)."""
    exe = shutil.which("c++filt") or shutil.which("cu++filt")
    if exe is None:
        raise FileNotFoundError("neither c++filt nor cu++filt is on PATH")
    r = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, check=True)
    return r.stdout.splitlines()[: len(names)]


def entries(ptx: str) -> dict[str, str]:
    """Each kernel's PTX by its template expression as the strategies write it ('verlet_check<float>'):
    the entry's text with every device function it calls (transitively), so that one compiled unit
    answers per specialisation what a unit of its own would."""
    kernels, funcs = _bodies(ptx, _ENTRY_PTX), _bodies(ptx, _FUNC_PTX)
    names = list(kernels)
    out = {}
    for mangled, plain in zip(names, demangle(names)):
        expr = plain.removeprefix("void ").split("(", 1)[0].strip()
        text, todo, seen = [kernels[mangled]], [kernels[mangled]], set()
        while todo:
            for callee in _CALL.findall(todo.pop()):
                if callee in funcs and callee not in seen:
                    seen.add(callee)
                    text.append(funcs[callee])
                    todo.append(funcs[callee])
        out[expr] = "\n".join(text)
    return out


def f64_instructions(ptx: str) -> list[str]:
    """Float64 arithmetic lines in PTX (conversions, moves, loads and stores excluded)."""
    return [m.group(0).strip() for m in _F64.finditer(ptx)]


def main() -> int:
    if nvcc() is None:
        print("nvcc not found on PATH", file=sys.stderr)
        return 2
    bad = 0
    lj = LennardJones()
    for file, (exprs, needs_functor) in specialisations(lj, experimental="--experimental" in sys.argv).items():
        code, out, _ = compile_unit(file, exprs, potential=lj if needs_functor else None)
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
