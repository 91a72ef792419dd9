"""Dynamo backend entry, AOTAutograd, partitioning and FX -> dynamo-dialect import."""
