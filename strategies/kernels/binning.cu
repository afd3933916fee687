// Binning, shared by every cell strategy: the cell of every particle, the copy of positions
// into a cell storage, and the forces back to input order.
#include "cells.cuh"

// --- binning ----------------------------------------------------------------------------

// Cell of each particle (input order) from box-centred positions, and particles per cell
// (counts zeroed by the caller; integer atomics, so the counts are exact and deterministic).
// Rounding at the edges (x = L on an open axis, or x + L/2 one ulp outside) is clamped into
// the grid.
template <typename Real>
__global__ void bin_cells(const Vec4<Real>* __restrict__ pos, const int n, const Box<Real> box, const Grid g,
                          const Real isx, const Real isy, const Real isz, int* __restrict__ cell,
                          int* __restrict__ counts) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const Vec4<Real> p = pos[i];
    int cx = static_cast<int>(Math<Real>::floor((p.x + Real(0.5) * box.lx) * isx));
    int cy = static_cast<int>(Math<Real>::floor((p.y + Real(0.5) * box.ly) * isy));
    int cz = static_cast<int>(Math<Real>::floor((p.z + Real(0.5) * box.lz) * isz));
    cx = min(max(cx, 0), g.nx - 1);
    cy = min(max(cy, 0), g.ny - 1);
    cz = min(max(cz, 0), g.nz - 1);
    const int c = (cx * g.ny + cy) * g.nz + cz;
    cell[i] = c;
    atomicAdd(&counts[c], 1);
  }
}

// Copy positions into the layout: slot k of the cell order gets particle order[k]. A slot
// beyond a cell's capacity is not written; the largest such slot + 1 goes to *overflow.
template <typename Real, typename Acc, int LAYOUT>
__global__ void scatter_cells(const Vec4<Real>* __restrict__ pos, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, const Cells<Real, Acc, LAYOUT> cells,
                              const int* __restrict__ capacity, int* __restrict__ overflow) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const int q = k - cells.begin(c);
    long long cap = 0x7fffffffll;
    if constexpr (LAYOUT == kPadded) cap = cells.cap;
    if constexpr (LAYOUT == kNested) cap = capacity[c];
    if (q >= cap) {
      atomicMax(overflow, q + 1);
      continue;
    }
    *cells.pos_at(c, q) = pos[order[k]];
  }
}

template <typename Real, typename Acc, int LAYOUT>
__global__ void zero_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ cell_sorted, const int n) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    Acc* f = cells.f(c, k - cells.begin(c));
    f[0] = Acc(0);
    f[1] = Acc(0);
    f[2] = Acc(0);
  }
}

// Forces back to input order: out[order[k]] = force of slot k.
template <typename Real, typename Acc, int LAYOUT>
__global__ void gather_forces(const Cells<Real, Acc, LAYOUT> cells, const int* __restrict__ order,
                              const int* __restrict__ cell_sorted, const int n, Acc* __restrict__ out) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int c = cell_sorted[k];
    const Acc* f = cells.f(c, k - cells.begin(c));
    const int i = order[k];
    out[3 * i + 0] = f[0];
    out[3 * i + 1] = f[1];
    out[3 * i + 2] = f[2];
  }
}
