"""CUDA runtime: the PTX loaded once per device through cuda-bindings, the host schedule replayed
per call: torch allocates (caching allocator), kernels launch on torch's current stream, matmul
and convolution run through torch (cuBLAS/cuDNN). Every driver result is checked.

cuda-bindings is imported lazily: the package (and PTX generation) works without it.
"""

from __future__ import annotations

import functools
import logging
import sys
import weakref

import torch

from ..gpu.launch_steps import LaunchStep, alloc_step
from ..signature import Signature, TensorSpec
from . import library
from .schedule import Alloc, HostSchedule, Launch, Library, Store

log = logging.getLogger("dynamo_mlir")

class CudaError(RuntimeError):
    pass


def driver():
    """The CUDA driver module of cuda-bindings (12.6+: cuda.bindings.driver; older: cuda.cuda)."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        from cuda import cuda as drv  # type: ignore[no-redef]
    return drv


def available() -> bool:
    try:
        if not torch.cuda.is_available():
            return False
        driver()
        return True
    except Exception:
        return False


def check(result, what: str):
    """Raise CudaError naming `what` unless a driver call's result is CUDA_SUCCESS."""
    drv = driver()
    err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        text = name.decode() if isinstance(name, bytes) else str(name)
        raise CudaError(f"dynamo-mlir cuda: {what} failed: {text} ({int(err)})")
    return rest[0] if len(rest) == 1 else rest


class LoadedModule:
    """One cuModuleLoadData of the program's PTX on one device, and its kernel handles."""

    def __init__(self, ptx: str, kernels: list[str], device: int):
        drv = driver()
        torch.cuda.init()
        with torch.cuda.device(device):
            torch.empty(1, device=f"cuda:{device}")  # makes torch's primary context current
            if not int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")):
                ctx = check(drv.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
                check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            self.module = check(drv.cuModuleLoadData(ptx.encode() + b"\0"), f"cuModuleLoadData ({', '.join(kernels)})")
            self.functions = {k: check(drv.cuModuleGetFunction(self.module, k.encode()), f"cuModuleGetFunction {k}")
                              for k in kernels}


MAX_GRID = (2**31 - 1, 65535, 65535)  # blocks per grid dimension (x, y, z)


def _cu_launch(function, grid, shared: int, launch: Launch, stream, params_ptr) -> None:
    (gx, gy, gz), (bx, by, bz) = grid, launch.block
    err = driver().cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, params_ptr, 0)
    if err[0] != 0:
        check(err, f"cuLaunchKernel {launch.kernel} grid={grid} block={launch.block}")


def launch_step(launch: Launch, function, index_bits: int) -> LaunchStep:
    """cuLaunchKernel for `launch` (codegen/gpu/launch_steps.py: sizes and grids known per call)."""
    return LaunchStep(launch, function, index_bits, _cu_launch, MAX_GRID, CudaError)


def _upload(constant, device) -> torch.Tensor:
    """A constant on the device in its own dtype (bf16 values arrive as exact float32)."""
    values = torch.from_numpy(constant.values.copy())
    return values.to(device=device, dtype=getattr(torch, constant.dtype))


