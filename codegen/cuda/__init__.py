"""The `cuda` target (see issue: gpu dialect -> NVVM -> PTX -> CUDA driver)."""
