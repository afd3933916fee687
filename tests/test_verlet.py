"""Verlet lists: the list, its rebuild trigger, overflow and the negative control (CPU here; the
GPU strategy in the tests marked gpu)."""
from dataclasses import replace

import numpy as np
import pytest

import reference
import strategies
from harness import md, scenarios, verify
from mdcore import InputError, Problem, StrategyError


def _problem(precision="fp64", n=4000, spec="lj_liquid", seed=2):
    p = scenarios.make(spec, n, seed=seed, precision=precision)
    return replace(p, potential=replace(p.potential, shift=True))


def _moved(p: Problem, positions) -> Problem:
    return Problem.make(positions, p.box, p.potential, p.precision, label=p.label)


@pytest.mark.parametrize("name", strategies.select(traversal="verlet"))
def test_declares_a_reusable_list(name):
    cls = strategies.REGISTRY[name]
    assert cls.list_reuse and not cls.newton3 and cls.deterministic
    assert strategies.create(name).launch["skin"] == 0.3


def test_the_trigger_is_half_the_skin():
    """Rebuild exactly when some particle moved more than skin/2 since the build (minimum image:
    a particle wrapped across the box has not moved far)."""
    p = _problem()
    s = strategies.create("verlet_thread_cpu")
    plan = s.prepare(p)
    plan.upload()
    s.compute(plan)
    assert plan.needs_rebuild() is False
    for shift, want in ((0.149, False), (0.151, True)):
        plan.pos[:] = plan.ref
        plan.pos[17, 0] += plan.real(shift)
        assert plan.needs_rebuild() is want, shift
    plan.pos[:] = plan.ref
    L = p.box.array.astype(plan.real)
    plan.pos[17, 1] += L[1]  # one box length: the same place
    assert plan.needs_rebuild() is False


def test_step_rebuilds_only_when_needed_and_matches_the_reference():
    p = _problem(n=500)
    s = strategies.create("verlet_thread_cpu")
    res = md.run(s, p, steps=200, dt=0.005, sample=50, seed=3)
    assert 1 < res.rebuilds < 200
    ref = md.run(strategies.create("fullshell_thread_cpu"), p, steps=200, dt=0.005, sample=50, seed=3)
    for a, b in zip(ref.samples, res.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)


def _stale_run(name: str, p: Problem, steps: int = 150):
    """`steps` MD steps (T 2.0) with the list kept from the start (rebuild=never): the result of
    the last positions on that list (all outputs) and those positions."""
    from strategies.integrate import Integrator

    s = strategies.create(name, rebuild="never")
    plan = s.prepare(p)
    plan.upload()
    integ = Integrator.create(plan, p.positions, md.maxwell_boltzmann(p.n, 2.0, np.random.default_rng(1)), 0.005)
    out = s.compute(plan)
    for _ in range(steps):
        integ.kick_drift(out.forces)
        out = s.step(plan)
        integ.kick(out.forces)
    plan.set_outputs("all")
    return s.compute_built(plan).to_host(), integ.positions()


def test_a_stale_list_is_caught_the_negative_control():
    """rebuild=never keeps the first list: after the particles have moved further than skin/2
    its forces miss pairs, and the comparison with the reference fails, as verify must."""
    p = _problem(n=500)
    got, positions = _stale_run("verlet_thread_cpu", p)
    moved = _moved(p, positions)
    d = positions - p.positions
    d -= p.box.array * np.rint(d / p.box.array)
    assert np.sqrt((d * d).sum(axis=1)).max() > 0.15  # further than skin/2
    ref = reference.compute(moved)
    assert got.pairs != ref.pairs
    failures = verify.compare(got, ref, moved)["failures"]
    assert any("pair" in f for f in failures), failures  # verify's own verdict: a FAIL
    fresh = strategies.create("verlet_thread_cpu").evaluate(moved)  # a new list: right again
    assert fresh.pairs == ref.pairs


def test_a_row_longer_than_its_capacity_is_an_error_never_a_truncation():
    p = _problem(n=500)
    with pytest.raises(StrategyError, match=r"neighbours within 2.8 \(cutoff \+ skin\), more than the list's capacity 5"):
        strategies.create("verlet_thread_cpu", cap=5).evaluate(p)


