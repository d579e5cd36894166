"""The pod's memory from a measured peak RSS (loadtest/search/memory.py): the rule on known inputs."""

from loadtest.search.memory import FLOOR_MIB, size_memory


def test_the_memory_is_the_peak_times_the_headroom_plus_a_body_per_socket_rounded_up() -> None:
    memory = size_memory(300.0, headroom=2.0, sockets=1000, body_bytes=64 * 1024)
    assert memory.bodies_mib == 62.5
    assert memory.mib == 704  # 300 x 2 + 62.5 = 662.5, rounded up to 11 x 64
    assert memory.describe().startswith(
        "704Mi (peak RSS 300.0 MiB x 2 + 1,000 sockets x 64 KiB bodies = 662.5 MiB,"
    )


def test_the_headroom_and_the_body_limit_each_raise_the_memory() -> None:
    # 300 x 3 + 62.5 = 962.5: 1,024; 300 x 2 + 1,000 x 1 MiB = 1,576.6: 1,600
    assert size_memory(300.0, headroom=3.0, sockets=1000, body_bytes=64 * 1024).mib == 1024
    assert size_memory(300.0, headroom=2.0, sockets=1000, body_bytes=1 << 20).mib == 1600


def test_a_small_peak_gets_the_charts_floor() -> None:
    memory = size_memory(60.0, headroom=2.0, sockets=1000, body_bytes=64 * 1024)
    assert memory.mib == FLOOR_MIB == 256  # 182.5 MiB would be 192Mi: the chart refuses that
