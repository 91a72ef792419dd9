"""An elementwise producer that is only gathered from, computed at the gathered elements alone.

A cross-entropy's forward reads one log-probability per row (nll_loss: `logp[i, target[i]]`,
a tensor.extract in the body of the gather's linalg.generic) from a log_softmax it builds for
nothing else: the whole [tokens, vocabulary] float32 matrix written (823 MB for AMP GPT-2's
4096 x 50257 logits) to be read at 4096 places. Here each such extract becomes the producer's
body evaluated at the extracted indices, the producer's inputs extracted there in turn, and the
producer, read no more, goes: the matrix is never built.

Only producers every use of which is such an extract, that are all-parallel linalg.generic ops
with one result and an identity output map, whose inputs are read at loop indices or constants
(projections, broadcasts), whose body is arith and math ops (linalg.index allowed: each element
is computed once, where it is read, so no more often than before), and whose body does not
read its output.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from .recompute_producers import _PARALLEL
from .walk import ops_where


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _projection(amap: ir.AffineMap) -> bool:
    return all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in amap.results)


def _extracted_in_body(use) -> bool:
    user = use.owner.operation
    return (user.name == "tensor.extract" and use.operand_number == 0
            and user.parent is not None and user.parent.name == "linalg.generic")


def _scalar_body(op) -> bool:
    return all(o.operation.name.split(".")[0] in ("arith", "math") or o.operation.name in ("linalg.yield", "linalg.index")
               for o in op.regions[0].blocks[0].operations)


def _gathered_only(op) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    maps = _maps(op)
    body = op.regions[0].blocks[0]
    uses = list(op.results[0].uses)
    return (bool(uses) and all(_extracted_in_body(u) for u in uses)
            and maps[-1] == ir.AffineMap.get_identity(maps[-1].n_dims)
            and all(_projection(m) for m in maps[:-1])
            and not list(body.arguments[-1].uses) and _scalar_body(op))


def _index_at(expr, indices: list[ir.Value]) -> ir.Value:
    if isinstance(expr, ir.AffineDimExpr):
        return indices[expr.position]
    return arith.ConstantOp(ir.IndexType.get(), expr.value).result


def _element_of(value: ir.Value, amap: ir.AffineMap, indices: list[ir.Value]) -> ir.Value:
    """The element of a generic's input its body sees at loop indices `indices`."""
    if not isinstance(value.type, ir.RankedTensorType):
        return value  # a scalar input
    return tensor.ExtractOp(value, [_index_at(e, indices) for e in amap.results]).result


def _evaluate_at(producer, extract) -> ir.Value:
    """The producer's body, built before `extract`, at the extract's indices."""
    indices = list(extract.operands)[1:]
    maps = _maps(producer)
    body = producer.regions[0].blocks[0]
    inputs = list(producer.operands)[:len(maps) - 1]
    mapping = {arg: _element_of(v, m, indices) for arg, v, m in zip(body.arguments, inputs, maps)}
    for op in body.operations:
        name = op.operation.name
        if name == "linalg.yield":
            return mapping[op.operands[0]]
        if name == "linalg.index":
            mapping[op.results[0]] = indices[ir.IntegerAttr(op.attributes["dim"]).value]
            continue
        new = ir.Operation.create(name, results=[r.type for r in op.results],
                                  operands=[mapping.get(v, v) for v in op.operands],
                                  attributes={n: op.attributes[n] for n in op.attributes})
        mapping.update(zip(op.results, new.results))
    raise ValueError("linalg.generic body without a yield")


def compute_gathered_elements(module: ir.Module) -> int:
    """Rewrite every extract of a gathered-only producer (module docstring); returns how many
    producers were removed."""
    producers = ops_where(module, _gathered_only)
    with module.context:
        for producer in producers:
            for use in list(producer.results[0].uses):
                extract = use.owner
                with ir.InsertionPoint(extract), extract.location:
                    value = _evaluate_at(producer, extract)
                extract.results[0].replace_all_uses_with(value)
                extract.erase()
            producer.erase()
    return len(producers)
