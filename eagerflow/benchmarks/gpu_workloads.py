"""GPU benchmark workloads: eagerflow on ``/gpu:0`` against raw cupy and torch on CUDA.

They run only where cupy sees a CUDA GPU (``available``); the benchmark command otherwise says
in one line that they were skipped and why. Every timed call ends by synchronizing the
device (``cupy.cuda.Device.synchronize``, ``torch.cuda.synchronize``): kernels run
asynchronously, and without the wait a call would time only their queueing.

Columns: ``eagerflow``, ``cupy`` (the same math written directly in cupy: the floor, as numpy
is on the CPU; for the fused chain, a device-to-device copy of the bytes the chain must move,
which is its memory-bandwidth floor at the measured copy rate) and ``torch`` (eager, on
CUDA). All cupy allocations of the process, the raw
cupy column's included, go through eagerflow's peak-tracking allocator once a GPU is used.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from eagerflow.benchmarks.workloads import Workload, _mlp_adam_step, _mlp_torch_step, _torch

MLP_BATCH = 1024


def available():
    """Returns ``(True, "")`` when cupy sees a CUDA GPU, else ``(False, the reason)``."""
    if importlib.util.find_spec("cupy") is None:
        return False, "cupy is not installed (pip install 'eagerflow[gpu]')"
    try:
        import cupy

        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 - no driver, no device, wrong CUDA: all say "no"
        text = str(exc).strip().splitlines()
        return False, "cupy cannot use CUDA: %s" % (text[0] if text else type(exc).__name__)
    if count == 0:
        return False, "cupy sees no CUDA device"
    return True, ""


def _torch_cuda():
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return None
    return torch


def _synchronized(fn, sync):
    def call():
        out = fn()
        sync()
        return out

    return call


def gpu_eager_add():
    """``add`` of two float32[16] tensors on the GPU: per-op overhead, not bandwidth."""
    import cupy

    import eagerflow as ef

    a = np.ones(16, np.float32)
    with ef.device("/gpu:0"):
        x, y = ef.constant(a), ef.constant(a)
    ca, cb = cupy.asarray(a), cupy.asarray(a)
    sync = cupy.cuda.Device(0).synchronize
    fns = {"eagerflow": _synchronized(lambda: ef.add(x, y), sync),
           "cupy": _synchronized(lambda: cupy.add(ca, cb), sync)}
    torch = _torch_cuda()
    if torch is not None:
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(a).cuda()
        fns["torch"] = _synchronized(lambda: torch.add(ta, tb), torch.cuda.synchronize)
    return fns


def gpu_mlp_adam_step():
    """One eager training step of the MLP 784-512-512-10 (GradientTape and Adam written
    out, as the CPU workload) at batch 1024 on the GPU, against torch's eager step."""
    import cupy

    import eagerflow as ef

    with ef.device("/gpu:0"):
        step, x, labels = _mlp_adam_step(ef, batch=MLP_BATCH)
    if "GPU" not in x.device:  # soft placement would silently time the CPU instead
        raise RuntimeError("the MLP inputs landed on %s, not on the GPU" % x.device)
    sync = cupy.cuda.Device(0).synchronize
    fns = {"eagerflow": _synchronized(lambda: step(x, labels), sync)}
    torch = _torch_cuda()
    if torch is not None:
        fns["torch"] = _synchronized(_mlp_torch_step(torch, batch=MLP_BATCH, device="cuda"),
                                     torch.cuda.synchronize)
    return fns


CHAIN_ELEMENTS = 64 << 20  # 64M float32: 256 MiB in, 256 MiB out


def _chain(ef, x):
    """Ten elementwise ops, each with a GPU expression: one fused kernel inside @function."""
    y = x * 1.5
    y = y + 0.25
    y = ef.tanh(y)
    y = ef.square(y)
    y = y - 0.5
    y = ef.abs(y)
    y = y + 1.0
    y = ef.sqrt(y)
    y = y * 0.75
    return ef.maximum(y, 0.1)


def gpu_function_chain():
    """The 10-op chain over float32[64M] inside ``@function`` (one generated kernel: one
    read of the input, one write of the result) against its bandwidth floor: a
    device-to-device copy of as many bytes (4 bytes read and 4 written per element) at the
    rate this GPU copies; torch runs the chain eagerly (ten kernels)."""
    import cupy

    import eagerflow as ef

    a = np.random.default_rng(0).standard_normal(CHAIN_ELEMENTS).astype(np.float32)
    with ef.device("/gpu:0"):
        x = ef.constant(a)
        chain = ef.function(lambda x: _chain(ef, x), autograph=False)
        chain(x)  # traced and compiled before the timing
    if "GPU" not in x.device:
        raise RuntimeError("the chain's input landed on %s, not on the GPU" % x.device)
    src = cupy.asarray(a)
    dst = cupy.empty_like(src)
    sync = cupy.cuda.Device(0).synchronize
    fns = {"eagerflow": _synchronized(lambda: chain(x), sync),
           "cupy": _synchronized(lambda: dst.data.copy_from_device(src.data, src.nbytes),
                                 sync)}
    torch = _torch_cuda()
    if torch is not None:
        t = torch.from_numpy(a).cuda()
        fns["torch"] = _synchronized(lambda: _chain_torch(torch, t), torch.cuda.synchronize)
    return fns