@pytest.mark.parametrize("launch, message", [({"skin": -0.1}, "skin must be a finite number >= 0"),
                                             ({"cap": -1}, "cap must be a whole number >= 0"),
                                             ({"rebuild": "sometimes"}, "rebuild=")])
def test_bad_launch_parameters(launch, message):
    with pytest.raises(InputError, match=message):
        strategies.create("verlet_thread_cpu", **launch)


def test_a_skin_too_large_for_the_box_is_not_applicable():
    p = _problem(n=256)  # side 6.7: 2 (2.5 + skin) must fit
    ok, why = strategies.create("verlet_thread_cpu", skin=1.0).supports(p)
    assert not ok and "twice the list radius" in why


def test_the_force_kernel_launch_knobs_resolve_per_output_flavour():
    """minb and batch 'auto': each flavour its measured choice; the cap is dropped where its blocks
    would not fit on an SM, and an explicit impossible cap is refused; batch is whole groups of 4
    entries."""
    from mdcore.potentials import LennardJones
    from strategies.verlet import AUTO_BATCH, AUTO_BATCH_ENTRIES, AUTO_MINB

    lj = LennardJones(cutoff=2.5)
    s = strategies.create("verlet_thread_padded")
    for energy in (False, True):
        expr = s.force_expression("fp32", lj, energy, True, 1)
        assert expr.endswith(f", {AUTO_MINB[energy]}, {AUTO_BATCH[energy]}, false>"), expr
        # several lanes per row split it by entries ('auto'), with fewer entries in flight
        expr = s.force_expression("fp32", lj, energy, True, 4)
        assert expr.endswith(f", {AUTO_MINB[energy]}, {AUTO_BATCH_ENTRIES}, true>"), expr
    assert strategies.create("verlet_thread_padded", split="groups").force_expression(
        "fp32", lj, False, True, 4).endswith(f", {AUTO_BATCH[False]}, false>")
    # two lanes per row: by groups unless asked (by entries it spills under the register cap)
    assert s.force_expression("fp32", lj, False, True, 2).endswith(", false>")
    assert strategies.create("verlet_thread_padded", split="entries").force_expression(
        "fp32", lj, False, True, 2).endswith(", true>")
    # 'auto' keeps the measured threads per SM at every block size (a count of blocks capped 8 blocks
    # of 256 at 32 registers, and the kernel spilled); none where the sums are not float
    assert AUTO_MINB == {False: 10, True: 8}  # the table below is theirs at 128 threads a block
    for block, caps in {64: (20, 16), 128: (10, 8), 256: (5, 4), 512: (2, 2)}.items():
        s = strategies.create("verlet_thread_padded", block=block)
        assert (s.register_cap(False), s.register_cap(True)) == caps, block
    assert strategies.create("verlet_thread_padded", block=512).register_cap(False, "double") == 0
    # layout=packed: its own measured choice (a cap of 12 blocks and 16 entries in flight for forces, 8 and 16 with
    # energy), kept as threads per SM at other block sizes; an explicit choice wins
    from strategies.verlet import AUTO_BATCH_PACKED, AUTO_MINB_PACKED
    packed = strategies.create("verlet_thread_padded", layout="packed")
    for energy in (False, True):
        assert packed.force_expression("fp32", lj, energy, True, 1).endswith(
            f", {AUTO_MINB_PACKED[energy]}, {AUTO_BATCH_PACKED[energy]}, false>")
    assert AUTO_MINB_PACKED == {False: 12, True: 8}
    # the fused MD steps' kernels keep the general table (measured slower under the packed forces cap)
    assert packed.force_expression("fp32", lj, False, True, 1, md=2).endswith(
        f", {AUTO_MINB[False]}, {AUTO_BATCH[False]}, false, 2>")
    assert strategies.create("verlet_thread_padded", layout="packed", block=256).register_cap(False) == 6
    assert strategies.create("verlet_thread_padded", layout="packed", minb=10, batch=8).force_expression(
        "fp32", lj, False, True, 1).endswith(", 10, 8, false>")
    assert strategies.create("verlet_thread_padded", minb=8, batch=16).force_expression(
        "fp32", lj, True, True, 1).endswith(", 8, 16, false>")
    with pytest.raises(InputError, match="split"):
        strategies.create("verlet_thread_padded", split="rows")
    with pytest.raises(InputError, match="unknown launch parameter"):
        strategies.create("verlet_thread_padded", row_groups=3)  # a dropped design: docs/decisions/
    with pytest.raises(InputError, match="batch"):
        strategies.create("verlet_thread_padded", batch=4)
    with pytest.raises(InputError, match="do not fit on one SM"):
        strategies.create("verlet_thread_padded", minb=16, block=256)


