"""Units and conversion constants: the one place where bare numbers for units live.

Every calculation module imports its constants from here, so that "GB" means one
thing everywhere (decimal, 10**9 bytes) and "GiB" another (binary, 2**30 bytes).

References
----------
.. [1] NIST SP 811 (2008), "Guide for the Use of the International System of Units",
       Appendix B.8/B.9 (BTU_IT = 1055.056 J; ton of refrigeration = 12,000 BTU_IT/h).
.. [2] ASHRAE Handbook Fundamentals (2021), ch. 1: sensible heat of air,
       q [BTU/h] = 1.08 x CFM x dT [F]  (1.085 with standard air at sea level).
.. [3] EIA-310-E: 1 rack unit (U) = 1.75 in = 44.45 mm.
.. [4] IEC 80000-13: binary prefixes (KiB, MiB, GiB).
"""

from __future__ import annotations

# --- data sizes [bytes] -----------------------------------------------------
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
PB = 10**15
KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

# --- rates ------------------------------------------------------------------
GIGA = 10**9
TERA = 10**12
PETA = 10**15
BITS_PER_BYTE = 8
#: 1 Gb/s in bytes per second.
GBPS_IN_BYTES_PER_S = GIGA / BITS_PER_BYTE

# --- time [s] -----------------------------------------------------------------
SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86_400
HOURS_PER_DAY = 24
DAYS_PER_YEAR = 365
HOURS_PER_YEAR = HOURS_PER_DAY * DAYS_PER_YEAR  # 8760 h, non-leap year
SECONDS_PER_YEAR = HOURS_PER_YEAR * SECONDS_PER_HOUR  # 31,536,000 s
MONTHS_PER_YEAR = 12

# --- counts -------------------------------------------------------------------
#: Tokens in the "million tokens" of a price per million tokens (a count, not bytes).
TOKENS_PER_MILLION = 10**6

# --- power and heat -----------------------------------------------------------
#: 1 W = 3.412142 BTU_IT/h, since 1 BTU_IT = 1055.05585 J [1]: 3600 / 1055.05585.
BTU_PER_H_PER_W = 3600 / 1055.05585262
#: 1 ton of refrigeration = 12,000 BTU/h [1] = 3.516853 kW.
BTU_PER_H_PER_TON = 12_000
KW_PER_TON = BTU_PER_H_PER_TON / BTU_PER_H_PER_W / 1000
#: Sensible-heat factor for standard air (rho = 0.075 lb/ft^3, cp = 0.24 BTU/(lb F)):
#: 0.075 x 60 min/h x 0.24 = 1.08 BTU/(h CFM F) [2].
SENSIBLE_HEAT_FACTOR_BTU_PER_H_CFM_F = 1.08
#: kelvin (or deg C) difference to deg F difference.
F_PER_K = 9 / 5

# --- length and area ----------------------------------------------------------
MM_PER_INCH = 25.4
#: One rack unit [3].
MM_PER_RACK_UNIT = 1.75 * MM_PER_INCH
M2_PER_FT2 = 0.09290304
LB_PER_KG = 2.20462262

W_PER_KW = 1000
KW_PER_MW = 1000

# --- facility: power, heat, air -----------------------------------------------
#: 1 ft = 0.3048 m exactly (international foot, NIST SP 811 B.8).
M_PER_FT = 0.3048
#: 1 ft^3/min in m^3/s: 0.3048^3 / 60.
M3_PER_S_PER_CFM = M_PER_FT**3 / SECONDS_PER_MINUTE
#: Air at about 20 C, sea level: density [kg/m^3] and specific heat [J/(kg K)] for the SI
#: form of the sensible-heat equation, q = rho * cp * V * dT (ASHRAE Fundamentals ch. 1) [2].
AIR_DENSITY_KG_PER_M3 = 1.2
AIR_CP_J_PER_KG_K = 1005.0
#: Generator sets are rated in kVA at a lagging power factor of 0.8 (ISO 8528-1 rating basis).
GENERATOR_POWER_FACTOR = 0.8
#: Modern double-conversion UPS output power factor (IEC 62040-3 class VFI units are
#: commonly rated at 0.9-1.0; 0.9 is the conservative end).
UPS_POWER_FACTOR = 0.9
