"""LLVM IR text from MLIR's (newer) LLVM, made readable by llvmlite's (older) parser.

The newer printer writes float constants as `f0x<bits>`, special values as words (`-inf`), and
the shortest decimal that rounds back (`4.471500e-02`), none of which llvmlite's LLVM accepts for
float/half/bfloat: each is rewritten to the hex forms every LLVM reads. Used by every target
that hands MLIR's LLVM IR to llvmlite.
"""

import re
import struct


# The MLIR wheel's LLVM prints infinities and NaNs as words (`-inf`), which llvmlite's parser
# rejects: write them in the hex form every LLVM reads (double-hex for float/double).
_SPECIAL = re.compile(r"(?<![\w.%@\"$-])([+-]?)(inf|[qs]?nan)\b")  # NaN may read `+qnan`
_HEX = {
    "double": {"inf": "0x7FF0000000000000", "-inf": "0xFFF0000000000000", "nan": "0x7FF8000000000000"},
    "half": {"inf": "0xH7C00", "-inf": "0xHFC00", "nan": "0xH7E00"},
    "bfloat": {"inf": "0xR7F80", "-inf": "0xRFF80", "nan": "0xR7FC0"},
}


_BITS = re.compile(r"\bf0x([0-9A-Fa-f]+)\b")  # the newer `f0x<bits of the type>` literal


def _float_bits(m: re.Match, line: str) -> str:
    bits = m.group(1)
    if len(bits) == 8:  # float: llvmlite wants the value as a double in hex
        value = struct.unpack("<f", struct.pack("<I", int(bits, 16)))[0]
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if len(bits) == 4:
        return ("0xR" if "bfloat" in line else "0xH") + bits.upper()
    return "0x" + bits.upper()


_DECIMAL = re.compile(r"(?<![\w.%@\"$])[-+]?\d+\.\d+e[-+]\d+\b")


def _decimal_to_hex(m: re.Match, kind: str) -> str:
    """A decimal literal of a float/half/bfloat op in hex: llvmlite requires decimal constants
    to be exact, and the newer printer writes the shortest decimal that rounds back."""
    value = float(m.group(0))
    bits32 = struct.unpack("<I", struct.pack("<f", value))[0]
    if kind == "half":
        return "0xH%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    if kind == "bfloat":
        return "0xR%04X" % (bits32 >> 16)
    as_float = struct.unpack("<f", struct.pack("<I", bits32))[0]
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", as_float))[0]


def _narrow_kind(line: str) -> str | None:
    if "double" in line:
        return None
    return next((k for k in ("bfloat", "half", "float") if k in line), None)


def to_llvmlite_text(text: str) -> str:
    def fix(line: str) -> str:
        if "f0x" in line:
            line = _BITS.sub(lambda m: _float_bits(m, line), line)
        kind = _narrow_kind(line) if "e" in line else None
        if kind is not None and _DECIMAL.search(line):
            line = _DECIMAL.sub(lambda m: _decimal_to_hex(m, kind), line)
        if "inf" not in line and "nan" not in line:
            return line
        kind = next((k for k in ("bfloat", "half") if f"{k} " in line or f"{k}>" in line), "double")
        table = _HEX[kind]
        return _SPECIAL.sub(lambda m: table["-inf" if m.group(0) == "-inf" else m.group(2)[-3:]], line)

    return "\n".join(fix(line) for line in text.splitlines())
