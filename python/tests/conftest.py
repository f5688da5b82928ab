import pytest


@pytest.fixture
def small():
    """Device options of a small zoned device that keeps data."""
    return {"zones": 4, "zone_size": "1m", "zone_capacity": "512k", "data": True}


@pytest.fixture
def small_fdp():
    """Device options of a small FDP device: the zn540-fdp cut to 144 MiB of flash under a 100 MiB
    namespace with 2 reclaim unit handles (examples/fio/fdp-hot-cold.fio names the same)."""
    return {
        "preset": "zn540-fdp",
        "set": {
            "flash.channels": 4,
            "flash.chips_per_channel": 1,
            "flash.planes_per_die": 1,
            "flash.blocks_per_plane": 48,
            "flash.pages_per_block": 48,
            "mapping.d_zone": 4,
            "namespace.zones": 100,
            "namespace.conventional_zones": 100,
            "namespace.zone_size_bytes": "1m",
            "namespace.zone_capacity_bytes": "1m",
            "write_buffer.zone_buffer_bytes": "1m",
            "conventional.gc_free_blocks_start": 3,
            "fdp.handles": 2,
        },
    }
