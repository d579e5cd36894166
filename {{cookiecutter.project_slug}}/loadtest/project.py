"""The names this load test needs from the project it was baked with: the one rendered module."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "{{ cookiecutter.package_name }}"
PREFIX = "/{{ cookiecutter.resource_plural }}"
HELM_VALUES = ROOT / "deploy" / "helm" / "{{ cookiecutter.project_slug }}" / "values-capacity.yaml"
RESULTS = ROOT / "loadtest" / "results"
BUDGET = ROOT / "loadtest" / "budget.toml"

COUNT_ROWS = "SELECT count(*) FROM {{ cookiecutter.resource_plural }}"
# Fills the table up to the wanted size in one statement; ran again, it inserts nothing.
SEED_ROWS = """
    INSERT INTO {{ cookiecutter.resource_plural }} (name, description, price_cents, quantity)
    SELECT 'seed ' || g, 'seeded by the load test', (g * 7919) % 100000, g % 1000
      FROM generate_series(1, $1) AS g
"""
SEEDED_IDS = "SELECT id FROM {{ cookiecutter.resource_plural }} ORDER BY id LIMIT $1"
ANALYZE = "ANALYZE {{ cookiecutter.resource_plural }}"
