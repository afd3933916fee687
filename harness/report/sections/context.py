"""The sections around the answer: NVE drift, peers, the roofline and every strategy against the fastest, the claims, the method."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path


from mdcore import PRECISIONS

from .. import verdict as V
from ..render import Plots, Section
from .common import MARKERS, _all_outputs, _device_ms, _family, _fmt, _ok, method_text, _one_per_label, _strategy_family
from .answer import repeat_check


def _drift_cell(r: dict | None) -> str:
    if r is None:
        return ""
    if r.get("status") != "ok" or not isinstance(r.get("drift"), (int, float)):
        return f"{r.get('status', '?')}: {r.get('detail', '')}".strip()
    return f"{r['drift']:+.1e}"


def drift(sec: Section, nve: list[dict]) -> None:
    """The NVE report's table (`harness md --nve-report`): per run (N, steps) and precision, the drift of
    the total energy per particle per tau of every strategy and of the peers on the same start, then,
    per run, fp64 and mixed against the peers' figures and fp32 against the fp64 runs."""
    runs = []  # (n, steps, dt, rows of that run)
    for d in nve:
        by_n = defaultdict(list)
        for r in d.get("rows", []):
            by_n[r.get("n")].append(r)
        runs += [(n, d.get("steps"), d.get("dt"), rows) for n, rows in by_n.items()]
    if not runs:
        return sec.empty("Run `python -m harness md --nve-report --n 4000 --steps 200000 --json nve.json` "
                         "(OpenMM beside it where installed) and give the JSON to the report.")
    runs.sort(key=lambda x: (x[0] or 0, x[1] or 0))
    names = list(dict.fromkeys(r["strategy"] for _, _, _, rows in runs for r in rows))
    names = [s for s in names if not s.startswith("peer:")] + [s for s in names if s.startswith("peer:")]
    precs = [p for p in PRECISIONS if any(r.get("precision") == p for _, _, _, rows in runs for r in rows)]
    sec.text("Drift = the least-squares slope of the total energy per particle per tau over the run (LJ shifted at "
             "the cutoff, every run from one equilibrated start); a peer's precision is its own nearest mode "
             "(OpenMM: single, mixed, double). The last column: the largest deviation of the total energy per particle "
             "from its start in any run of the row, the energy's own fluctuation, which a drift must outgrow to be "
             "seen.")
    table, lines = [], []
    for n, steps, dt, rows in runs:
        tau = f"{steps:,} ({steps * dt:g})" if steps and dt else (steps or "")
        at = {(r["strategy"], r.get("precision")): r for r in rows}
        for p in precs:
            got = [at.get((s, p)) for s in names]
            if not any(got):
                continue
            devs = [r["max_deviation"] for r in got if r and isinstance(r.get("max_deviation"), (int, float))]
            table.append([n, tau, p, *[_drift_cell(r) for r in got], f"{max(devs):.1e}" if devs else ""])
        ok = [r for r in rows if r.get("status") == "ok" and isinstance(r.get("drift"), (int, float))]
        peer = [abs(r["drift"]) for r in ok if r["strategy"].startswith("peer:")]
        own = lambda p: [r for r in ok if not r["strategy"].startswith("peer:") and r.get("precision") == p]
        f64 = [r["drift"] for r in ok if r.get("precision") == "fp64"]  # the peers' double included
        worst = max(own("fp64") + own("mixed"), key=lambda r: abs(r["drift"]), default=None)
        if peer and worst is not None:
            excess = abs(worst["drift"]) - max(peer)
            line = (f"N {n:,}, {tau} steps (tau): the largest fp64 / mixed drift here, {worst['strategy']} "
                    f"{worst['precision']} {worst['drift']:+.1e}, is {'within' if excess <= 0 else 'beyond'} the "
                    f"peers' largest, {max(peer):.1e}")
            if excess > 0 and len(f64) > 1:
                # the fp64 runs integrate the same equations, summed in different orders: the chaos of the
                # trajectories makes their drifts differ by the estimate's own scatter
                spread = max(f64) - min(f64)
                line += (f", by {excess:.1e}: {'inside' if excess <= spread else 'outside'} the spread of the fp64 "
                         f"runs' drifts ({spread:.1e}; the same equations summed in different orders, so the "
                         "estimate's own scatter)")
            lines.append(line + ".")
        if f64 and own("fp32"):
            floor = max(abs(d) for d in f64)
            worse = [r["strategy"] for r in own("fp32") if abs(r["drift"]) > 10.0 * floor]
            lines.append(f"N {n:,}: fp32 " + (f"drifts beyond 10x the largest fp64 drift ({floor:.1e}) for "
                                              f"{', '.join(worse)}" if worse else
                                              f"stays within 10x the largest fp64 drift ({floor:.1e}) for every "
                                              "strategy") + ".")
    sec.table(["N", "steps (tau)", "precision", *names, "largest deviation / particle"], table, as_text=True)
    for line in lines:
        sec.text(line)


