"""Every registered strategy: evaluation time, device event time, error against float64 and
device memory, parameterised by strategy, scenario, size and precision (common.py)."""
from .common import PRECISIONS, SCENARIOS, SIZES, STRATEGIES, prepared, ref

from harness import verify  # noqa: E402
from harness import timing  # noqa: E402  (a module: asv would take time_* functions for benchmarks)

PARAMS = (STRATEGIES, SCENARIOS, SIZES, PRECISIONS)
NAMES = ["strategy", "scenario", "size", "precision"]


class Compute:
    """The device-resident evaluation an MD step pays: bin, force, reduce (no transfers)."""

    params = PARAMS
    param_names = NAMES
    timeout = 600
    number = 1  # one evaluation per sample; asv repeats samples

    def setup(self, name, scenario, size, precision):
        self.s, self.p, self.plan = prepared(name, scenario, size, precision)

    def time_compute(self, name, scenario, size, precision):
        """Wall time of compute() synchronised with the device."""
        self.s.compute(self.plan)
        self.plan.synchronize()

    def track_compute_ms(self, name, scenario, size, precision):
        """Median of compute(): CUDA events on the GPU, the host clock on the CPU."""
        if self.s.backend == "cuda":
            return timing.time_gpu(lambda: self.s.compute(self.plan), warmup=2, repeat=10, min_time=0.1).median
        return timing.time_cpu(lambda: self.s.compute(self.plan), warmup=1, repeat=3, min_time=0.0).median

    track_compute_ms.unit = "ms"

    def track_force_error(self, name, scenario, size, precision):
        """Relative RMS force error against the float64 reference."""
        out = self.s.compute(self.plan).to_host()
        return verify.compare(out, ref(scenario, size), self.p)["force_rms"]

    track_force_error.unit = "relative RMS"


class DeviceMemory:
    """Device memory a GPU strategy holds for the problem (its plan's buffers)."""

    params = PARAMS
    param_names = NAMES
    timeout = 300

    def setup(self, name, scenario, size, precision):
        self.s, self.p, self.plan = prepared(name, scenario, size, precision)
        if self.s.backend != "cuda":
            raise NotImplementedError("device memory: GPU strategies only")

    def track_device_bytes(self, name, scenario, size, precision):
        return int(self.plan.device_bytes)

    track_device_bytes.unit = "bytes"
