"""The jwt option sets' suites, as tests/test_generated_suites.py runs the others': a file of their
own, so that two of `make test`'s processes run the two halves at once."""

from .option_sets import baked_variants

# The test is collected here too, where it takes this file's `variant`.
from .test_generated_suites import JWT, test_variant_passes_its_own_suite_on_postgres  # noqa: F401

variant = baked_variants(JWT)
