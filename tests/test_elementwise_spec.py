"""The elementwise spec (dialects/elementwise.py, ELEMENTWISE) is the one table each layer reads:
the dialect's op classes, the lowering's scalar bodies and the frontend's ATen maps."""

import pytest
import torch

from dynamo_mlir.dialects import dynamo as dy
from dynamo_mlir.frontend.aten import elementwise as frontend
from dynamo_mlir.lowering import registry
from dynamo_mlir.lowering.rules.elementwise import BODIES

SPEC = list(dy.ELEMENTWISE.values())


@pytest.mark.parametrize("e", SPEC, ids=lambda e: e.name)
def test_every_spec_entry_has_an_op_class_a_rule_and_its_bodies(e):
    classes = dy.UNARY_CLASSES if e.arity == 1 else dy.BINARY_CLASSES
    assert classes[e.name].OPERATION_NAME == f"dynamo.{e.name}" and classes[e.name].__doc__.startswith(
        f"Elementwise {e.doc}")
    assert registry.lookup(f"dynamo.{e.name}", None)
    names = (e.float_body, e.int_body, e.i1_body)
    assert [fn is not None for fn in BODIES[e.name]] == [n is not None for n in names]
    assert e.float_only == (e.float_body is not None and e.int_body is None)


def test_the_frontend_maps_are_the_spec_s():
    aten = torch.ops.aten
    for table, arity in ((frontend.UNARY, 1), (frontend.BINARY, 2)):
        assert table == {getattr(aten, a): e.name for e in SPEC if e.arity == arity for a in e.aten}
    assert frontend.FLOAT_ONLY == {e.name for e in SPEC if e.float_only}
    assert {"exp", "div", "atan2"} <= frontend.FLOAT_ONLY and not {"add", "neg", "not"} & frontend.FLOAT_ONLY
    assert frontend.BINARY[aten.logical_and] == frontend.BINARY[aten.bitwise_and] == "and"