def peers(sec: Section, bench: list[dict]) -> None:
    rows = [r for r in bench if r.get("backend") == "peer"]
    if not rows:
        return sec.empty("Run `make bench ARGS=\"--peers openmm,jaxmd\"` with the peers installed "
                         "(`make setup EXTRAS=test,bench,peers`).")
    mine = {(r["scenario"], r["n"], r["precision"]): r for r in sorted(_all_outputs(_ok(bench)), key=lambda r: -_device_ms(r))}
    table = []
    for r in rows:
        best = mine.get((r["scenario"], r["n"], r["precision"]))
        if r["status"] != "ok":
            table.append([r["strategy"], r["scenario"], r["n"], r["precision"], r["status"], "", "", "", r.get("detail", "")])
            continue
        table.append([r["strategy"], r["scenario"], r["n"], r["precision"], r.get("platform", ""),
                      _fmt(r.get("force_ms")), _fmt(r.get("step_ms") or r.get("update_ms")),
                      f"{best['strategy']} {_device_ms(best):.4g} ms" if best else "",
                      f"force err {r['force_rms_err']:.1e}; {r.get('includes', '')}"])
    sec.text("Peers on exactly the same positions, box and cutoff, checked against the reference; what each time "
             "includes is in the last column.")
    sec.table(["peer", "scenario", "N", "precision", "platform", "force ms", "step/update ms",
               "fastest strategy here", "notes"], table)


def issue_bound_ms(profile: dict) -> float | None:
    """The least time the profiled phase's warp instructions take at one issue per scheduler per
    cycle (4 schedulers per SM on the GPUs this harness targets) at the device's reported clock."""
    dev = profile.get("device") or {}
    sms, mhz = dev.get("sms"), dev.get("sm_clock_mhz")
    inst = sum(k.get("inst_executed") or 0.0 for k in (profile.get("ncu") or {}).get("kernels", []))
    if not (sms and mhz and inst):
        return None
    return inst / (4.0 * sms * mhz * 1e6) * 1e3


PEER_FORCE_KERNELS = {"peer:openmm": "computeNonbonded"}  # the kernel of a peer's step that is its force kernel


