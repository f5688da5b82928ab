import pytest


@pytest.fixture
def small():
    """Device options of a small zoned device that keeps data."""
    return {"zones": 4, "zone_size": "1m", "zone_capacity": "512k", "data": True}
