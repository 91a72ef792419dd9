"""cdist / pdist: compiled as a broadcast difference and a p-norm, checked against eager."""

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled

CDIST = [
    (0.0, (5, 5, 2), (5, 6, 2)), (1.0, (2, 4, 3), (1, 5, 3)), (2.0, (4, 3), (5, 3)),
    (float("inf"), (4, 3), (5, 3)), (1.5, (3, 4, 3), (3, 2, 3)),
]


@pytest.mark.parametrize("p,shape1,shape2", CDIST)
def test_cdist_matches_eager(p, shape1, shape2):
    a, b = torch.randn(shape1), torch.randn(shape2)
    a[..., 0, :] = b[..., 0, :]  # one zero distance (p=0 counts, p=2 has no matmul rounding)
    fn = lambda a, b: torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist")
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(a, b), fn(a, b))
    assert_all_compiled()


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist"])
def test_cdist_euclidean_matmul_form_matches_eager(mode):
    # 30 rows: eager rewrites p=2 as |a|^2 + |b|^2 - 2ab before tracing; that graph compiles.
    a, b = torch.randn(30, 3), torch.randn(4, 3)
    fn = lambda a, b: torch.cdist(a, b, compute_mode=mode)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(a, b), fn(a, b))
    assert_all_compiled(library={"aten.mm.default": 1})  # the -2ab term: MKL's sgemm_


@pytest.mark.parametrize("p", [2.0, 0.0, 1.0, float("inf")])
@pytest.mark.parametrize("shape", [(5, 4), (1, 3), (2, 1)])
def test_pdist_matches_eager(p, shape):
    x = torch.randn(shape)
    fn = lambda x: F.pdist(x, p=p)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x), fn(x))
    assert_all_compiled(min_ops=0 if shape[0] == 1 else 1)