def _peer_force_kernel(profile: dict) -> tuple[dict, float] | None:
    """(ncu summary, median ms) of the force kernel in a peer's profiled MD step: the launch
    whose duration is the median of that kernel's launches; None for a strategy's profile or a
    peer without that kernel."""
    name = PEER_FORCE_KERNELS.get(profile.get("strategy", ""))
    launches = [k for k in (profile.get("ncu") or {}).get("kernels", []) if k.get("kernel") == name]
    if not launches:
        return None
    launches.sort(key=lambda k: k.get("duration_ns") or 0.0)
    k = launches[(len(launches) - 1) // 2]
    return k, (k.get("duration_ns") or 0.0) / 1e6


def roofline(sec: Section, plots: Plots, bench: list[dict], devices: list[dict], profiles: list[dict]) -> None:
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("gflops") and r.get("eff_bandwidth_gbs") and r["backend"] == "cuda"]
    dev = next((d for d in devices if d.get("peak_fp32_tflops")), None)
    if rows and dev:
        plt = plots.plt
        fig, ax = plt.subplots(figsize=(10, 5.5))
        peak = dev["peak_fp32_tflops"] * 1e3
        bw = dev.get("peak_dram_gbs") or 1.0
        xs = [r["gflops"] / r["eff_bandwidth_gbs"] for r in rows]
        lo, hi = min(xs) / 3, max(xs) * 3
        grid = [lo * (hi / lo) ** (i / 50) for i in range(51)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], "k-", lw=1.2)
        largest = {}
        for r in rows:
            key = (r["strategy"], r["scenario"])
            if key not in largest or r["n"] > largest[key]["n"]:
                largest[key] = r
        # colour: strategy family (traversal); marker: scenario family; one legend entry for each
        fams = sorted({_strategy_family(r) for r in largest.values()})
        scens = sorted({_family(r["scenario"]) for r in largest.values()})
        import matplotlib

        colour = {f: matplotlib.colormaps["tab10"](i % 10) for i, f in enumerate(fams)}
        marker = {sc: MARKERS[i % len(MARKERS)] for i, sc in enumerate(scens)}
        for r in largest.values():
            ax.scatter(r["gflops"] / r["eff_bandwidth_gbs"], r["gflops"], s=22, color=colour[_strategy_family(r)],
                       marker=marker[_family(r["scenario"])], edgecolors="red" if r.get("noisy") else "none")
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color="k", lw=1.2, label=f"ceilings: FP32 {peak:.0f} GFLOP/s, DRAM {bw:.0f} GB/s")]
        handles += [Line2D([], [], ls="", marker="o", color=colour[f], label=f"strategy family: {f}") for f in fams]
        handles += [Line2D([], [], ls="", marker=marker[sc], color="0.4", label=f"scenario: {sc}") for sc in scens]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (flop per byte of positions in + forces out)")
        ax.set_ylabel("achieved GFLOP/s (AutoPas flop counts)")
        ax.set_title(f"Roofline, {dev.get('gpu')} (largest N per strategy and scenario; red edge: noisy)")
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        sec.image(plots.save(fig, "roofline"), "Each strategy's compute phase against the GPU's FP32 and DRAM ceilings, "
                                               "coloured by strategy family and marked by scenario")
    if profiles:
        floors = {(r["strategy"].split("[")[0], r["scenario"], r["n"], r.get("outputs", "all"), r["precision"]):
                  r["floor_ms"] for r in _ok(bench) if r.get("floor_ms") and r.get("backend") == "cuda"}
        table = []
        for d in profiles:
            k, label, ms, bound = d["ncu"]["heaviest"], d["strategy"], d["ncu"]["total_duration_ms"], issue_bound_ms(d)
            force = _peer_force_kernel(d)
            if force is not None:  # a peer's whole MD step was profiled: its nonbonded kernel, per evaluation
                k, ms = force
                label = f"{d['strategy']} ({k['kernel']})"
                bound = issue_bound_ms({**d, "ncu": {"kernels": [k]}})
            c = d.get("crosscheck") or {}  # a peer's profile has no event timing to check against
            floor = floors.get((d["strategy"], d["scenario"], d.get("n"), d.get("outputs", "all"), d.get("precision")))
            table.append([label, d["scenario"], d.get("n", d.get("size")), d.get("outputs", "all"),
                          _fmt(ms), _fmt(bound), _fmt(floor),
                          _fmt(k.get("issue_active_pct"), 3), _fmt(d.get("warp_inst_per_32_checks"), 3),
                          _fmt(k.get("achieved_occupancy_pct"), 3), _fmt(k.get("sm_throughput_pct"), 3),
                          _fmt(k.get("dram_throughput_pct"), 3), _fmt(k.get("l1_hit_pct"), 3), _fmt(k.get("l2_hit_pct"), 3),
                          _fmt(k.get("registers_per_thread")), ", ".join(n for n, _ in k.get("top_stalls", [])),
                          V._bound(k, V._sms(d)), f"{c['ratio']:.3f}" if c.get("ratio") else ""])
        sec.text("Nsight Compute summaries (heaviest kernel of the force phase; for a peer, whose whole MD step is "
                 "profiled, its nonbonded kernel: median duration over the evaluations) and the timing cross-check "
                 "(sum of kernel durations / event-timed force phase). 'issue bound': the phase's warp "
                 "instructions issued at one per scheduler per cycle (4 per SM) at the clock the device reports, "
                 "the least time those instructions can take; 'FP32 floor': the pair work's flops (AutoPas counts) "
                 "at the FP32 peak, from a bench row of the same point where one is given; 'warp instr. / 32 checks': "
                 "warp instructions per 32 distance checks; 'bound': named from the issue slots and DRAM "
                 "throughput, as in the verdict.")
        sec.table(["strategy", "scenario", "N", "outputs", "ncu ms", "issue bound ms", "FP32 floor ms", "issue %",
                   "warp instr. / 32 checks", "occupancy %", "SM %", "DRAM %", "L1 hit %", "L2 hit %", "regs",
                   "top stalls", "bound", "ncu/events"], table)
    _against_fastest(sec, bench, profiles)
    if not rows and not profiles:
        sec.empty("Run `make bench` on a GPU, and `make profile` for ncu summaries.")