class CudaFunction:
    """A callable over CUDA tensors; returns freshly allocated outputs, and updates in place the
    inputs whose new values the code computes into them (host.written)."""

    def __init__(self, program, signature: Signature, options):
        self.signature = signature
        self.host: HostSchedule = program.hosts[signature.name]
        self.ptx, self.kernels = program.device, sorted(set(self.host.kernels))
        self.n_in = len(signature.inputs)
        # Known once: where the first tensor input is (the others are `index` sizes, ints), and
        # whether the outputs' shapes are the compiled ones or come per call from the inputs.
        self.first_tensor = next((i for i, s in enumerate(signature.inputs) if isinstance(s, TensorSpec)), None)
        self.static = signature.is_static
        self.out_specs = [(shape, getattr(torch, dtype)) for shape, dtype in self.host.arg_types[self.n_in:]]
        self.written = frozenset(self.host.written)
        self.intermediates = frozenset(s.slot for s in self.host.steps if isinstance(s, Alloc))
        self._per_device: dict[int, tuple] = {}

    def _prepare(self, device: torch.device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in self._per_device:
            module = LoadedModule(self.ptx, self.kernels, index) if self.kernels else None
            steps = [self._step(s, module, device) for s in self.host.steps]
            constants = [(slot, _upload(c, device)) for slot, c in self.host.constants.items()]
            self._per_device[index] = (module, steps, constants)
        return self._per_device[index]

    def _step(self, step, module, device):
        if isinstance(step, Launch):
            return launch_step(step, module.functions[step.kernel], self.host.index_bits)
        if isinstance(step, Alloc):
            return alloc_step(step, device)
        if isinstance(step, Library):
            return library.step(step, self.intermediates)
        if isinstance(step, Store):
            return library.store_step(step)
        raise TypeError(f"unknown host step {step}")

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        first = self.first_tensor
        device = inputs[first].device if first is not None else torch.device("cuda", torch.cuda.current_device())
        if device.type != "cuda":  # a host pointer handed to a kernel would fault the GPU
            raise CudaError(f"dynamo-mlir cuda: {self.signature.name} got a tensor on {device}, not a CUDA device")
        _, steps, constants = self._prepare(device)
        bufs: list = [None] * self.host.n_slots
        for i, t in enumerate(inputs):
            # Kernels index row-major buffers and use 16-byte vector loads: contiguous and aligned.
            usable = not isinstance(t, torch.Tensor) or (t.is_contiguous() and t.data_ptr() % 16 == 0)
            bufs[i] = t if usable else t.contiguous().clone()
        shapes = [s for s, _ in self.out_specs] if self.static else self.signature.output_shapes(inputs)
        outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, (_, dtype) in zip(shapes, self.out_specs)]
        bufs[self.n_in:self.n_in + len(outputs)] = outputs
        for slot, tensor in constants:
            bufs[slot] = tensor
        # The raw handle (what inductor's generated code reads): torch.cuda.current_stream builds a
        # Stream object per call, a tenth of a small graph's host time.
        stream = torch._C._cuda_getCurrentRawStream(device.index if device.index is not None else torch.cuda.current_device())
        for step in steps:
            step(bufs, stream)
        for i in self.written:
            if bufs[i] is not inputs[i]:  # the steps updated an aligned copy: the caller's tensor gets it
                inputs[i].copy_(bufs[i])
        return outputs


def _is_static(t) -> bool:
    """A parameter or buffer (Dynamo marks the ones it lifts into graph inputs, and an optimizer's
    state and gradients): long-lived, and changed only in place, so a graph may read it where it
    lives. An `index` size input (an int) counts as one: its value is in the replay's key."""
    return not isinstance(t, torch.Tensor) or isinstance(t, torch.nn.Parameter) or hasattr(t, "_dynamo_static_input_type")


# The output storages of the live replays, by address: data_ptr -> (weak reference to the replay,
# the storage's identity). The replay keeps them alive, so no other allocation can take their
# addresses while it lives; a dying replay takes its entries out (_forget).
_REPLAY_OUTPUTS: dict[int, tuple[weakref.ref, int]] = {}


def _is_replay_output(t: torch.Tensor) -> bool:
    """Whether t is an output of a live replay or a view of one (its storage is that output's).
    Such a tensor sits at the address the replay writes every run, so a graph may read it there:
    a backward reads its forward's saved activations so, as inductor's cudagraph trees do."""
    storage = t.untyped_storage()
    entry = _REPLAY_OUTPUTS.get(storage.data_ptr())
    return entry is not None and entry[1] == storage._cdata and entry[0]() is not None


def _register_outputs(replay: "_Replay") -> None:
    # empty storages share address 0, and a copy of nothing costs nothing
    storages = [s for s in (t.untyped_storage() for t in replay.outputs) if s.nbytes()]
    addresses = tuple(s.data_ptr() for s in storages)
    # _forget and the registry bound now: a replay may die at exit, after the module's globals
    ref = weakref.ref(replay, functools.partial(_forget, addresses, _REPLAY_OUTPUTS))
    for s in storages:
        _REPLAY_OUTPUTS[s.data_ptr()] = ref, s._cdata


def _forget(addresses, registry, ref: weakref.ref) -> None:
    for address in addresses:
        if registry.get(address, (None,))[0] is ref:  # not a later replay's output at that address
            del registry[address]


