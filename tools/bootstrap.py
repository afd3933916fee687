"""Create the project's virtual environment with what a make target needs, or download a
wheelhouse for offline nodes. Standard library only (the Makefile runs it with the system Python).

    python tools/bootstrap.py venv [--venv .venv] [--extras test,bench] [--gpu auto|yes|no]
    python tools/bootstrap.py wheelhouse [--dest wheelhouse] [--python-version 3.12] [--only nvtx,asv]

`venv` installs only what is missing: requirements/base.txt (numpy, numba, pandas: what `make
verify` needs) plus the named extras (test: pytest, pytest-xdist, hypothesis; bench: tqdm, matplotlib, asv; cluster: Dask), and
CuPy where nvidia-smi finds a GPU. Where the system Python already has the scientific stack (GPU
images ship numpy, numba, CuPy, sometimes inside a venv of their own), the new venv sees those
packages, and a package already importable is never installed again. Packages marked optional
(nvtx: the harness falls back to CuPy's NVTX binding, or none) are tried and skipped on failure.
A package that is missing and cannot be installed (an offline node without a wheelhouse) stops
the set-up within seconds, with one line naming the packages and the command that fetches them.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQ = ROOT / "requirements"
EXTRAS = ("test", "gpu", "bench", "report", "peers", "cluster")
# peers are optional and large (jaxlib): not in the wheelhouse; cluster-gpu: dask-cuda, with cluster on a GPU node
WHEELHOUSE_EXTRAS = ("test", "gpu", "bench", "cluster", "cluster-gpu")
# distribution -> module it provides, where the two differ
MODULES = {"asv-runner": "asv_runner", "jax-md": "jax_md", "pytest-xdist": "xdist", "dask-cuda": "dask_cuda"}
OPTIONAL = {"nvtx"}  # the harness runs without it (NVTX through CuPy, or no ranges)


def log(msg: str) -> None:
    print(f"[bootstrap] {msg}", flush=True)


def driver_cuda_major() -> int | None:
    """CUDA major version the driver supports, from nvidia-smi; None without a GPU."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"CUDA Version:\s*(\d+)\.", out)
    return int(m.group(1)) if m else None


def has_module(python: str, module: str) -> bool:
    code = f"import importlib.util,sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", code], capture_output=True).returncode == 0


