"""The names this load test needs from the project it was baked with: the one rendered module."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "{{ cookiecutter.package_name }}"
HELM_VALUES = ROOT / "deploy" / "helm" / "{{ cookiecutter.project_slug }}" / "values-capacity.yaml"
RESULTS = ROOT / "loadtest" / "results"
BUDGET = ROOT / "loadtest" / "budget.toml"
