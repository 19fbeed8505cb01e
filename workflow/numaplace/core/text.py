"""Words shared by every stage's messages: counts, times, shares and sizes as shown."""

import math


def counted(n, word):
    """'1 run', '3 runs': a count and its noun (a regular plural)."""
    n = int(n)
    return f"{n} {word}{'s' if n != 1 else ''}"


def seconds_text(x):
    """A time in seconds as NPB prints it (two decimals)."""
    return "" if _missing(x) else f"{float(x):.2f}"


def percent_text(x):
    """A percentage as the tables show it (one decimal, no space before %)."""
    return "" if _missing(x) else f"{float(x):.1f}%"


def byte_size_text(b):
    """Bytes in the largest binary unit that keeps a number >= 1 ('4 MiB', '1.5 GiB')."""
    b = int(b)
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):.3g} {unit}"
    return f"{b / 1024:.0f} KiB" if b >= 1024 else f"{b} B"


def _missing(x):
    """None, NaN or pandas' NA (without importing pandas: every stage imports this module)."""
    try:
        return x is None or x != x or math.isnan(float(x))
    except (TypeError, ValueError):
        return True
