"""Hand-written dynamo-dialect modules for the cuda tests (generic op form), written as the
frontend imports the ATen decompositions: explicit broadcasts, reductions, elementwise ops."""


# broadcast/reshape take optional dynamic `sizes` operands: name the segments (1 operand, 0 sizes).
SEG = "operandSegmentSizes = array<i32: 1, 0>"


def _t(shape, dt):
    return f"tensor<{'x'.join(map(str, shape))}x{dt}>" if shape else f"tensor<{dt}>"


def elementwise_chain(n=1 << 20, dt="f32"):
    """exp(x) * y + x, then relu: the benchmark's elementwise chain."""
    t = _t([n], dt)
    return f'''
func.func @ew(%x: {t}, %y: {t}) -> {t} {{
  %0 = "dynamo.exp"(%x) : ({t}) -> {t}
  %1 = "dynamo.mul"(%0, %y) : ({t}, {t}) -> {t}
  %2 = "dynamo.add"(%1, %x) : ({t}, {t}) -> {t}
  %3 = "dynamo.relu"(%2) : ({t}) -> {t}
  return %3 : {t}
}}'''


def _row(name, x, r, c, dt, op):
    """%name = broadcast(reduce_op(x over dim 1)) back to [r, c]."""
    t, v, k = _t([r, c], dt), _t([r], dt), _t([r, 1], dt)
    return f'''
  %{name}_r = "dynamo.reduce"(%{x}) {{kind = "{op}", dims = array<i64: 1>}} : ({t}) -> {v}
  %{name}_k = "dynamo.reshape"(%{name}_r) {{{SEG}}} : ({v}) -> {k}
  %{name} = "dynamo.broadcast"(%{name}_k) {{dims = array<i64: 0, 1>, {SEG}}} : ({k}) -> {t}'''


def softmax(r=64, c=256, dt="f32"):
    t = _t([r, c], dt)
    return f'''
func.func @softmax(%x: {t}) -> {t} {{{_row("m", "x", r, c, dt, "max")}
  %s = "dynamo.sub"(%x, %m) : ({t}, {t}) -> {t}
  %e = "dynamo.exp"(%s) : ({t}) -> {t}{_row("z", "e", r, c, dt, "sum")}
  %o = "dynamo.div"(%e, %z) : ({t}, {t}) -> {t}
  return %o : {t}
}}'''


def layernorm(r=64, c=256, dt="f32", eps=1e-5):
    t, w = _t([r, c], dt), _t([c], dt)
    return f'''
func.func @layernorm(%x: {t}, %w: {w}, %b: {w}) -> {t} {{
  %inv_n = "dynamo.constant"() {{value = dense<{1.0 / c:.8e}> : {t}}} : () -> {t}
  %eps = "dynamo.constant"() {{value = dense<{eps:.8e}> : {t}}} : () -> {t}{_row("sum", "x", r, c, dt, "sum")}
  %mean = "dynamo.mul"(%sum, %inv_n) : ({t}, {t}) -> {t}
  %d = "dynamo.sub"(%x, %mean) : ({t}, {t}) -> {t}
  %d2 = "dynamo.mul"(%d, %d) : ({t}, {t}) -> {t}{_row("ss", "d2", r, c, dt, "sum")}
  %var = "dynamo.mul"(%ss, %inv_n) : ({t}, {t}) -> {t}
  %ve = "dynamo.add"(%var, %eps) : ({t}, {t}) -> {t}
  %rs = "dynamo.rsqrt"(%ve) : ({t}) -> {t}
  %n = "dynamo.mul"(%d, %rs) : ({t}, {t}) -> {t}
  %wb = "dynamo.broadcast"(%w) {{dims = array<i64: 1>, {SEG}}} : ({w}) -> {t}
  %bb = "dynamo.broadcast"(%b) {{dims = array<i64: 1>, {SEG}}} : ({w}) -> {t}
  %y = "dynamo.mul"(%n, %wb) : ({t}, {t}) -> {t}
  %o = "dynamo.add"(%y, %bb) : ({t}, {t}) -> {t}
  return %o : {t}
}}'''


def log_softmax(r=64, c=256, dt="f32"):
    t = _t([r, c], dt)
    return f'''
func.func @log_softmax(%x: {t}) -> {t} {{{_row("m", "x", r, c, dt, "max")}
  %s = "dynamo.sub"(%x, %m) : ({t}, {t}) -> {t}
  %e = "dynamo.exp"(%s) : ({t}) -> {t}{_row("z", "e", r, c, dt, "sum")}
  %l = "dynamo.log"(%z) : ({t}) -> {t}
  %o = "dynamo.sub"(%s, %l) : ({t}, {t}) -> {t}
  return %o : {t}
}}'''


