"""The {{ cookiecutter.resource_plural }} resource: routes -> repository -> sql."""
