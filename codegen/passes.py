"""Running MLIR pass pipelines with a repro on failure (torch-mlir's run_pipeline_with_repro)."""

import logging
import os
import tempfile

from torch_mlir import ir, passmanager

log = logging.getLogger("dynamo_mlir")


class CompileError(RuntimeError):
    """A stage failed. Carries the stage, the op it failed on (when known) and a repro path."""

    def __init__(self, stage: str, message: str, repro: str | None = None, op: str | None = None):
        self.stage, self.repro, self.op = stage, repro, op
        text = f"dynamo-mlir: stage '{stage}' failed"
        if op:
            text += f" on op '{op}'"
        text += f": {message}"
        if repro:
            text += f"\n  repro (input IR + pipeline): {repro}"
        super().__init__(text)


def save_repro(stage: str, module_text: str, pipeline: str, repro_dir: str | None) -> str:
    folder = repro_dir or os.path.join(tempfile.gettempdir(), "dynamo_mlir_repro")
    os.makedirs(folder, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"{stage}-", suffix=".mlir", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(f"// stage: {stage}\n// pipeline: {pipeline}\n")
        f.write(f"// reproduce: python -c \"from torch_mlir import ir, passmanager; ...\" or\n")
        f.write(f"//   torch-mlir-opt --pass-pipeline='{pipeline}' {os.path.basename(path)}\n")
        f.write(module_text)
    return path


def failing_op(message: str) -> str | None:
    """The op name an MLIR diagnostic points at ('dynamo.add', 'linalg.generic', ...), if any."""
    for token in message.replace("'", " ").replace('"', " ").split():
        if "." in token and token.split(".")[0] in ("dynamo", "linalg", "tensor", "arith", "math", "memref",
                                                     "func", "scf", "gpu", "nvvm", "llvm", "vector", "bufferization"):
            return token.strip(":,")
    return None


def run_pipeline(module: ir.Module, pipeline: str, stage: str, options=None) -> ir.Module:
    """Run `pipeline` (a comma-separated pass list, nested in builtin.module) in place."""
    text = f"builtin.module({pipeline})"
    before = module.operation.get_asm(enable_debug_info=True)
    try:
        pm = passmanager.PassManager.parse(text, context=module.context)
        if options is not None and options.print_after_all:
            module.context.enable_multithreading(False)
            pm.enable_ir_printing()
        pm.run(module.operation)
    except Exception as e:
        repro = save_repro(stage, before, text, getattr(options, "repro_dir", None))
        message = str(e)
        raise CompileError(stage, message, repro, failing_op(message)) from None
    return module
