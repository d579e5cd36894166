"""The resource generator: `make resource` and the bake render a resource from its field spec.

Dev-only, beside `src/`: the service's wheel and image never carry it. Standard library and
Jinja only, so that the bake's hooks can run it before anything is installed.
"""
