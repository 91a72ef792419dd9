"""No generated read or write leaves its tensor, whatever the index values (lowering/rules/
common.index_in_range for gathers, scatter.py's _wrap for stores).

Eager rejects an out-of-range index (IndexError on CPU, a device assert that ends the CUDA
context); a compiled region is not given the chance to check before its loops run, so its
loads stay inside the tensor instead of reading (or, on a GPU, faulting on) other memory."""

import torch
import torch.nn.functional as F

import dynamo_mlir
from helpers import assert_all_compiled


def test_gathers_with_indices_far_out_of_range_stay_inside_the_table():
    table = torch.randn(10, 4)
    ids = torch.tensor([3, 10**12, -(10**12), -1])  # in range, far past the end, far before the start
    got = torch.compile(lambda t, i: F.embedding(i, t) * 2, backend="mlir")(table, ids)
    clamped = torch.tensor([3, 9, 0, 9])  # -1 counts from the end, as in eager
    torch.testing.assert_close(got, F.embedding(clamped, table) * 2)
    assert_all_compiled()


def test_gather_along_a_dim_with_out_of_range_indices_stays_inside():
    x = torch.randn(3, 5)
    idx = torch.tensor([[0, 7], [-2, 4], [-9, 1]])
    got = torch.compile(lambda x, i: torch.gather(x, 1, i) + 1, backend="mlir")(x, idx)
    torch.testing.assert_close(got, torch.gather(x, 1, torch.tensor([[0, 4], [3, 4], [0, 1]])) + 1)
    assert dynamo_mlir.stats()["ops_fallback"] == 0 and dynamo_mlir.stats()["ops_compiled"] >= 1
