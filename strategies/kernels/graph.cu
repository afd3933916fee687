// The gate of a conditional CUDA-graph node (strategies/graphs.py): in a replay, the node's body
// (a list's guarded upkeep) runs only where the device flag is set.
//
// cudaGraphSetConditional is a device-runtime call that the driver resolves when it loads the
// module (an absolute call through the constant bank, as for printf): no -rdc, no cudadevrt.
// NVRTC knows the handle's type but not the call: declared here as cuda_device_runtime_api.h does.
// One thread: concurrent calls on one handle are undefined behaviour.
#if defined(__CUDACC_RTC__)
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
#endif
template <typename Flag>
__global__ void graph_gate(cudaGraphConditionalHandle handle, const Flag* __restrict__ flag) {
    cudaGraphSetConditional(handle, *flag != Flag(0) ? 1u : 0u);
}

// research/conditional_probe.py's link: adds 1 a block to a counter unless its guard (where given) is clear, as
// the upkeep's guarded kernels return at once; through shared memory and a barrier, so that the
// sanitizer's racecheck and synccheck see a correct block-wide exchange in a conditional body.
template <typename Flag>
__global__ void graph_tick(int* __restrict__ count, const Flag* __restrict__ guard) {
    if (guard != nullptr && *guard == Flag(0)) return;
    __shared__ int one;
    if (threadIdx.x == 0) one = 1;
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) atomicAdd(count, one);  // one a block
}
