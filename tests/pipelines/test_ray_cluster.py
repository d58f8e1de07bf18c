"""--engine ray on two Ray nodes of one CPU each (ray.cluster_utils.Cluster): the pool's two actors run on
different nodes and the report is the in-process one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mldebug_cli.formats.json_format import report_document
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.pipelines.ray_engine import local_priority
from support import QWEN25, no_ray_executor_left, write_chat_shards

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a two-node Ray cluster: the slow tier (docs/testing.md)


@pytest.fixture(scope="module")
def two_nodes():
    from ray.cluster_utils import Cluster

    local_priority()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False, logging_level="warning")
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(autouse=True)
def executors_end_with_their_test():
    yield
    no_ray_executor_left()


def test_two_nodes_give_the_same_report(two_nodes, tmp_path):
    assert sum(node["Alive"] for node in ray.nodes()) == 2
    options = InspectOptions(dataset=str(write_chat_shards(tmp_path, 3000, 3, row_group_size=500)),
                             tokenizer=str(QWEN25), all_rows=True, max_length=512, workers=1)
    local = report_document(build_report(options))
    on_ray = report_document(build_report(replace(options, engine="ray", ray_address=two_nodes.address)))
    assert on_ray["context"].pop("engine") == f"ray (Ray Data, up to an actor per CPU, cluster {two_nodes.address})"
    assert on_ray == local
