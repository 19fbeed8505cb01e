"""Plan: the study read and checked, its placements expanded, its budget, the launchers' commands."""
