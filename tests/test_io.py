"""Configuration files: extended XYZ (ASE convention) and .npz, and their errors."""
import numpy as np
import pytest

from harness import io, scenarios
from mdcore import Box, InputError


@pytest.mark.parametrize("suffix", [".xyz", ".npz"])
def test_round_trip_is_exact(tmp_path, suffix):
    p = scenarios.make("uniform_slab", "tiny")
    path = tmp_path / f"conf{suffix}"
    io.write_configuration(path, p.positions, p.box)
    pos, box = io.read_configuration(path)
    assert np.array_equal(pos, p.positions) and box == p.box


def test_ase_style_file(tmp_path):
    text = ('3\nLattice="10.0 0.0 0.0 0.0 12.0 0.0 0.0 0.0 14.0" Properties=species:S:1:id:I:1:pos:R:3 '
            'pbc="T F T" energy=-1.5\nAr 1 1.0 2.0 3.0\nAr 2 4.0 5.0 6.0\nKr 3 7.0 8.0 9.0\n')
    path = tmp_path / "a.extxyz"
    path.write_text(text)
    pos, box = io.read_configuration(path)
    np.testing.assert_array_equal(pos[2], [7.0, 8.0, 9.0])
    assert box == Box((10.0, 12.0, 14.0), (True, False, True))


def test_pbc_defaults_to_periodic_and_origin_is_subtracted(tmp_path):
    path = tmp_path / "b.xyz"
    path.write_text('1\nLattice="5 0 0 0 5 0 0 0 5" Origin="-2.5 -2.5 -2.5"\nH 0.0 0.0 0.0\n')
    pos, box = io.read_configuration(path)
    assert box.periodic == (True, True, True)
    np.testing.assert_array_equal(pos[0], [2.5, 2.5, 2.5])


@pytest.mark.parametrize("text, msg", [
    ("x\nLattice=\"1 0 0 0 1 0 0 0 1\"\n", "line 1: expected the particle count"),
    ("2\nLattice=\"5 0 0 0 5 0 0 0 5\"\nAr 1 2 3\n", "header says 2 particles"),
    ("1\nenergy=3\nAr 1 2 3\n", "no Lattice"),
    ("1\nLattice=\"5 0 0 0 5\"\nAr 1 2 3\n", "Lattice must be 9 numbers"),
    ("1\nLattice=\"5 1 0 0 5 0 0 0 5\"\nAr 1 2 3\n", "orthorhombic"),
    ("1\nLattice=\"5 0 0 0 5 0 0 0 5\" pbc=\"T X T\"\nAr 1 2 3\n", "pbc: expected three of T/F"),
    ("1\nLattice=\"5 0 0 0 5 0 0 0 5\"\nAr 1 two 3\n", "line 3: expected x y z"),
    ("1\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1\nAr 1 2 3\n", "no 'pos' entry"),
])
def test_bad_xyz(tmp_path, text, msg):
    path = tmp_path / "bad.xyz"
    path.write_text(text)
    with pytest.raises(InputError, match=msg):
        io.read_configuration(path)


def test_bad_npz_and_formats(tmp_path):
    np.savez(tmp_path / "x.npz", positions=np.zeros((2, 3)))
    with pytest.raises(InputError, match="missing array\\(s\\) box"):
        io.read_configuration(tmp_path / "x.npz")
    (tmp_path / "y.pdb").write_text("")
    with pytest.raises(InputError, match="unknown format '.pdb'"):
        io.read_configuration(tmp_path / "y.pdb")
    with pytest.raises(InputError, match="no such file"):
        io.read_configuration(tmp_path / "missing.xyz")
    (tmp_path / "z.npz").write_text("not a zip")
    with pytest.raises(InputError, match="not an .npz archive"):
        io.read_configuration(tmp_path / "z.npz")