class _Replay:
    """One captured CUDA graph. The inputs `in_place` (static ones, other replays' outputs) are
    read (and written) where they live; the others go through buffers of its own, those the code
    writes copied back to the caller's tensors. It keeps no reference to an input read in place:
    the replay that output it would count that reference as a caller holding its output, and
    capture anew instead of running. Its own outputs count as replay outputs while it lives."""

    def __init__(self, fn: "CudaFunction", inputs, in_place: list[bool]):
        own = [t if p else t.clone() for t, p in zip(inputs, in_place)]
        self.copies = _copy_groups(own, in_place)
        # The written inputs that go through the replay's own buffers: copied back after a replay.
        unwritten = [p or i not in fn.written for i, p in enumerate(in_place)]
        self.write_backs = _copy_groups(own, unwritten)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = fn(*own)
        self.alone = _tensor_refs(self.outputs), _storage_uses(self.outputs)
        _register_outputs(self)

    def held_outputs(self) -> list[int]:
        """The outputs the caller still holds: a tensor object or a view of its storage alive
        outside this replay (a replay would overwrite what they read). Counted against the
        references right after capture, taken the same way, when the replay alone held them.
        Tensor references first (the replay's own objects, held only where something kept one),
        then the storage uses, where the aliases run() returns show up, about a microsecond an
        output."""
        refs, uses = self.alone
        held = [i for i, (now, alone) in enumerate(zip(_tensor_refs(self.outputs), refs)) if now > alone]
        if held:
            return held
        return [i for i, (now, alone) in enumerate(zip(_storage_uses(self.outputs), uses)) if now > alone]

    def run(self, inputs, kept: set[int]) -> list[torch.Tensor]:
        """Replay on `inputs`; the outputs at positions in `kept` (ones callers keep) as clones,
        the others as new tensor objects over the replay's output storage (`_alias`)."""
        for buffers, positions in self.copies:
            _copy_into(buffers, [inputs[i] for i in positions])
        self.graph.replay()
        for buffers, positions in self.write_backs:
            _copy_into([inputs[i] for i in positions], buffers)
        return [t.clone() if i in kept else _alias(t) for i, t in enumerate(self.outputs)]


def _alias(t: torch.Tensor) -> torch.Tensor:
    """A new tensor object over `t`'s storage (detach: not a view), which the caller alone
    references. autograd's AccumulateGrad takes a gradient as .grad only when nothing else holds
    it, else it clones it; the replay holds its own output objects, so a backward's gradients were
    each cloned, and the clones, no replay's outputs, were then copied into the optimizer step's
    replay (GPT-2's AMP step: 148 gradients, 475 MiB a step, benchmarks/replay_copies.py). The
    storage is the replay's, so held_outputs still sees the caller hold it (_storage_uses)."""
    return t.detach()


def _copy_groups(buffers, in_place) -> list[tuple[list[torch.Tensor], list[int]]]:
    """The replay's own input buffers (those not read `in_place`), grouped by dtype, each with the
    positions of the inputs copied into it (or, for written inputs, back from it). A training
    graph has hundreds of such inputs (activations saved for the backward, gradients into the
    optimizer): one copy_ each costs ~10 us of host time (245 per GPT-2 step on an H100, 2.3 ms);
    torch's multi-tensor copy does a dtype's group in a few launches. It takes one dtype per
    call, so floating groups go through it; others (indices, masks: few) go one by one."""
    groups: dict[torch.dtype, tuple[list, list]] = {}
    for i, (t, p) in enumerate(zip(buffers, in_place)):
        if not p:
            mine, positions = groups.setdefault(t.dtype, ([], []))
            mine.append(t)
            positions.append(i)
    return list(groups.values())


