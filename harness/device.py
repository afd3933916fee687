"""The device header every report carries: GPU, clocks, driver, CUDA, CuPy, CPU, commit."""
from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# FP32 and FP64 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic
# instruction throughput table). Unknown architectures get no peak and no floor.
LANES = {(7, 0): (64, 32), (7, 5): (64, 2), (8, 0): (64, 32), (8, 6): (128, 2), (8, 7): (128, 2),
         (8, 9): (128, 2), (9, 0): (128, 64), (10, 0): (128, 64), (12, 0): (128, 2)}


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def commit() -> str:
    """Short commit id (+dirty); HARNESS_COMMIT names it where the tree has no .git (a copy
    sent to a GPU node)."""
    if os.environ.get("HARNESS_COMMIT"):  # named by whoever copied the tree: trust it over a stray .git
        return os.environ["HARNESS_COMMIT"]
    rev = _run(["git", "rev-parse", "--short=12", "HEAD"]) if shutil.which("git") else ""
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"]) if rev else ""
    return (rev + ("+dirty" if dirty else "")) or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.cache
def gpu_info() -> dict | None:
    """GPU properties through CuPy; None without a usable device."""
    try:
        import cupy
        from cupy.cuda import runtime

        dev = cupy.cuda.Device()
        props = runtime.getDeviceProperties(dev.id)
    except Exception:
        return None
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    cc = (int(props["major"]), int(props["minor"]))
    sms = int(props["multiProcessorCount"])
    clock_khz = 0
    try:
        clock_khz = int(runtime.deviceGetAttribute(13, dev.id))  # cudaDevAttrClockRate (kHz)
    except Exception:
        pass
    if not clock_khz:
        smi = _run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits", f"--id={dev.id}"])
        clock_khz = int(float(smi) * 1000) if smi.replace(".", "").isdigit() else 0
    lanes = LANES.get(cc)
    peak32 = 2.0 * sms * lanes[0] * clock_khz * 1e3 if lanes and clock_khz else None
    peak64 = 2.0 * sms * lanes[1] * clock_khz * 1e3 if lanes and clock_khz else None
    mem_khz, bus_bits = int(props.get("memoryClockRate", 0) or 0), int(props.get("memoryBusWidth", 0) or 0)
    dram = 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9 if mem_khz and bus_bits else None  # double data rate
    drv = runtime.driverGetVersion()
    rt = runtime.runtimeGetVersion()
    smi_driver = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"--id={dev.id}"])
    return {
        "gpu": name,
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "sms": sms,
        "sm_clock_mhz": clock_khz / 1000.0,
        "memory_gib": round(int(props["totalGlobalMem"]) / 2 ** 30, 1),
        "l2_mib": round(int(props["l2CacheSize"]) / 2 ** 20, 1),
        "driver": smi_driver or f"CUDA {drv // 1000}.{drv % 1000 // 10}",
        "cuda_runtime": f"{rt // 1000}.{rt % 1000 // 10}",
        "cupy": cupy.__version__,
        "peak_fp32_tflops": round(peak32 / 1e12, 1) if peak32 else None,
        "peak_fp64_tflops": round(peak64 / 1e12, 1) if peak64 else None,
        "peak_dram_gbs": round(dram) if dram else None,
    }


def machine_name() -> str:
    """A name for asv's machine that stays the same across nodes of one kind: the GPU's model
    ("nvidia-h200"), or "cpu-" and the CPU's model where there is no GPU. Never the host name,
    which changes from one GPU node to the next."""
    import re

    info = gpu_info()
    text = info["gpu"] if info else "cpu " + _cpu_model()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "unknown"


def host_memory_available() -> int | None:
    """Bytes of host memory free for a new process (Linux MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def host_cpu_seconds(stat: str = "/proc/stat") -> float | None:
    """CPU seconds every process of the host has used since boot (Linux's /proc/stat: user, nice,
    system, irq, softirq and steal time of all cores), None where that file is not there."""
    try:
        with open(stat) as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class HostLoad:
    """What the host's other processes used of its cores while a measurement ran: the host's CPU time
    less this process's own (all its threads: numba's, CUDA's), over the wall time. A CPU strategy's
    threads that find their cores taken wait, and a GPU point's launches with them; its samples can then
    agree with each other and all be slow, which the spread does not show. None off Linux."""

    def __init__(self, stat: str = "/proc/stat"):
        self._stat = stat
        self._wall, self._host, self._own = time.monotonic(), host_cpu_seconds(stat), time.process_time()

    def other_cores(self) -> float | None:
        host = host_cpu_seconds(self._stat)
        wall = time.monotonic() - self._wall
        if host is None or self._host is None or wall <= 0.0:
            return None
        return max(0.0, (host - self._host) - (time.process_time() - self._own)) / wall

    def record(self, row: dict, gpu: bool) -> None:
        """The point's host_other_cores, and host_busy where the others took the cores it needed."""
        other = self.other_cores()
        row["host_other_cores"] = None if other is None else round(other, 2)
        if host_busy(other, point_threads(gpu)):
            row["host_busy"] = True  # its samples may agree and all be slow: the spread cannot show it


def host_busy(other_cores: float | None, threads: int, cores: int | None = None) -> bool:
    """Whether other processes used more of the host's cores than a measurement running `threads`
    threads left free (half a core of slack: /proc/stat counts in ticks)."""
    cores = cores or os.cpu_count() or 1
    return other_cores is not None and other_cores > max(0, cores - threads) + 0.5


def point_threads(gpu: bool) -> int:
    """The host threads a timed point keeps busy: one launching a GPU strategy's kernels, numba's for a CPU one."""
    if gpu:
        return 1
    import numba

    return numba.get_num_threads()


def header() -> dict:
    import numba
    import numpy

    return {
        **(gpu_info() or {"gpu": None}),
        "cpu": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "commit": commit(),
    }


def header_lines(h: dict) -> list[str]:
    if h.get("gpu"):
        gpu = (f"GPU {h['gpu']} (cc {h['compute_capability']}, {h['sms']} SMs, {h['sm_clock_mhz']:.0f} MHz max, "
               f"{h['memory_gib']} GiB, L2 {h['l2_mib']} MiB), driver {h['driver']}, CUDA {h['cuda_runtime']}, "
               f"CuPy {h['cupy']}, FP32 peak {h['peak_fp32_tflops']} TFLOP/s")
    else:
        gpu = "GPU none"
    return [gpu, f"CPU {h['cpu']} ({h['cpu_cores']} cores, numba {h['numba']} with {h['numba_threads']} threads), "
                 f"Python {h['python']}, numpy {h['numpy']}, commit {h['commit']}"]


if __name__ == "__main__":  # `python -m harness.device`: the asv machine name (make asv)
    print(machine_name())