def test_threads_per_row_auto_follows_the_size(monkeypatch):
    """tpp=0 (the default): about 1024 resident threads per SM, rounded down to a power of two, at
    most 16 (measured: 16 at 4,000 particles, 4 at 32,000, 1 from 256,000 on, 132 SMs); CI checks
    the kernels of its two ends one by one, and every tpp the rule takes compiles with expressions()."""
    from mdcore.potentials import LennardJones
    from strategies import cuda
    from strategies.verlet import AUTO_TPP_MOST

    monkeypatch.setattr(cuda, "sm_count", lambda: 132)
    assert [cuda.auto_tpp(n, AUTO_TPP_MOST, round_up=False) for n in (100, 4000, 32000, 256000, 1_048_576)] == \
        [16, 16, 4, 1, 1]
    assert [cuda.auto_tpp(n, 32) for n in (4000, 32000, 1_048_576)] == [32, 8, 1]  # the full shell's, rounded up
    s = strategies.create("verlet_thread_padded")
    assert s.launch["tpp"] == 0 and s.tpps() == (1, 2, 4, 8, 16)
    lj = LennardJones(cutoff=2.5)
    assert {e.split(", ")[5] for e in s.default_expressions(lj)} == {"1", "16"}
    assert {e.split(", ")[5] for e in s.expressions(lj)} == {"1", "2", "4", "8", "16"}  # what the size rule takes
    assert "32" in {e.split(", ")[5] for e in s.expressions(lj, experimental=True)}  # tpp=32 by name only
    assert strategies.create("verlet_thread_padded", tpp=8).tpps() == (8,)


def test_the_automatic_build_follows_the_measured_crossovers():
    from strategies.verlet import CELL_BUILD_FULLEST, CELL_BUILD_MAX, WARP_ROWS_PER_SM, build_kind

    sms = 132
    assert build_kind("auto", 4000, sms) == "warp" and build_kind("auto", WARP_ROWS_PER_SM * sms, sms) == "warp"
    assert build_kind("auto", WARP_ROWS_PER_SM * sms + 1, sms) == "cell" and build_kind("auto", 64_000, sms) == "cell"
    assert build_kind("auto", CELL_BUILD_MAX, sms) == "strip" and build_kind("auto", 256_000, sms) == "strip"
    assert build_kind("auto", 1_048_576, sms) == "strip"
    assert build_kind("warp", 1_048_576, sms) == "warp"  # an explicit choice is kept
    # a crowded cell (a clump) keeps a warp per cell busy: a thread per row instead, walking opposite
    # columns together (measured 8-10% ahead of the plain strip walk on two crowded inputs)
    assert build_kind("auto", 64_000, sms, fullest=CELL_BUILD_FULLEST) == "cell"
    assert build_kind("auto", 64_000, sms, fullest=CELL_BUILD_FULLEST + 1) == "opposite"
    assert build_kind("auto", 24_000, sms, fullest=500) == "opposite"
    assert build_kind("auto", 262_144, sms, 500) == "opposite"
    assert build_kind("auto", 4000, sms, fullest=500) == "warp" and build_kind("cell", 64_000, sms, 500) == "cell"


@pytest.mark.gpu
@pytest.mark.parametrize("launch", [{"batch": 8}, {"batch": 16}, {"batch": 16, "tpp": 4}, {"minb": 0, "batch": 8},
                                    {"minb": 16, "batch": 16}, {"batch": 16, "tpp": 4, "split": "entries"},
                                    {"batch": 16, "tpp": 2, "split": "entries"},
                                    {"minb": 0, "tpp": 8, "split": "entries"},
                                    {"batch": 16, "tpp": 32, "split": "entries"}])
