"""loadtest/profile/layers.py and flamegraph.py on a small recording made here: each sample's own
frame named by its layer, the warm-up cut off by time, and the flame graph naming the functions."""

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from loadtest.profile import flamegraph
from loadtest.profile.layers import (
    FRAMEWORK,
    KIT,
    LAYERS,
    LOOP,
    OTHER,
    RESOURCES,
    SERVICE,
    attribute,
    layer_of,
    trimmed,
)

PACKAGE = "inventory_service"
SITE = "/venv/lib/python3.11/site-packages"
SOURCE = f"/bake/src/{PACKAGE}"


@pytest.mark.parametrize(
    ("file", "layer"),
    [
        (f"{SOURCE}/orders/routes.py", RESOURCES),
        (f"{SOURCE}/kit/routing.py", KIT),
        (f"{SOURCE}/db.py", SERVICE),
        (f"{SITE}/fastapi/routing.py", FRAMEWORK),
        (f"{SITE}/starlette/middleware/exceptions.py", FRAMEWORK),
        ("/usr/lib/python3.11/asyncio/runners.py", LOOP),
        ("/usr/lib/python3.11/asyncio/locks.py", OTHER),
        ("/usr/lib/python3.11/json/decoder.py", OTHER),
    ],
)
def test_a_source_file_is_named_by_the_layer_it_belongs_to(file: str, layer: str) -> None:
    assert layer_of(file, PACKAGE) == layer


def _recording() -> dict[str, Any]:
    """One thread (id 7) at 100 samples/s: 1 s of start-up, then 2 s of requests."""
    frames = [
        {"name": "run", "file": "/usr/lib/python3.11/asyncio/runners.py", "line": 118},
        {"name": "create_app", "file": f"{SOURCE}/serving/app.py", "line": 60},
        {"name": "handler", "file": f"{SITE}/fastapi/routing.py", "line": 300},
        {"name": "get_order", "file": f"{SOURCE}/orders/routes.py", "line": 40},
    ]
    start_up = [[0, 1]] * 100
    requests = [[0, 2, 3]] * 120 + [[0, 2]] * 30 + [[0]] * 50
    return {
        "shared": {"frames": frames},
        "profiles": [
            {
                "name": 'Thread 7 "MainThread"',
                "samples": start_up + requests,
                "weights": [0.01] * 300,
            },
            {"name": 'Thread 8 "other"', "samples": [[0]] * 300, "weights": [0.01] * 300},
        ],
    }


def test_the_window_leaves_out_the_start_up_and_the_shares_sum_to_100() -> None:
    attribution = attribute(_recording(), 7, PACKAGE, start_s=1.0, end_s=3.0)
    assert attribution.samples == 200
    assert attribution.layers[RESOURCES] == pytest.approx(60.0)
    assert attribution.layers[FRAMEWORK] == pytest.approx(15.0)
    assert attribution.layers[LOOP] == pytest.approx(25.0)
    assert attribution.layers["serving/"] == 0.0  # create_app ran before the window
    assert sum(attribution.layers.values()) == pytest.approx(100.0)
    assert list(attribution.layers) == list(LAYERS)


def test_the_function_with_the_most_own_time_comes_first() -> None:
    attribution = attribute(_recording(), 7, PACKAGE, start_s=1.0, end_s=3.0)
    function, layer, share = attribution.functions[0]
    assert function.startswith("get_order (orders/routes.py:40)")
    assert layer == RESOURCES
    assert share == pytest.approx(60.0)


def test_a_thread_that_was_not_recorded_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="no samples of thread 9"):
        attribute(_recording(), 9, PACKAGE)


def test_the_trimmed_recording_keeps_the_main_thread_over_the_window() -> None:
    kept = trimmed(_recording(), 7, 1.0, 3.0)
    assert [len(profile["samples"]) for profile in kept["profiles"]] == [200]
    assert kept["profiles"][0]["endValue"] == pytest.approx(2.0)


def test_the_flame_graph_is_svg_that_names_each_function_with_its_share() -> None:
    attribution = attribute(_recording(), 7, PACKAGE, start_s=1.0, end_s=3.0)
    svg = flamegraph.render(attribution.stacks, "orders.by_id")
    root = ET.fromstring(svg)
    titles = [element.text or "" for element in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(
        title.startswith("get_order (orders/routes.py:40): 120 samples, 60.00 %")
        for title in titles
    )