FASTEST_FACTOR = 3.0  # every strategy within 3x of the fastest, or its measured bound named


PROFILE_REACH = 8.0  # a profile this many times away in N still names a strategy's bound in that table (with its N)


def _base(r: dict) -> str:
    """The strategy's name without its launch parameters."""
    return r["strategy"].split("[")[0]


def _against_fastest(sec: Section, bench: list[dict], profiles: list[dict]) -> None:
    """At the largest LJ liquid point timed on the GPU (per device, fp32, all outputs): every
    strategy's best time against the fastest's, and for those more than FASTEST_FACTOR behind the
    bound its ncu summary names (a profile of that strategy near that N), or the command that
    would measure it."""
    rows = [r for r in _all_outputs(_ok(bench)) if r.get("backend") == "cuda" and r.get("precision") == "fp32"
            and _family(r["scenario"]) == "lj_liquid"]
    for dev in sorted({r["_device"].get("gpu", "") for r in rows}):
        at = [r for r in rows if r["_device"].get("gpu", "") == dev]
        n = max(r["n"] for r in at)
        best = sorted(_one_per_label([r for r in at if r["n"] == n], label=_base), key=_device_ms)
        if len(best) < 2:
            continue
        fastest = _device_ms(best[0])
        table = []
        for r in best:
            base, ratio = _base(r), _device_ms(r) / fastest
            # a kernel's bound (its grid, its stalls) rarely changes within 8x in N; the row names the N
            prof = V._profile_for(profiles, base, "lj_liquid", n, "all", within=PROFILE_REACH)
            if prof is not None:
                why = f"{V._bound(prof['ncu']['heaviest'], V._sms(prof))}, ncu at N={prof.get('n', prof.get('size'))}"
            elif ratio > FASTEST_FACTOR:
                why = f"no profile given: `python -m harness profile --strategy {base} --scenario lj_liquid --n {n}`"
            else:
                why = ""
            table.append([base, r["strategy"], _fmt(_device_ms(r)), f"{ratio:.2f}x",
                          ratio <= FASTEST_FACTOR, why])
        named = sum(1 for t in table if not t[4] and not t[5].startswith("no profile"))
        behind = sum(1 for t in table if not t[4])
        sec.text(f"Every strategy against the fastest at the largest LJ liquid point ({dev}, N={n:,}, fp32, all "
                 f"outputs, the verdict's time; each strategy's fastest launch): {len(table) - behind} within "
                 f"{FASTEST_FACTOR:g}x, {behind} further behind, {named} of those with the bound a profile names.")
        sec.table(["strategy", "fastest launch", "ms", "x fastest", f"within {FASTEST_FACTOR:g}x",
                   "bound (ncu, force phase)"], table)


