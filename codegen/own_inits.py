"""Each op of a chosen kind writing an init of its own, on tensors, before bufferization.

CSE makes one `tensor.empty` (and one zero `linalg.fill` of it) of every shape, however many ops
start from it: the k and v projections of an attention layer share their weights' transposes'
empty and their products' zero fill. One-shot bufferization then gives those ops one buffer
(the second transpose writes where the first did) or copies a shared fill into each op's
buffer; every layer's concatenation of an attention backward's dq, dk and dv went into one
buffer. A GPU target that hands these ops to a library reads a transpose as a strided view
only if nothing else writes its buffer, folds a zero fill into the library call only when the
fill writes the op's own buffer, and writes a concatenation's pieces in place only into a
buffer written once (codegen/cuda/forwarded_copies.py); a matmul's bias add that shares its
empty with the next projection's makes every projection write one buffer, so the q and k of an
attention (ViT's, BERT's: three linears) were copied out before the next one overwrote it,
where their head transposes could have been views the attention call reads; and a reduction
whose zero fill is copied in costs a kernel more than one whose fill folds into its own kernel (column sums:
codegen/cuda/to_gpu.build_kernels), and a generic of sibling sums (codegen/sibling_reductions.py)
whose two results start from one fill needs a fill per result to fold both. `own_inits` gives
each op (each result of a linalg op) its own empty (and fill) again, cloned right before it, and
erases what no op reads any more.
"""

from __future__ import annotations

from torch_mlir import ir

from .walk import ops_where


def _producer(value: ir.Value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _inits(op) -> list[int]:
    """Operand positions of op's inits: a linalg op's outputs, else its last operand."""
    last = len(op.operands)
    return list(range(last - len(op.results), last)) if op.name.startswith("linalg.") else [last - 1]


def _shared(op, k: int) -> bool:
    """Whether op's init at operand k is an empty or a fill of one that others use too (another
    op, or another init of op: CSE gives a generic of two sums one fill for both)."""
    init = op.operands[k]
    producer = _producer(init)
    if producer is None:
        return False
    if producer.name == "tensor.empty":
        if op.name == "tensor.insert_slice" and not all(_concatenated_into(u) for u in init.uses):
            return False  # an empty also sliced (a pad written in place, padded_producers.py) stays one buffer
        return len(list(init.uses)) > 1
    if producer.name == "linalg.fill":
        empty = _producer(producer.operands[1])
        return empty is not None and empty.name == "tensor.empty" and (
            len(list(init.uses)) > 1 or len(list(producer.operands[1].uses)) > 1)
    return False


def _concatenated_into(use) -> bool:
    owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
    return owner.name == "tensor.insert_slice" and use.operand_number == 1


def _give_own(op, k: int) -> None:
    producer = _producer(op.operands[k])
    ip = ir.InsertionPoint(op)
    if producer.name == "tensor.empty":
        op.operands[k] = producer.clone(ip=ip).results[0]
    else:  # a fill of an empty
        empty = _producer(producer.operands[1]).clone(ip=ip)
        fill = producer.clone(ip=ip)
        fill.operands[1] = empty.results[0]
        op.operands[k] = fill.results[0]
    for old in (producer, _producer(producer.operands[1]) if producer.name == "linalg.fill" else None):
        if old is not None and not any(list(r.uses) for r in old.results):
            old.erase()


def own_inits(module: ir.Module, names: tuple[str, ...], fills_for: tuple[str, ...] = (),
              empties_for=lambda op: False) -> int:
    """Every op named in `names` whose init is shared gets its own (module docstring), every op
    named in `fills_for` whose init is a shared fill, and every op `empties_for` accepts whose
    init is a shared empty; returns how many did. (An elementwise op sharing its empty with the
    next is best left so: a softmax's exp writes the output buffer that its division then
    overwrites in place.)"""
    def wanted(op, k: int) -> bool:
        if op.name in names:
            return True
        kind = _producer(op.operands[k]).name
        return (op.name in fills_for and kind == "linalg.fill") or (kind == "tensor.empty" and empties_for(op))

    # Every shared init found before any is given its own: each of the ops sharing one gets a copy.
    found = [(op, k) for op in ops_where(module, lambda op: op.name in names or op.name in fills_for or empties_for(op))
             for k in (_inits(op) if op.name not in names else [len(op.operands) - 1])
             if _shared(op, k) and wanted(op, k)]
    for op, k in found:
        _give_own(op, k)
    return len(found)
