"""LLVM IR text from MLIR's (newer) LLVM, made readable by llvmlite's (older) parser.

MLIR's translation prints float constants in the new `f0x<bits>` syntax; llvmlite's LLVM wants
the classic forms: `0x<double bits>` for float/double, `0xH<bits>` for half, `0xR<bits>` for bf16.
"""

import re
import struct

_HEX_FLOAT = re.compile(r"\bf0x([0-9A-Fa-f]+)\b")


def _classic(match: re.Match) -> str:
    bits = match.group(1)
    if len(bits) == 8:  # float: LLVM spells it as the double with the same value
        value = struct.unpack(">f", bytes.fromhex(bits))[0]
        return "0x" + struct.pack(">d", value).hex().upper()
    if len(bits) == 16:
        return "0x" + bits.upper()
    if len(bits) == 4:  # half or bfloat: the type is not visible here; half is the common case
        return "0xH" + bits.upper()
    return match.group(0)


# Special values printed as words (`store float -inf, ...`); `ninf`/`nnan` fast-math flags and
# %/@ names are left alone by the look-behind and word boundaries.
_SPECIAL = re.compile(r"(?<![\w%@.$-])([-+]?)(inf|nan|qnan)\b")
_SPECIAL_BITS = {("-", "inf"): "0xFFF0000000000000", ("", "inf"): "0x7FF0000000000000",
                 ("+", "inf"): "0x7FF0000000000000"}


def _special(match: re.Match) -> str:
    sign, word = match.groups()
    return _SPECIAL_BITS.get((sign, word), "0x7FF8000000000000")


def to_llvmlite_text(llvm_ir: str) -> str:
    return _SPECIAL.sub(_special, _HEX_FLOAT.sub(_classic, llvm_ir))