def rmsnorm(r=64, c=256, dt="f32", eps=1e-6):
    """x * rsqrt(mean(x^2) + eps) * w: one reduction, then a scale."""
    t, w = _t([r, c], dt), _t([c], dt)
    return f'''
func.func @rmsnorm(%x: {t}, %w: {w}) -> {t} {{
  %inv_n = "dynamo.constant"() {{value = dense<{1.0 / c:.8e}> : {t}}} : () -> {t}
  %eps = "dynamo.constant"() {{value = dense<{eps:.8e}> : {t}}} : () -> {t}
  %x2 = "dynamo.mul"(%x, %x) : ({t}, {t}) -> {t}{_row("ss", "x2", r, c, dt, "sum")}
  %ms = "dynamo.mul"(%ss, %inv_n) : ({t}, {t}) -> {t}
  %ve = "dynamo.add"(%ms, %eps) : ({t}, {t}) -> {t}
  %rs = "dynamo.rsqrt"(%ve) : ({t}) -> {t}
  %n = "dynamo.mul"(%x, %rs) : ({t}, {t}) -> {t}
  %wb = "dynamo.broadcast"(%w) {{dims = array<i64: 1>, {SEG}}} : ({w}) -> {t}
  %o = "dynamo.mul"(%n, %wb) : ({t}, {t}) -> {t}
  return %o : {t}
}}'''


def mlp(b=32, i=64, h=128, o=16, dt="f32"):
    """relu(x @ w1 + b1) @ w2 + b2, then a column sum (a reduction over dim 0)."""
    x, w1, h1, w2, y = _t([b, i], dt), _t([i, h], dt), _t([b, h], dt), _t([h, o], dt), _t([b, o], dt)
    bh, bo, col = _t([h], dt), _t([o], dt), _t([o], dt)
    return f'''
func.func @mlp(%x: {x}, %w1: {w1}, %b1: {bh}, %w2: {w2}, %b2: {bo}) -> ({y}, {col}) {{
  %0 = "dynamo.matmul"(%x, %w1) : ({x}, {w1}) -> {h1}
  %1 = "dynamo.broadcast"(%b1) {{dims = array<i64: 1>, {SEG}}} : ({bh}) -> {h1}
  %2 = "dynamo.add"(%0, %1) : ({h1}, {h1}) -> {h1}
  %3 = "dynamo.relu"(%2) : ({h1}) -> {h1}
  %4 = "dynamo.matmul"(%3, %w2) : ({h1}, {w2}) -> {y}
  %5 = "dynamo.broadcast"(%b2) {{dims = array<i64: 1>, {SEG}}} : ({bo}) -> {y}
  %6 = "dynamo.add"(%4, %5) : ({y}, {y}) -> {y}
  %7 = "dynamo.reduce"(%6) {{kind = "sum", dims = array<i64: 0>}} : ({y}) -> {col}
  return %6, %7 : {y}, {col}
}}'''


def attention_bits(b=2, s=16, d=32, dt="f32"):
    """A permute (transpose kernel), batched matmul, argmax (serial reduction), a cast."""
    x, xt, sc = _t([b, s, d], dt), _t([b, d, s], dt), _t([b, s, s], dt)
    am, h = _t([b, s], "i64"), _t([b, s, s], "bf16")
    return f'''
func.func @attn(%q: {x}, %k: {x}) -> ({sc}, {am}, {h}) {{
  %kt = "dynamo.permute"(%k) {{perm = array<i64: 0, 2, 1>}} : ({x}) -> {xt}
  %s = "dynamo.matmul"(%q, %kt) : ({x}, {xt}) -> {sc}
  %a = "dynamo.arg_reduce"(%s) {{kind = "max", dim = 2 : i64}} : ({sc}) -> {am}
  %h = "dynamo.cast"(%s) : ({sc}) -> {h}
  return %s, %a, %h : {sc}, {am}, {h}
}}'''


MODELS = {
    "elementwise_chain": elementwise_chain,
    "softmax": softmax,
    "layernorm": layernorm,
    "log_softmax": log_softmax,
    "rmsnorm": rmsnorm,
    "mlp": mlp,
    "attention_bits": attention_bits,
}
