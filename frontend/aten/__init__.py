"""Importing this package registers the import rule of every supported ATen op."""

from . import creation, elementwise, nn, reduction, shape, training  # noqa: F401
