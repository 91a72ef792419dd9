"""An elementwise consumer computed by its producer as one more result, on tensors, after
elementwise fusion.

Upstream elementwise fusion fuses a producer into a consumer only where the consumer is its one
user: with more users the producer would be computed twice. A value with several users and an
elementwise consumer that needs it element by element then takes two kernels (two loop nests),
the second reading back what the first wrote: an AMP training step's residual-stream gradient,
which the next layer's backward reads in float32 and a bf16 cast turns into the operand of the
matmuls beside it (twice a layer in GPT-2's backward). Here the consumer's body is appended to
the producer's instead: one generic with a result more, the value still written for its other
users, the consumer's result computed from it before it leaves registers.

The rule is structural. P and C are linalg.generic ops on tensors with only parallel loops, flat
bodies and identity output maps, with the same loop count; C reads P's results only through
identity maps (element i of C needs element i of them: then C's loops are P's); the result of P
that C reads has other users too (a sole user is upstream fusion's case); every other operand of
C is defined before P, except inits that are static tensor.empty ops, which are made again before
P. At most MAX_RESULTS results per merged op: an AdamW step's update of one parameter (the first
moment, then the second moment and the parameter from it, all written back) is one kernel.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from .sibling_reductions import copy_body, new_generic
from .walk import ops_where

_PARALLEL = "#linalg.iterator_type<parallel>"
MAX_RESULTS = 4  # a kernel that writes more is a long list of stores for a few saved reads


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _n_inputs(op) -> int:
    return len(op.operands) - len(op.results)


def _is_identity(m: ir.AffineMap) -> bool:
    return m == ir.AffineMap.get_identity(m.n_dims)


def _elementwise(op) -> bool:
    """A linalg.generic on tensors, parallel loops only, a flat body, identity output maps."""
    if op.name != "linalg.generic" or len(op.regions[0].blocks) != 1 or not op.results:
        return False
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    if not all(isinstance(r.type, ir.RankedTensorType) for r in op.results):
        return False
    if any(len(inner.operation.regions) for inner in op.regions[0].blocks[0].operations):
        return False
    return all(_is_identity(m) for m in _maps(op)[_n_inputs(op):])


def _owner(value: ir.Value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _is(op, other) -> bool:
    return op is not None and op == other


def _before(value: ir.Value, p) -> bool:
    """Whether value is available right before p (a block argument, or defined earlier or outside)."""
    owner = _owner(value)
    return owner is None or owner.block != p.block or owner.is_before_in_block(p)


def _fresh_init(value: ir.Value) -> bool:
    """A static tensor.empty (only a shape: it can be made again anywhere)."""
    owner = _owner(value)
    return owner is not None and owner.name == "tensor.empty" and not owner.operands


def _producer_of(c, takes):
    """The generic P whose result c takes as one more (module docstring), or None."""
    n_in, maps = _n_inputs(c), _maps(c)
    if not any(list(r.uses) for r in c.results):
        return None  # (a result nobody reads is no reason to compute it)
    for value in list(c.operands)[:n_in]:
        p = _owner(value)
        if p is None or p == c or not _elementwise(p) or p.block != c.block or not takes(p):
            continue
        if len(p.results) + len(c.results) > MAX_RESULTS or _maps(p)[0].n_dims != maps[0].n_dims:
            continue
        from_p = [k for k, v in enumerate(list(c.operands)[:n_in]) if _is(_owner(v), p)]
        if not all(_is_identity(maps[k]) for k in from_p):
            continue
        if len(list(value.uses)) < 2:
            continue  # upstream fusion's case
        others = [v for k, v in enumerate(list(c.operands)[:n_in]) if k not in from_p] + _captured(c)
        inits = list(c.operands)[n_in:]
        if all(_before(v, p) for v in others) and all(_before(i, p) or _fresh_init(i) for i in inits):
            return p
    return None


def _captured(op) -> list[ir.Value]:
    """The values op's body reads from outside it (a constant defined above)."""
    block = op.regions[0].blocks[0]
    inside = set(block.arguments) | {r for inner in block.operations for r in inner.operation.results}
    return [v for inner in block.operations for v in inner.operation.operands if v not in inside]


def _merge(p, c) -> None:
    """One generic computing p's results and c's, built right before p; both erased."""
    n_p, n_c, p_maps, c_maps = _n_inputs(p), _n_inputs(c), _maps(p), _maps(c)
    p_results = list(p.results)
    c_in = list(c.operands)[:n_c]
    extra = [k for k, v in enumerate(c_in) if v not in p_results]
    ip = ir.InsertionPoint(p)
    old_inits = list(c.operands)[n_c:]
    inits = [i if _before(i, p) else _empty_again(i, ip) for i in old_inits]  # a fresh empty, made before p
    inputs, in_maps = list(p.operands)[:n_p], p_maps[:n_p]
    at_extra = {}  # c's input k -> its position among the merged op's inputs (one p reads too: p's)
    for k in extra:
        same = [j for j, v in enumerate(inputs) if v == c_in[k] and in_maps[j] == c_maps[k]]
        if not same:
            inputs.append(c_in[k])
            in_maps.append(c_maps[k])
        at_extra[k] = same[0] if same else len(inputs) - 1
    outputs = list(p.operands)[n_p:] + inits
    maps = in_maps + p_maps[n_p:] + c_maps[n_c:]
    merged, block = new_generic(inputs, outputs, maps, p, c, ip)
    args = list(block.arguments)
    n_in, n_out = len(inputs), len(p_results)
    yielded = copy_body(p, block, args[:n_p] + args[n_in:n_in + n_out])
    c_args = [yielded[p_results.index(v)] if v in p_results else args[at_extra[k]] for k, v in enumerate(c_in)]
    yielded += copy_body(c, block, c_args + args[n_in + n_out:])
    with ir.InsertionPoint(block):
        linalg.YieldOp(yielded)
    results = list(merged.results)
    for old, new in zip(list(p_results) + list(c.results), results):
        old.replace_all_uses_with(new)
    c.erase()
    p.erase()
    unique = [v for k, v in enumerate(old_inits) if v not in old_inits[:k]]  # (one empty may init two)
    for old in unique:
        if _owner(old) is not None and not list(old.uses):
            _owner(old).erase()


def _empty_again(init: ir.Value, ip) -> ir.Value:
    t = ir.RankedTensorType(init.type)
    return tensor.EmptyOp(t.shape, t.element_type, ip=ip, loc=_owner(init).location).result


def fuse_consumers_as_results(module: ir.Module, takes=lambda producer: True) -> int:
    """Merge consumers into their producers (module docstring) until none is left; returns how
    many. `takes(producer)`: whether a producer may take one (a target keeps out an op a later
    pass of its own folds away as it is: the cuda target's matmul bias adds)."""
    merged = 0
    while True:
        pairs = [(p, c.operation) for c in ops_where(module, _elementwise)
                 if (p := _producer_of(c.operation, takes)) is not None]
        if not pairs:
            return merged
        with module.context:
            _merge(*pairs[0])
        merged += 1
