"""Words shared by every stage's messages."""


def counted(n, word):
    """'1 run', '3 runs': a count and its noun (a regular plural)."""
    n = int(n)
    return f"{n} {word}{'s' if n != 1 else ''}"