def test_gpu_force_kernel_knobs_give_the_same_sums(launch):
    """batch and minb change how the loop is scheduled, never the order of the sums: the same bits."""
    p = _problem("fp32", n=4000)
    base = strategies.create("verlet_thread_padded", tpp=launch.get("tpp", 1),
                             split=launch.get("split", "auto")).evaluate(p)
    got = strategies.create("verlet_thread_padded", **{"tpp": 1, **launch}).evaluate(p)  # the same tpp as base
    assert got.pairs == base.pairs
    assert np.array_equal(got.forces, base.forces) and got.energy == base.energy


GPU_LISTS = strategies.select(traversal="verlet", backend="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("tpp, split", [(1, "auto"), (2, "groups"), (4, "groups"), (8, "groups"), (32, "groups"),
                                        (2, "entries"), (4, "entries"), (8, "entries"), (16, "entries"),
                                        (32, "entries")])
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_gpu_list_matches_the_cpu_list(tpp, split, precision):
    p = _problem(precision, n=4000)
    got = strategies.create("verlet_thread_padded", tpp=tpp, split=split).evaluate(p)
    cpu = strategies.create("verlet_thread_cpu").evaluate(p)
    assert got.pairs == cpu.pairs
    tol = 1e-12 if precision == "fp64" else 1e-5
    assert np.abs(got.forces - cpu.forces).max() <= tol * np.abs(cpu.forces).max()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["verlet_thread_padded", "verlet_thread_pairrows"])
def test_gpu_trigger_and_rebuilds_follow_the_cpu(name):
    """The device decides: same trajectory and about as many rebuilds as the CPU's host check;
    graph replay keeps the device trigger (the list is rebuilt inside the replayed steps)."""
    p = _problem(n=4000)
    cpu = md.run(strategies.create("verlet_thread_cpu"), p, steps=300, dt=0.005, sample=100, seed=3)
    gpu = md.run(strategies.create(name), p, steps=300, dt=0.005, sample=100, seed=3)
    assert gpu.graph == "on"
    assert abs(gpu.rebuilds - cpu.rebuilds) <= 1 and gpu.rebuilds > 3
    for a, b in zip(cpu.samples, gpu.samples, strict=True):
        assert b.total == pytest.approx(a.total, rel=1e-10)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["verlet_thread_padded", "verlet_thread_pairrows"])
def test_gpu_overflow_is_reported(name):
    p = _problem(n=4000)
    with pytest.raises(StrategyError, match="more than the list's capacity 5"):
        strategies.create(name, cap=5).evaluate(p)


@pytest.mark.gpu
def test_gpu_negative_control():
    p = _problem(n=4000)
    got, positions = _stale_run("verlet_thread_padded", p)
    assert got.pairs != reference.compute(_moved(p, positions)).pairs


@pytest.mark.gpu
@pytest.mark.parametrize("n, spec", [(256, "lj_liquid"), (500, "lj_liquid"), (864, "lj_liquid"), (4000, "lj_liquid"),
                                     (4000, "gaussian"),
                                     (6000, "clump"), (20000, "uniform")])
def test_gpu_builds_give_the_same_list(n, spec):
    """The strip build, its walk of opposite columns, the per-cell and the warp-per-row builds put the
    same rows in the same order: the same bits (256 and 500: 2 cells per axis, the per-pair minimum
    image; 864: 3 cells per axis, so cells wrap onto themselves; the Gaussian and the clump: crowded
    cells, sparse columns, open faces)."""
    p = _problem("fp32", n=n, spec=spec)
    base = strategies.create("verlet_thread_padded", build="strip").evaluate(p)
    rows = _gpu_rows(p, build="strip")
    for launch in ({"build": "opposite"}, {"build": "cell"}, {"build": "warp"}, {}):
        got = strategies.create("verlet_thread_padded", **launch).evaluate(p)
        assert np.array_equal(got.forces, base.forces) and got.energy == base.energy, launch
        assert _gpu_rows(p, **launch) == rows, launch


