"""Calibration from the user's own measurements: GEMM efficiency by shape and alpha-beta
communication terms per link level, saved as dated profiles that a scenario selects."""
