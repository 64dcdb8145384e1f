#!/usr/bin/env python3
"""networkx oracle for coordbench's graph evaluator (evals/graph*.go).

Reads one JSON document on stdin:

    {"graphs": [{"id": "g0", "nodes": ["a", "b"], "edges": [["a", "b", 3]]}, ...]}

builds an nx.DiGraph per graph (nodes added in the order given, each edge
with weight=count) and writes one JSON document on stdout:

    {"networkx": "2.8.8", "results": {"g0": {...metrics...}, ...}}

Every metric is networkx's own function with default arguments (pagerank with
its default weight="weight", everything else unweighted). Where networkx
raises, the script does what the Go evaluator documents instead and says so,
so the Go test can check that the flags agree:

* eigenvector_centrality / pagerank: PowerIterationFailedConvergence (or the
  null graph) -> value null, "<metric>_converged": false, "<metric>_error".
* average_shortest_path_length / diameter on a digraph that is not strongly
  connected -> computed on the largest strongly connected component (ties:
  the component whose smallest node name sorts first) and
  "<metric>_scope": "largest_scc". networkx >= 3.0 raises for such a digraph;
  2.x raises only when it is not even weakly connected and otherwise divides
  the reachable distances by n(n-1), a value that is no average of anything.
  The script checks strong connectivity itself, so 2.x and 3.x both give the
  3.x semantics.
* the null graph -> "empty": true, null for the graph metrics networkx cannot
  compute (average_clustering, average_shortest_path_length, diameter).

With --time the script also reports, per graph, the wall time networkx took
for the whole metric set ("seconds"). scripts/bench_graph.py imports this
file to time the same computation on the benchmark's graphs.
"""

import argparse
import json
import math
import sys
import time

import networkx as nx

PATH_METRICS = ("average_shortest_path_length", "diameter")


def largest_scc(G):
    """The largest strongly connected component; ties go to the component
    whose smallest node name sorts first (the Go evaluator's rule)."""
    comps = [sorted(c) for c in nx.strongly_connected_components(G)]
    comps.sort(key=lambda c: (-len(c), c[0]))
    return comps[0]


def finite(v):
    if v is None:
        return None
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        return None
    return v


def node_map(d):
    return {str(k): finite(v) for k, v in d.items()}


def build(g):
    G = nx.DiGraph()
    G.add_nodes_from(g["nodes"])
    for u, v, w in g["edges"]:
        G.add_edge(u, v, weight=w)
    return G


def compute(G):
    out = {
        "empty": len(G) == 0,
        "nodes": G.number_of_nodes(),
        "edges": G.number_of_edges(),
        "isolates": sorted(nx.isolates(G)),
    }

    out["degree_centrality"] = node_map(nx.degree_centrality(G))
    out["betweenness_centrality"] = node_map(nx.betweenness_centrality(G))
    out["closeness_centrality"] = node_map(nx.closeness_centrality(G))

    try:
        out["eigenvector_centrality"] = node_map(nx.eigenvector_centrality(G))
        out["eigenvector_centrality_converged"] = True
    except (nx.PowerIterationFailedConvergence, nx.NetworkXPointlessConcept) as e:
        out["eigenvector_centrality"] = None
        out["eigenvector_centrality_converged"] = False
        out["eigenvector_centrality_error"] = type(e).__name__

    try:
        out["pagerank"] = node_map(nx.pagerank(G))
        out["pagerank_converged"] = True
    except nx.PowerIterationFailedConvergence as e:
        out["pagerank"] = None
        out["pagerank_converged"] = False
        out["pagerank_error"] = type(e).__name__

    out["clustering"] = node_map(nx.clustering(G))
    out["density"] = finite(nx.density(G))
    try:
        out["average_clustering"] = finite(nx.average_clustering(G))
    except ZeroDivisionError as e:
        out["average_clustering"] = None
        out["average_clustering_error"] = type(e).__name__
    out["number_weakly_connected_components"] = nx.number_weakly_connected_components(G)
    out["number_strongly_connected_components"] = nx.number_strongly_connected_components(G)

    if len(G) == 0:
        for m in PATH_METRICS:
            out[m] = None
            out[m + "_scope"] = "none"
        return out

    H = None
    try:
        # networkx >= 3.0 raises NetworkXError here; see the module docstring.
        if not nx.is_strongly_connected(G):
            raise nx.NetworkXError("Graph is not strongly connected.")
        out["average_shortest_path_length"] = finite(nx.average_shortest_path_length(G))
        out["average_shortest_path_length_scope"] = "graph"
    except nx.NetworkXError:
        scc = largest_scc(G)
        # A copy, not a subgraph view: views filter every adjacency lookup
        # and make the BFS several times slower, which would flatter the Go
        # side of the benchmark.
        H = G.subgraph(scc).copy()
        out["average_shortest_path_length"] = finite(nx.average_shortest_path_length(H))
        out["average_shortest_path_length_scope"] = "largest_scc"
        out["largest_scc"] = scc
    try:
        out["diameter"] = nx.diameter(G)
        out["diameter_scope"] = "graph"
    except nx.NetworkXError:
        if H is None:
            scc = largest_scc(G)
            H = G.subgraph(scc).copy()
        out["diameter"] = nx.diameter(H)
        out["diameter_scope"] = "largest_scc"
        out["largest_scc"] = scc
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", action="store_true", help="report wall time per graph")
    args = ap.parse_args()

    doc = json.load(sys.stdin)
    results = {}
    for g in doc["graphs"]:
        G = build(g)
        t0 = time.perf_counter()
        res = compute(G)
        if args.time:
            res["seconds"] = time.perf_counter() - t0
        results[g["id"]] = res
    json.dump({"networkx": nx.__version__, "results": results}, sys.stdout, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
