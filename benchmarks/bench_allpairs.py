"""All-pairs strategies: time per evaluation (device-synchronised) and error against float64."""
from .common import FULL  # noqa: F401  (puts the repository on sys.path)

import reference  # noqa: E402
import strategies  # noqa: E402
from harness import scenarios, verify  # noqa: E402

SIZES = [1000, 32768, 216000] if FULL else [1000]


class AllPairs:
    params = (strategies.names(), SIZES, ["fp32", "mixed", "fp64"])
    param_names = ["strategy", "n", "precision"]
    timeout = 300

    def setup(self, name, n, precision):
        self.strategy = strategies.create(name)
        self.problem = scenarios.make("allpairs_cube", n, seed=1, precision=precision)
        ok, why = self.strategy.supports(self.problem)
        if not ok:
            raise NotImplementedError(why)  # asv marks the point as skipped
        self.plan = self.strategy.prepare(self.problem)
        self.plan.upload()
        self.strategy.compute(self.plan)  # compile and warm up outside the timed call
        self.plan.synchronize()

    def time_compute(self, name, n, precision):
        self.strategy.compute(self.plan)
        self.plan.synchronize()

    def track_force_error(self, name, n, precision):
        out = self.strategy.compute(self.plan).to_host()
        ref = reference.compute(self.problem)
        return verify.compare(out, ref, self.problem)["force_rms"]

    track_force_error.unit = "relative RMS"
