"""The README's settings table (settings_table.py) is current and names every setting of the
Settings class, as the class itself says them: read from its source, checked against the class."""

from pathlib import Path

import pytest
import settings_table

from {{ cookiecutter.package_name }}.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = settings_table.package_folder(ROOT)


def test_readme_settings_table_is_the_one_settings_table_py_writes() -> None:
    readme = (ROOT / "README.md").read_text()
    assert settings_table.updated(readme, PACKAGE) == readme, "run `make settings-readme`"


def test_settings_table_names_every_setting_with_its_default_and_description() -> None:
    rows = {name: (default, text) for name, default, _, text in settings_table.settings(PACKAGE)}
    assert list(rows) == [name.upper() for name in Settings.model_fields]
    for name, field in Settings.model_fields.items():
        default, text = rows[name.upper()]
        assert text == settings_table._cell(field.description), name
        if not field.is_required() and field.default not in (None, "", []):
            assert default == f"`{settings_table._cell(field.default)}`", name


def test_a_setting_without_a_description_stops_the_table(tmp_path: Path) -> None:
    package = tmp_path / "src" / PACKAGE.name
    package.mkdir(parents=True)
    (package / "settings_sources.py").write_text((PACKAGE / "settings_sources.py").read_text())
    source = (PACKAGE / "settings.py").read_text()
    (package / "settings.py").write_text(
        source.replace("    model_config =", "    added: int = Field(1)\n    model_config =", 1)
    )
    with pytest.raises(settings_table.SettingsTableError, match="added has no description"):
        list(settings_table.settings(package))