def claims(sec: Section, paths: list) -> None:
    """The source documents' claims answered from this report's inputs (harness.claims: rows of one run
    compared, verdicts computed)."""
    from ... import claims as C

    rows = C.evaluate(C.load([Path(p) for p in paths]))
    measured = [r for r in rows if r["verdict"] != C.UNMEASURED]
    sec.text(f"Each claim the source documents make that this harness can test, with the measurement that tests it and "
             f"a verdict computed from this report's inputs ({len(measured)} of {len(rows)} measured here; rows are "
             f"compared only within one run, a tie is within 5% or the rows' interquartile range). "
             f"`python -m harness claims FOLDER` answers them from every result in a folder.")
    sec.table(["claim", "seed", "measurement", "verdict", "why", "reproduce"],
              [[r["text"], r["seed"], f"{r['measure']}: {r['measured']}" if r["measured"] else r["measure"],
                r["verdict"], r["why"], r["command"]] for r in rows])


def method(sec: Section, data: dict, bench: list[dict], links: list[tuple[str, str]] | None = None) -> None:
    devices = [d["device"] for d in data["bench"]] + [d.get("device", {}) for d in data["verify"]]
    seen = set()
    commits = sorted({str(d.get("commit")) for d in devices if d and d.get("commit")})
    for dev in devices:  # one line per device as the line reads (runs differ in fields it does not show)
        if not dev:
            continue
        gpu = dev.get("gpu") or "no GPU"
        line = (f"Device: {gpu}" + (f" (cc {dev.get('compute_capability')}, {dev.get('sms')} SMs, "
                                    f"{dev.get('sm_clock_mhz', 0):.0f} MHz, driver {dev.get('driver')}, CUDA "
                                    f"{dev.get('cuda_runtime')}, CuPy {dev.get('cupy')})" if dev.get("gpu") else "")
                + f"; CPU {dev.get('cpu')} ({dev.get('cpu_cores')} cores).")
        if line not in seen:
            seen.add(line)
            sec.text(line)
    if commits:
        sec.text("Commits of the results: " + ", ".join(commits) + ".")
    cmds = [[d.get("meta", {}).get("date", ""), d.get("meta", {}).get("command", "(not recorded)")]
            for d in data["bench"] + data["verify"]]
    cmds += [["", d.get("command", "")] for d in data["profile"]]
    sec.table(["date", "command"], cmds)
    if data.get("renamed"):
        sec.text("Results of an earlier schema name strategies by their first-release names; shown under the current "
                 "names: " + ", ".join(f"{a} as {b}" for a, b in sorted(data["renamed"].items())) + ".")
    for d in data["bench"]:
        note = d.get("meta", {}).get("note")
        if note:
            sec.text(f"Note recorded with the results of `{d.get('meta', {}).get('command', '?')[:90]}...`: {note}")
    resumed = [d.get("meta", {}).get("resumed") for d in data["bench"] if d.get("meta", {}).get("resumed")]
    if resumed:
        sec.text(f"Resumed runs: {', '.join(map(str, resumed))} points were taken from the partial file of an "
                 f"interrupted run on a machine of the same GPU, CPU and commit (`--resume` checks these).")
    rep = repeat_check(bench)
    if rep:
        n, agree, worst = rep
        sec.text(f"Timing repeatability: {n} points were timed twice in one run; in {agree} of them each median "
                 f"lies inside the other's min..max; the largest ratio of the two medians is {worst:.2f}.")
    sec.text(method_text(any(r.get("backend") == "cuda" and r.get("status") == "ok" for r in bench)))
    sec.text("Inputs: " + ", ".join(data["files"]))
    if links:
        sec.link_list("Input files", links)
