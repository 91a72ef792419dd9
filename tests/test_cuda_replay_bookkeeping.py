"""The CUDA replay's bookkeeping of which outputs a caller still holds (codegen/cuda/runtime.py),
checked without a GPU: it only counts references, which CPU tensors have too."""

import torch

from dynamo_mlir.codegen.cuda.runtime import _Replay, _storage_uses, _tensor_refs


class _Outputs(_Replay):
    """A replay's output bookkeeping without a captured graph."""

    def __init__(self, outputs):
        self.outputs = outputs
        self.alone = _tensor_refs(self.outputs), _storage_uses(self.outputs)


def test_held_outputs_sees_tensors_views_and_lists_and_their_release():
    replay = _Outputs([torch.randn(3), torch.randn(4), torch.randn(5)])
    assert replay.held_outputs() == []
    first = replay.outputs[0]
    assert replay.held_outputs() == [0]
    del first
    view = replay.outputs[2][1:]  # only a view: the storage is still read
    assert replay.held_outputs() == [2]
    del view
    everything = list(replay.outputs)  # the list a call returned
    assert replay.held_outputs() == [0, 1, 2]
    del everything
    assert replay.held_outputs() == []