def _copy_into(destinations: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    if len(destinations) > 1 and destinations[0].is_floating_point():
        torch._foreach_copy_(destinations, sources)  # torch checks shapes and strides, else copies one by one
    else:
        for mine, t in zip(destinations, sources):
            mine.copy_(t)


def _tensor_refs(outputs: list[torch.Tensor]) -> list[int]:
    """Per output: references to the tensor object (compared only with this function's own counts)."""
    return [sys.getrefcount(t) for t in outputs]


def _storage_uses(outputs: list[torch.Tensor]) -> list[int]:
    """Per output: uses of its storage (a view of it holds one)."""
    return [torch._C._storage_Use_Count(t.untyped_storage()._cdata) for t in outputs]


class GraphedFunction:
    """mode="reduce-overhead": the host schedule captured in CUDA graphs, replayed.

    A replay is captured per input signature (device, dtype, shape) and per address of the
    inputs it reads in place; other inputs are copied into its own buffers. Read in place: static
    inputs (parameters, buffers, an optimizer's state), and the outputs of live replays (tensors
    or views of them): AOTAutograd's saved activations are the forward replay's outputs, at the
    same addresses every step while that replay is reused, and copying them into the backward's
    buffers would cost a training step as much memory traffic as they weigh. Outputs are the
    replay's own memory (new tensor objects over it, _alias), not clones: a replay is reused only
    once the caller has dropped every output of its previous run (tensors and views). While they are alive another replay is
    captured, up to MAX_REPLAYS per signature and addresses; past that the schedule runs
    uncaptured, into new outputs. The first call of all runs uncaptured too (see __call__).
    Outputs found still held at a later call are ones callers keep (a training loop's list of
    losses, a .grad accumulated over steps): from then on they are returned as clones, one small
    copy each, so that the replay stays free for the next call. The rest (AOTAutograd's saved
    activations, released by the backward) are returned in place. A large output held is no
    such case for a copy (see KEEP_BY_CLONE_BYTES): the call takes another replay instead.
    Inputs the code writes (an optimizer step's parameters and state, host.written) are updated
    once per call: one read in place where it lives (its address is in the replay's key), another
    in the replay's buffer, then copied into the caller's tensor.
    Replays run on the caller's current stream.
    """

    MAX_REPLAYS = 4
    # Per signature and static addresses, how many sets of replay outputs' addresses get replays
    # reading them in place. A loop feeding a function its own output (x = f(x)) meets a new
    # address at each call, each a new capture; past these it copies them into a replay's buffers,
    # and the replays it has take turns.
    MAX_OUTPUT_ADDRESSES = 4
    # Input signatures (shapes, size values) that get replays: a graph of symbolic sizes called
    # at ever new sizes (a generation loop's growing length) would otherwise capture, and keep
    # the memory of, a graph per size. Past these, new signatures run uncaptured.
    MAX_SIGNATURES = 16
    # Outputs held by a caller are returned as clones from then on only up to this size: a clone
    # is a pass over the output's memory on every later call. Past it, a held output leaves its
    # replay busy and the call takes (or captures) another. GPT-2's logits, 8 x 256 x 50257
    # floats, kept by a caller once (a list of a sweep's outputs) were cloned at every length of
    # every later sweep: the benchmark's sweep took 46.3 ms on an H100 where one keeping no
    # outputs took 45.1 (bench_models.py --scale and replay_latency.py in one device call).
    KEEP_BY_CLONE_BYTES = 16 << 20

    def __init__(self, fn: CudaFunction):
        self.fn = fn
        self.layouts = InputLayouts(fn.signature)
        self.replays: dict[tuple, list[_Replay]] = {}
        self.output_addresses: dict[tuple, int] = {}  # per key of static addresses: how many sets
        self.kept: set[int] = set()  # output positions callers keep (returned as clones)
        self.uncapturable = False
        self.called = False
        self.signatures: set[tuple] = set()

    def _capture(self, inputs, in_place) -> _Replay:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up: module load, allocator pools
            # on copies of the inputs the code writes: the replay after the capture updates them
            self.fn(*[t.clone() if i in self.fn.written else t for i, t in enumerate(inputs)])
        torch.cuda.current_stream().wait_stream(side)
        return _Replay(self.fn, inputs, in_place)

    def _replays_for(self, inputs, signature) -> tuple[list[bool], list[_Replay]]:
        """The inputs to read in place, and the replays captured for their addresses."""
        layouts = self.layouts
        static = layouts.static(inputs)
        in_place = list(static)
        for i in layouts.others:
            in_place[i] = _is_replay_output(inputs[i])
        if in_place != static:
            key = (signature, layouts.addresses(inputs, in_place))
            if key in self.replays:
                return in_place, self.replays[key]
        by_static = (signature, layouts.addresses(inputs, static))
        if in_place != static and self.output_addresses.get(by_static, 0) < self.MAX_OUTPUT_ADDRESSES:
            self.output_addresses[by_static] = self.output_addresses.get(by_static, 0) + 1
            return in_place, self.replays.setdefault(key, [])
        return static, self.replays.setdefault(by_static, [])

    def __call__(self, *inputs):
        if not self.called:
            # The first call runs uncaptured: a capture costs a warm-up run and the capture itself
            # (0.17 s for the demo's transformer block on an H200), which a function called once
            # (a warm start's first call, a one-off) would pay for nothing. Replays from the second.
            self.called = True
            return self.fn(*inputs)
        signature = _key(inputs, self.layouts.varying)
        if signature not in self.signatures:
            if len(self.signatures) >= self.MAX_SIGNATURES:
                return self.fn(*inputs)
            self.signatures.add(signature)
        in_place, replays = self._replays_for(inputs, signature)
        for replay in replays:
            held = replay.held_outputs()
            if not held:
                return replay.run(inputs, self.kept)
            self.kept.update(i for i in held if replay.outputs[i].nbytes <= self.KEEP_BY_CLONE_BYTES)
        if len(replays) < self.MAX_REPLAYS and not self.uncapturable:
            try:
                replays.append(self._capture(inputs, in_place))
            except Exception as e:  # a step that cannot be captured (one that syncs): run uncaptured from now on
                log.warning("dynamo-mlir cuda: %s: not replayed as a CUDA graph: %s",
                            self.fn.signature.name, str(e).splitlines()[0])
                self.uncapturable = True
                return self.fn(*inputs)
            return replays[-1].run(inputs, self.kept)
        return self.fn(*inputs)  # every replay's outputs are alive: run uncaptured, into new outputs


def _key(inputs, varying):
    """What a replay is captured for: the device, dtype and shape of each tensor at a `varying`
    position, each size's value (the launches' grids and size arguments are evaluated from them
    at capture, then fixed)."""
    return tuple((t.device, t.dtype, tuple(t.shape)) if isinstance(t, torch.Tensor) else (type(t), t)
                 for t in (inputs[i] for i in varying))


class InputLayouts:
    """What a replay's key must read of each input, known from the compiled signature.

    A graph's input of static shape (TensorSpec.is_static) arrives with that shape, dtype, device
    and strides on every call: Dynamo's guards check them (TENSOR_MATCH) before the graph runs,
    and AOTAutograd gives a backward the tensors its forward saved and tangents in the layout it
    traced. Only the others (symbolic sizes, size ints) need their shape or value in the key, and
    a fixed input read in place only its address. GPT-2 small's graph has 150 parameters: the
    whole key over every input took 0.12 ms of host time a call on a 2-core EPYC before each
    replay (benchmarks/replay_key_cost.py), while the GPU waited.

    Which inputs are static (parameters, buffers, an optimizer's state: read in place) is a
    property of the graph's input positions, learned at the first call: a tensor of another kind
    later at such a position is read in place too, at its address, which is in the key: correct,
    as a copy would be."""

    def __init__(self, signature):
        self.fixed = [isinstance(s, TensorSpec) and s.is_static for s in signature.inputs]
        self.varying = [i for i, f in enumerate(self.fixed) if not f]
        self._static: list[bool] | None = None
        self.others: list[int] = []         # the positions not static: maybe replay outputs
        self._by_address: list[int] = []    # static tensors of fixed layout: keyed by address alone
        self._by_layout: list[int] = []     # the rest: keyed by address and strides where read in place

    def static(self, inputs) -> list[bool]:
        if self._static is None:
            self._static = [_is_static(t) for t in inputs]
            self.others = [i for i, s in enumerate(self._static) if not s]
            self._by_address = [i for i, s in enumerate(self._static)
                                if s and self.fixed[i] and isinstance(inputs[i], torch.Tensor)]
            by_address = set(self._by_address)
            self._by_layout = [i for i in range(len(inputs)) if i not in by_address]
        return self._static

    def addresses(self, inputs, in_place) -> tuple:
        """Where the inputs read in place live, and their strides: a graph reads them with those
        it was captured with (a strided one through a contiguous copy it made then). A fixed one
        needs only its address."""
        fixed = tuple([inputs[i].data_ptr() for i in self._by_address])
        rest = tuple((i, inputs[i].data_ptr(), inputs[i].stride()) for i in self._by_layout
                     if in_place[i] and isinstance(inputs[i], torch.Tensor))
        return fixed, rest


# A CUDA graph replay costs about as much host time as two direct launches (measured on an
# H100: a one-kernel layernorm 64x256 took 96 us a call replayed, 59 us launched directly), so
# reduce-overhead captures only schedules of at least this many launches (kernels and library
# calls; allocations are no launch). A replay also copies the inputs it does not read in place:
# a one-kernel layer norm of symbolic size over 16384 x 4096 (four allocations, one launch) spent
# as long in that copy as in its kernel (0.155 and 0.158 ms a call, an H200 profile).
MIN_GRAPHED_LAUNCHES = 3


def launches(host) -> int:
    return sum(1 for step in host.steps if isinstance(step, (Launch, Library)))


def load(artifact, signature: Signature, options):
    fn = CudaFunction(artifact, signature, options)
    target = options.target_options
    replayed = target.cuda_graphs and (options.mode == "reduce-overhead" or target.cuda_graphs_in_default_mode)
    return GraphedFunction(fn) if replayed and launches(fn.host) >= MIN_GRAPHED_LAUNCHES else fn
