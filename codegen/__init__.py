"""Targets, their stage tables, the compiler driver and the runtimes."""

from . import config
from .config import Options, resolve
from .options import TargetOptions, option
from .driver import run_stages
from .passes import CompileError
from .target import Stage, Target, all_targets, get_target, register_target

__all__ = ["config", "Options", "TargetOptions", "option", "resolve", "run_stages", "CompileError", "Stage", "Target", "all_targets",
           "get_target", "register_target"]
