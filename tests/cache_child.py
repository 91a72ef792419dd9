"""A process that compiles one model with backend="mlir" and prints, as JSON, what the compile
cache did and whether the answer is eager's (tests/test_compile_cache.py runs it in fresh
processes). Usage: python tests/cache_child.py [OPTIONS_JSON]; the cache folder comes from
DYNAMO_MLIR_CACHE_DIR."""

import json
import sys

import torch
import torch.nn as nn

import dynamo_mlir


def model():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                        nn.Linear(8 * 6 * 6, 16), nn.GELU(), nn.Linear(16, 4))
    return net.eval(), torch.randn(2, 3, 6, 6)


if __name__ == "__main__":
    options = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    net, x = model()
    with torch.no_grad():
        got = torch.compile(net, backend="mlir", options=options)(x)
        want = net(x)
    s = dynamo_mlir.stats()
    print(json.dumps({"cache": s["cache"], "ops_compiled": s["ops_compiled"], "ops_library": s["ops_library"],
                      "stages": sorted(s["stage_seconds"]), "max_error": (got - want).abs().max().item()}))
