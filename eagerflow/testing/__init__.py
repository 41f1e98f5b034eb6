"""Test helpers: gradient checks and registry-driven sample generation."""

from eagerflow.testing.gradient_check import check_vjp, numeric_vjp_check  # noqa: F401
