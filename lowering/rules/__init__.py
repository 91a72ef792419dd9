"""Importing this package registers every generic lowering rule (dynamo op -> linalg)."""

from . import elementwise, reduction, shape, structured, values  # noqa: F401
