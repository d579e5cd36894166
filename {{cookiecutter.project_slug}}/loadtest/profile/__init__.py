"""Attributing the limit: where the server's CPU goes while a scenario runs, by layer and by
function (py-spy's samples), as a flame graph, a speedscope file and a markdown report."""

from .layers import LAYERS, Attribution, attribute, layer_of
from .run import Options, main

__all__ = ["LAYERS", "Attribution", "Options", "attribute", "layer_of", "main"]
