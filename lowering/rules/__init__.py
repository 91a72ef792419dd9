"""Importing this package registers every generic lowering rule (dynamo op -> linalg)."""

from . import dynamic, elementwise, reduction, shape, structured, values  # noqa: F401
