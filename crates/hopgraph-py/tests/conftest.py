import pytest

import hopgraph


@pytest.fixture
def db(tmp_path):
    with hopgraph.open(tmp_path / "mem.hg") as d:
        yield d


@pytest.fixture
def incident(db):
    """outage -caused_by-> deploy-42 -changed-> config-pool; outage -mentions-> pool;
    config-pool -related_to-> pool."""
    with db.batch() as b:
        b.put_node("outage", type="incident", title="API outage",
                   content="Checkout failed for 12 minutes: pooled connections ran out.",
                   importance=0.9, metadata={"severity": "high", "tags": ["api", "db"]})
        b.put_node("deploy-42", type="deploy", title="Deploy 42 of billing-api",
                   content="Raised the request timeout.")
        b.put_node("config-pool", type="config", title="Connection pool size 10",
                   content="max_connections = 10")
        b.put_node("pool", type="concept", title="Connection pooling")
        b.link("outage", "caused_by", "deploy-42")
        b.link("deploy-42", "changed", "config-pool")
        b.link("outage", "mentions", "pool")
        b.link("config-pool", "related_to", "pool")
    return db
