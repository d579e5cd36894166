"""The profile's markdown: per scenario, the layers' shares of the server's samples, the functions
with the most own time, and the load that was measured (the client's CPU beside it)."""

from dataclasses import dataclass

from .layers import LAYERS, Attribution


@dataclass(frozen=True)
class Profiled:
    scenario: str
    rate: float
    rps: float
    p99_ms: float
    server_cpu: float | None  # percent of one core over the window
    client_cpu: float  # percent of one core, every client process together
    attribution: Attribution
    flamegraph: str  # file names beside the report
    speedscope: str


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def scenario_section(profiled: Profiled) -> str:
    attribution = profiled.attribution
    lines = [
        f"## {profiled.scenario}",
        "",
        f"{profiled.rate:,.0f} requests/s asked, {profiled.rps:,.0f} answered, p99 "
        f"{profiled.p99_ms:.1f} ms; server CPU {_percent(profiled.server_cpu)} of its core, "
        f"client CPU {_percent(profiled.client_cpu)} of one core; {attribution.samples:,} samples "
        f"of the server's main thread over {attribution.seconds:.1f} s.",
        "",
        f"Flame graph: [{profiled.flamegraph}]({profiled.flamegraph}); speedscope file: "
        f"[{profiled.speedscope}]({profiled.speedscope}) (open it at speedscope.app).",
        "",
        "| layer | share of samples (own time) |",
        "|---|---:|",
        *(f"| {layer} | {attribution.layers[layer]:.1f} % |" for layer in LAYERS),
        "",
        "| function (own time) | layer | share |",
        "|---|---|---:|",
        *(
            f"| `{function}` | {layer} | {share:.1f} % |"
            for function, layer, share in attribution.functions
        ),
        "",
    ]
    return "\n".join(lines)


def document(sections: list[Profiled], command: str) -> str:
    return "\n".join(
        [
            "# Where the server's CPU goes",
            "",
            f"Written by `{command}`: py-spy sampled the server's main thread while each scenario "
            "ran open loop at a fixed rate; a sample counts for the layer of its innermost Python "
            'function (its own time). "The event loop waiting" is the loop\'s own frame: idle in '
            "epoll, or in uvloop's C code, which py-spy does not see; it is left out of the functions "
            "table, which lists work. Samples are taken by the clock: a server that other "
            "processes kept off its core shows where it was stopped, and its CPU figure below "
            "is then well under its share of work.",
            "",
            *(scenario_section(profiled) for profiled in sections),
        ]
    )