def missing_modules(python: str, modules: list[str]) -> set[str]:
    """The modules `python` cannot find, in one process."""
    code = ("import importlib.util,sys\n"
            f"print('\\n'.join(m for m in {modules!r} if importlib.util.find_spec(m) is None))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return {line for line in r.stdout.split() if line}


def requirement_files(extras: list[str]) -> list[Path]:
    return [REQ / "base.txt"] + [REQ / f"{e}.txt" for e in extras]


def requirements(files: list[Path]) -> list[str]:
    """Requirement lines (name and version specifier) of the files, comments dropped."""
    out = []
    for f in files:
        for line in f.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


def distribution(req: str) -> str:
    return re.split(r"[<>=!~ \[]", req, maxsplit=1)[0]


def module_of(req: str) -> str:
    dist = distribution(req)
    if dist.startswith("cupy-"):
        return "cupy"
    return MODULES.get(dist, dist.replace("-", "_"))


def stamp_of(files: list[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for f in files + [Path(__file__)]:
        h.update(f.read_bytes())
    return h.hexdigest()


def wheel_args(wheelhouse: Path) -> list[str]:
    if wheelhouse.is_dir() and any(wheelhouse.glob("*.whl")):
        log(f"installing offline from {wheelhouse}")
        return ["--no-index", "--find-links", str(wheelhouse)]
    # no wheelhouse: the index, without the retries that make an offline node wait minutes
    return ["--retries", "0", "--timeout", "5"]


def create(venv: Path, reuse: bool) -> Path:
    python = venv / "bin" / "python"
    if python.exists():
        return python
    log(f"creating {venv} ({'seeing this Python' + chr(39) + 's packages' if reuse else 'isolated'})")
    cmd = [sys.executable, "-m", "venv", str(venv)]
    if reuse:
        cmd.append("--system-site-packages")
    subprocess.run(cmd, check=True)
    if reuse and sys.prefix != sys.base_prefix:
        # This Python is itself a venv: --system-site-packages would expose only its base
        # interpreter's packages, so link this venv's site-packages explicitly.
        site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        (site / "_parent_venv.pth").write_text("\n".join(sorted(paths)) + "\n")
    return python


def cmd_venv(args: argparse.Namespace) -> int:
    venv = Path(args.venv).resolve()
    extras = [e for e in args.extras.split(",") if e]
    for e in extras:
        if e not in EXTRAS:
            log(f"unknown extra {e!r}; known: {', '.join(EXTRAS)}")
            return 2
    cuda = driver_cuda_major() if args.gpu != "no" else None
    want_gpu = args.gpu == "yes" or (args.gpu == "auto" and cuda is not None)
    if want_gpu and "gpu" not in extras:
        extras.append("gpu")
    if want_gpu and "cluster" in extras:
        extras.append("cluster-gpu")  # dask-cuda: a worker per GPU
    files = requirement_files(extras)
    # the system's scientific stack is reused where it exists (GPU images); CI's fresh Python
    # has none of it and gets an isolated venv
    reuse = not args.isolated and (has_module(sys.executable, "cupy") or has_module(sys.executable, "numba"))
    stamp = venv / f".bootstrap-{'-'.join(sorted(extras)) or 'base'}"
    key = stamp_of(files, f"{extras}{cuda}{reuse}{sys.executable}")
    python = venv / "bin" / "python"
    if stamp.exists() and stamp.read_text() == key and python.exists():
        return 0
    python = create(venv, reuse)

    reqs = requirements(files)
    if want_gpu:
        reqs.append(f"cupy-cuda{13 if (cuda or 12) >= 13 else 12}x")
    absent = missing_modules(str(python), [module_of(r) for r in reqs])
    need = [r for r in reqs if module_of(r) in absent]
    if need:
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"] + wheel_args(Path(args.wheelhouse))
        required = [r for r in need if distribution(r) not in OPTIONAL]
        optional = [r for r in need if distribution(r) in OPTIONAL]
        if required:
            log("installing " + " ".join(required))
            r = subprocess.run(pip + required, capture_output=True, text=True)
            if r.returncode != 0:
                names = ",".join(distribution(x) for x in required)
                last = (r.stderr.strip().splitlines() or ["pip failed"])[-1]
                print(f"bootstrap: cannot install {names} ({last}); on a machine with network run "
                      f"`make wheelhouse PY={sys.version_info.major}.{sys.version_info.minor} WHEELS={names}` and copy "
                      f"wheelhouse/ next to the Makefile here", file=sys.stderr)
                return 2
        for opt in optional:
            r = subprocess.run(pip + [opt], capture_output=True, text=True)
            log(f"optional {distribution(opt)}: " + ("installed" if r.returncode == 0 else "not installed (runs without)"))
    stamp.write_text(key)
    log(f"ready: {python}" + ("" if want_gpu else " (no GPU found: CPU strategies only)"))
    return 0


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    dest = Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    tag = args.python_version.replace(".", "")
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"]
    reqs: list[str] = []
    if args.only:  # only what the node lacks (GPU images ship numpy, numba, CuPy...), with dependencies
        reqs = [r.strip() for r in args.only.split(",") if r.strip()]
    else:
        for f in requirement_files(list(WHEELHOUSE_EXTRAS)):
            reqs += ["-r", str(f)]
        reqs += [f"cupy-cuda{args.cuda}x", "pip", "setuptools", "wheel"]
    cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(dest),
           "--python-version", args.python_version, "--implementation", "cp", "--abi", f"cp{tag}",
           "--abi", "abi3", "--abi", "none"]
    for p in platforms:
        cmd += ["--platform", p]
    log(f"downloading wheels for CPython {args.python_version} into {dest}")
    subprocess.run(cmd + reqs, check=True)
    log(f"{len(list(dest.glob('*.whl')))} wheels in {dest}; copy that folder next to the Makefile on the node")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("venv", help="create or update the virtual environment")
    v.add_argument("--venv", default=".venv")
    v.add_argument("--extras", default="", help=f"comma list of {', '.join(EXTRAS)}")
    v.add_argument("--gpu", choices=("auto", "yes", "no"), default="auto")
    v.add_argument("--wheelhouse", default=str(ROOT / "wheelhouse"))
    v.add_argument("--isolated", action="store_true", help="do not see the system Python's packages")
    w = sub.add_parser("wheelhouse", help="download every wheel the project needs")
    w.add_argument("--dest", default=str(ROOT / "wheelhouse"))
    w.add_argument("--python-version", default=f"{sys.version_info.major}.{sys.version_info.minor}")
    w.add_argument("--cuda", default="13", choices=("12", "13"))
    w.add_argument("--only", help="comma list of packages to download (with their dependencies) instead of every "
                   "requirement: what the node lacks, e.g. nvtx,asv,asv-runner,tqdm")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    return cmd_venv(args) if args.cmd == "venv" else cmd_wheelhouse(args)


if __name__ == "__main__":
    sys.exit(main())