def _chain_torch(torch, x):
    y = torch.tanh(x * 1.5 + 0.25)
    y = torch.sqrt(torch.abs(y * y - 0.5) + 1.0) * 0.75
    return torch.clamp_min(y, 0.1)



def _torch_graphed_step(torch, batch):
    """torch's MLP Adam step captured whole as a CUDA graph and replayed (PyTorch's
    "whole network capture": static inputs, ``Adam(capturable=True)``, warm-up on a side
    stream), or its eager step where this torch cannot capture it."""
    from eagerflow.benchmarks.workloads import _ADAM, _mlp_arrays

    arrays, xa, la = _mlp_arrays(batch)
    try:
        params = [torch.from_numpy(a.copy()).cuda().requires_grad_() for a in arrays]
        opt = torch.optim.Adam(params, lr=_ADAM["lr"], betas=(_ADAM["beta1"], _ADAM["beta2"]),
                               eps=_ADAM["epsilon"], capturable=True)
        x = torch.from_numpy(xa).cuda()
        labels = torch.from_numpy(la.astype(np.int64)).cuda()

        def step():
            opt.zero_grad(set_to_none=False)
            h = x
            for i in range(0, len(params) - 2, 2):
                h = torch.relu(h @ params[i] + params[i + 1])
            loss = torch.nn.functional.cross_entropy(h @ params[-2] + params[-1], labels)
            loss.backward()
            opt.step()
            return loss

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        return graph.replay, "torch CUDA-graph replay"
    except Exception:  # noqa: BLE001 - an older torch: compare with its eager step
        return _mlp_torch_step(torch, batch=batch, device="cuda"), "torch eager"


def gpu_function_mlp_adam_step():
    """The same MLP Adam step inside ``@function`` on the GPU, captured as a CUDA graph
    (the default, ``function/capture.py``), against torch's captured step. The note gives
    the first call's time (trace, compile and the plain warm-up run) and the capture
    state."""
    import time

    import cupy

    import eagerflow as ef

    with ef.device("/gpu:0"):
        step, x, labels = _mlp_adam_step(ef, batch=MLP_BATCH)
    if "GPU" not in x.device:
        raise RuntimeError("the MLP inputs landed on %s, not on the GPU" % x.device)
    sync = cupy.cuda.Device(0).synchronize
    traced = ef.function(step)
    sync()
    start = time.perf_counter()
    traced(x, labels)
    sync()
    first = time.perf_counter() - start
    traced(x, labels)  # records the CUDA graph
    sync()
    status = traced.get_concrete_function(x, labels).experimental_capture_status()
    fns = {"eagerflow": _synchronized(lambda: traced(x, labels), sync)}
    reference = "no torch"
    torch = _torch_cuda()
    if torch is not None:
        replay, reference = _torch_graphed_step(torch, MLP_BATCH)
        fns["torch"] = _synchronized(replay, torch.cuda.synchronize)
    FUNCTION_MLP.note = "target <= 0.30 ms; first call %.3f s (target < 0.5 s); %s%s; vs %s" % (
        first, status.state, (": " + "; ".join(status.reasons)) if status.reasons else "",
        reference)
    return fns


def gpu_function_mlp_adam_step_uncaptured():
    """The ``@function`` MLP step with step capture off: every kernel launched by the
    executor, for the gain the capture brings."""
    import cupy

    import eagerflow as ef

    with ef.device("/gpu:0"):
        step, x, labels = _mlp_adam_step(ef, batch=MLP_BATCH)
    sync = cupy.cuda.Device(0).synchronize
    traced = ef.function(step)
    experimental = ef.config.experimental

    def call():
        experimental.set_step_capture(False)
        try:
            return traced(x, labels)
        finally:
            experimental.set_step_capture(True)

    call()
    return {"eagerflow": _synchronized(call, sync)}


FUNCTION_MLP = Workload("gpu @function MLP 784-512-512-10 Adam b%d" % MLP_BATCH,
                        gpu_function_mlp_adam_step, note="target <= 0.30 ms")

WORKLOADS = [
    Workload("gpu eager add f32[16]", gpu_eager_add, note="target <= 1.3x torch"),
    Workload("gpu eager MLP 784-512-512-10 Adam b%d" % MLP_BATCH, gpu_mlp_adam_step,
             note="target <= 1.5x torch"),
    Workload("gpu @function 10-op chain f32[64M]", gpu_function_chain,
             note="cupy = d2d copy of the same 512 MiB (bandwidth floor); target <= 1.5x"),
    FUNCTION_MLP,
    Workload("gpu @function MLP 784-512-512-10 Adam b%d, capture off" % MLP_BATCH,
             gpu_function_mlp_adam_step_uncaptured, note="plain launches, for comparison"),
]