def _gpu_rows(p, **launch):
    """The built rows, [(near entries, far entries)] per sorted slot as partner slots, read from the
    storage the force kernel reads (kernels/verlet_rows.cuh: groups of 16 bytes, the rows of a group
    consecutive; near entries 16-bit slots relative to the row's from the front, far entries
    32-bit slots from the back, both padded to whole groups)."""
    from strategies.verlet import groups_of

    s_ = strategies.create("verlet_thread_padded", **launch)
    plan = s_.prepare(p)
    plan.upload()
    s_.compute(plan)
    n, groups = p.n, groups_of(plan.cap)
    words = plan.nbr.get().reshape(groups, n, 4)
    near = words.view(np.int16).transpose(1, 0, 2).reshape(n, -1)  # row s: near entries k at [s, k]
    far = words.transpose(1, 0, 2).reshape(n, -1)  # row s: far entries from [s, 4 groups - 1] down
    top = 4 * groups
    length = plan.len.get()[:n]
    out = []
    for s, (a, b) in enumerate(length):
        out.append(((near[s, :a].astype(np.int64) + s).tolist(), far[s, top - b:top].tolist()))
        pad = near[s, a:-(-a // 8) * 8].tolist()
        assert pad == [0] * len(pad), (s, a, pad)
        pad = far[s, top - -(-b // 4) * 4:top - b].tolist()
        assert pad == [n] * len(pad), (s, b, pad)
    assert sum(len(a) + len(b) for a, b in out) == plan.listed_pairs()
    if p.n >= 4000 and all(p.box.periodic):  # rows found across the periodic faces
        assert sum(len(b) for _, b in out) > 0
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("build", ["strip", "opposite", "cell", "warp"])
def test_gpu_partners_too_far_in_slot_for_16_bits_are_far_entries(build):
    """A slab of 3 x 50 x 50 cells: the next x column of cells lies ~46,000 slots on, beyond a near
    entry's 16 bits. Those partners are stored as far entries (32-bit slots) and the forces are
    the reference's, on the periodic x axis and the open y and z axes alike."""
    from mdcore.potentials import LennardJones

    L = np.array([8.4, 140.0, 140.0])
    x = np.random.default_rng(3).uniform(0.0, 1.0, (int(0.8442 * L.prod()), 3)) * L
    p = Problem.make(x, L, LennardJones(cutoff=2.5), "fp64", periodic=(True, False, False))
    rows = _gpu_rows(p, build=build)
    assert max(abs(q - s) for s, (_, far) in enumerate(rows) for q in far) > 32767
    assert all(abs(q - s) <= 32767 for s, (near, _) in enumerate(rows) for q in near)
    out = strategies.create("verlet_thread_padded", build=build).evaluate(p)
    ref = reference.compute(p)
    assert out.pairs == ref.pairs
    assert np.abs(out.forces - ref.forces).max() <= 1e-10 * np.abs(ref.forces).max()


@pytest.mark.gpu
@pytest.mark.parametrize("name, n, launch", [("verlet_thread_padded", 4000, {"build": b}) for b in ("strip", "opposite", "warp", "cell")]
                         + [("verlet_thread_padded", 256, {"build": "strip"}), ("verlet_thread_pairrows", 4000, {}),
                            ("verlet_thread_pairrows", 256, {})])
def test_gpu_kept_list_follows_particles_across_the_box(name, n, launch):
    """The list is kept while no particle has moved more than skin/2, also where a particle crossed
    a periodic face (its wrapped coordinate jumped by a box length): the force phase reads the
    positions unwrapped since the build, so the rows' raw differences stay separations, and the
    rows found across a face take the minimum image (256: 2 cells per axis, the per-pair build)."""
    p = _problem("fp64", n=n, spec="uniform")  # random positions: some within reach of a face
    s = strategies.create(name, **launch)
    plan = s.prepare(p)
    plan.upload()
    s.compute(plan)
    L = p.box.array
    start = np.mod(p.positions, L)
    x = np.mod(start + np.random.default_rng(5).uniform(-0.08, 0.08, start.shape), L)  # |d| < 0.14 < skin/2
    assert np.any(np.abs(x - start) > 0.5 * L, axis=1).sum() >= 3  # some particles crossed a face
    plan.pos[:n, :3] = plan.cp.asarray(x - 0.5 * L, dtype=plan.real)  # the plan's centred coordinates
    out = s.step(plan).to_host()
    assert plan.rebuild_count() == 1  # the first list, kept
    ref = reference.compute(_moved(p, x))
    assert out.pairs == ref.pairs
    assert np.abs(out.forces - ref.forces).max() <= 1e-10 * np.abs(ref.forces).max()


def test_verify_replays_the_trajectory_and_the_negative_control_fails(tmp_path, capsys):
    """verify --replay: the list kept and rebuilt by its own trigger along a recorded trajectory
    passes at every frame; with the trigger off (rebuild=never) verify itself fails, naming the
    frame."""
    from harness import cli

    base = ["verify", "--strategies", "verlet_thread_cpu", "--scenarios", "lj_liquid", "--size", "tiny",
            "--precision", "fp32", "--replay", "100", "--quiet"]
    assert cli.main(base + ["--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "lj_liquid@replay" in out and "FAIL: 0" in out and "FAIL:" not in out.replace("FAIL: 0", "")
    assert cli.main(base + ["--launch", "rebuild=never", "--out", str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "verlet_thread_cpu[rebuild=never]" in out and "FAIL: frame" in out and "pair count" in out


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["verlet_thread_padded", "verlet_thread_pairrows"])
def test_gpu_replay_passes_and_the_negative_control_fails(name):
    from harness import md as M

    case = verify.Case("lj_liquid", scenarios.make("lj_liquid", "small", seed=1))
    frames = M.record(case.problem, 101)
    for precision in ("fp32", "mixed"):
        good = verify.replay_cell(strategies.create(name), case, precision, frames)
        assert good["status"] == "pass", good["detail"]
    bad = verify.replay_cell(strategies.create(name, rebuild="never"), case, "fp32", frames)
    assert bad["status"] == "FAIL" and "pair count" in bad["detail"]


# --- rows of two (verlet_thread_pairrows) ---------------------------------------------------------

def _gpu_pair_rows(p, **launch):
    """The built rows of two, [(a, two, near partner slots, far partner slots)] per row of this
    build, read from the storage the force kernel reads (as _gpu_rows, with row r's near entries
    relative to its first slot a and far padding the phantom slot n); checks that the rows cover
    every slot once, two consecutive slots of one cell, and the plan's count of distance checks."""
    from strategies.verlet import groups_of

    s_ = strategies.create("verlet_thread_pairrows", **launch)
    plan = s_.prepare(p)
    plan.upload()
    s_.compute(plan)
    n, rows, groups = p.n, plan.rows, groups_of(plan.cap)
    now = int(plan.rfirst.get()[-1])
    assert 0 < now <= rows
    words = plan.nbr.get().reshape(groups, rows, 4)
    near = words.view(np.int16).transpose(1, 0, 2).reshape(rows, -1)
    far = words.transpose(1, 0, 2).reshape(rows, -1)
    top = 4 * groups
    length, slot = plan.len.get(), plan.row_slot.get()
    cells = plan.binning.cell_sorted.get()
    out, seen = [], []
    for r in range(now):
        a, two = int(slot[r]) >> 1, bool(slot[r] & 1)
        seen += [a, a + 1] if two else [a]
        if two:
            assert cells[a] == cells[a + 1], r
        k, b = length[r]
        out.append((a, two, (near[r, :k].astype(np.int64) + a).tolist(), far[r, top - b:top].tolist()))
        pad = near[r, k:-(-k // 8) * 8].tolist()
        assert pad == [0] * len(pad), (r, k, pad)
        pad = far[r, top - -(-b // 4) * 4:top - b].tolist()
        assert pad == [n] * len(pad), (r, b, pad)
    assert sorted(seen) == list(range(n))
    assert not length[now:].any()  # no rows past this build's
    assert sum((len(c) + len(d)) * (1 + two) + two for _, two, c, d in out) == plan.listed_pairs()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("n, spec", [(256, "lj_liquid"), (864, "lj_liquid"), (4000, "lj_liquid"), (6000, "clump"),
                                     (20000, "uniform")])
def test_gpu_pair_rows_hold_the_union_of_both_particles_rows(n, spec):
    """A row of two holds exactly the partners within r_list of either of its particles (each
    once, the two themselves left out): the union of the per-particle list's two rows."""
    p = _problem("fp32", n=n, spec=spec)
    single = _gpu_rows(p, build="strip")
    pairs = _gpu_pair_rows(p)
    longer = 0
    for a, two, near, far in pairs:
        got = near + far
        assert len(got) == len(set(got)), a
        want = set(single[a][0] + single[a][1])
        own = {a}
        if two:
            want |= set(single[a + 1][0] + single[a + 1][1])
            own.add(a + 1)
        assert set(got) == want - own, a
        assert all(abs(q - a) <= 32767 for q in near)
        longer += len(got) > len(single[a][0]) + len(single[a][1])
    assert longer > len(pairs) // 2  # the union is longer than one row in most rows


@pytest.mark.gpu
@pytest.mark.parametrize("precision, n, spec", [(pr, n, spec) for pr in ("fp32", "mixed", "fp64", "fixed")
                                                for n, spec in ((256, "lj_liquid"), (864, "lj_liquid"),
                                                                (4000, "lj_liquid"), (6000, "clump"), (3000, "uniform"))
                                                if not (pr == "fixed" and spec == "clump")])  # beyond fixed point's range
def test_gpu_pair_rows_match_the_reference_and_repeat_their_bits(precision, n, spec):
    """The same pairs as the reference, the same bits on every run; fp64 within 1e-10 of the
    reference, fp32 and mixed within rounding of the rows of one in the same precision (both read
    the same fp32 positions), fixed point the same bits as they (integer sums: any order)."""
    p = _problem(precision, n=n, spec=spec)
    ref = reference.compute(p)
    got = [strategies.create("verlet_thread_pairrows").evaluate(p) for _ in range(2)]
    assert got[0].pairs == got[1].pairs == ref.pairs
    assert np.array_equal(got[0].forces, got[1].forces) and got[0].energy == got[1].energy
    assert np.array_equal(got[0].virial, got[1].virial)
    base = strategies.create("verlet_thread_padded").evaluate(p)
    if precision == "fixed":
        assert np.array_equal(got[0].forces, base.forces) and got[0].energy == base.energy
        assert np.array_equal(got[0].virial, base.virial)
        return
    against, tol = (ref, 1e-10) if precision == "fp64" else (base, 1e-5)
    assert np.abs(got[0].forces - against.forces).max() <= tol * np.abs(against.forces).max()
    assert got[0].energy == pytest.approx(against.energy, rel=tol)
    assert np.abs(got[0].virial - against.virial).max() <= tol * np.abs(against.virial).max()


@pytest.mark.gpu
def test_gpu_pair_rows_far_in_slot_keep_the_virial():
    """The slab of test_gpu_partners_too_far_in_slot_for_16_bits_are_far_entries: partners beyond
    16 bits of slot are far entries, the near relation is the same from both rows (the near
    entries' virial comes from the rows' forces), and forces, energy and virial are the reference's."""
    from mdcore.potentials import LennardJones

    L = np.array([8.4, 140.0, 140.0])
    x = np.random.default_rng(3).uniform(0.0, 1.0, (int(0.8442 * L.prod()), 3)) * L
    p = Problem.make(x, L, LennardJones(cutoff=2.5), "fp64", periodic=(True, False, False))
    rows = _gpu_pair_rows(p)
    assert max(abs(q - a) for a, _, _, far in rows for q in far) > 32767
    out = strategies.create("verlet_thread_pairrows").evaluate(p)
    ref = reference.compute(p)
    assert out.pairs == ref.pairs
    assert np.abs(out.forces - ref.forces).max() <= 1e-10 * np.abs(ref.forces).max()
    assert out.energy == pytest.approx(ref.energy, rel=1e-10)
    assert np.abs(out.virial - ref.virial).max() <= 1e-10 * np.abs(ref.virial).max()


def test_pair_rows_force_kernel_per_flavour():
    s = strategies.create("verlet_thread_pairrows")
    assert s.supports(_problem(n=256), check_device=False) == (True, "")  # 2 cells per axis: the minimum image
    assert s.force_expression("fp32", _problem(n=864).potential, True, True) == (
        "verlet_force_pairs<float, float, LennardJones, true, true, 128, 0, 8, 8>")
    assert s.force_expression("fp32", _problem(n=864).potential, False, True).endswith(", 128, 0, 8, 8>")
