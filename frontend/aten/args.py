"""Reading a node's arguments: by name, from the op's schema, instead of by position.

An FX node of an ATen op may pass any argument positionally or by keyword, and leaves out the
ones that take their default. `bind(node)` puts them back together from the overload's schema
(`node.target._schema.arguments`), so a rule reads `a = bind(node); a.dim, a.keepdim` whatever
the call looked like, defaults included. An argument without a default that the call left out
(only optional ones can be) is None. Names that are Python keywords read as `a["from"]`.

Also here: what rules do with the values they read (a dim made non-negative, a per-dim
parameter spread over the spatial dims) and which outputs of a multi-output node the graph reads.
"""

import operator


class Args:
    """A node's arguments by schema name: `a.dim`, `a["from"]`, `"dim" in a`, `a.get("step", 1)`.
    Not a dict subclass: an argument may be called `values` or `items`."""

    __slots__ = ("_values",)

    def __init__(self, values: dict):
        self._values = values

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"the op has no argument '{name}'") from None

    def __getitem__(self, name):
        return self._values[name]

    def __contains__(self, name) -> bool:
        return name in self._values

    def get(self, name, default=None):
        """The argument `name`, or `default` where this overload has no such argument."""
        return self._values.get(name, default)

    @property
    def first(self):
        """The first argument: a unary op's input, whatever its schema calls it (self, x, a)."""
        return next(iter(self._values.values()))

    def leading(self, n: int) -> list:
        """The first n arguments in schema order, for a family of overloads that name them
        differently (add.Tensor's self/other, add.int's a/b)."""
        return list(self._values.values())[:n]

    def __repr__(self) -> str:
        return f"Args({self._values!r})"


def bind(node, schema=None, skip: int = 0) -> Args:
    """node's arguments by name, defaults filled in. `schema` and `skip` are for nodes whose
    target wraps an ATen op (the seeded random ops: the op's schema, after `skip` leading
    arguments of the wrapper's own)."""
    schema = schema if schema is not None else node.target._schema
    values = {a.name: a.default_value if a.has_default_value() else None for a in schema.arguments}
    values.update(zip(list(values), node.args[skip:]))  # positional arguments fill the schema's order
    values.update(node.kwargs)
    return Args(values)


def norm_dim(dim: int, rank: int) -> int:
    """A dim in [0, rank) (torch counts negative dims from the end); 0 for a 0-d tensor."""
    return dim % rank if rank else 0


def per_dim(value, n: int) -> list[int]:
    """An int-or-list parameter (kernel_size=3, stride=[2, 1], ...) as one int per dim."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return [int(v) for v in (values * n if len(values) == 1 else values)]


def output_read(node, index: int) -> bool:
    """Whether the graph takes output `index` of a multi-output node (so the rule must make it)."""
    return any(u.target is operator.getitem and u.args[1] == index for u in node.users)


def output_live(node, index: int) -> bool:
    """Whether output `index` is taken and the value taken is used: a rule may leave a dead
    output's value unmatched (an index with another tie order)."""
    return any(u.target is operator.getitem and u.args[1] == index and u.users for u in node.users)
