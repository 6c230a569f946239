"""Exploring many designs: sweeps over scenario keys, inverse design (the largest or cheapest
design that meets limits), Pareto fronts and side-by-side comparison."""
