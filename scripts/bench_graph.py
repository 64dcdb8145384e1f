#!/usr/bin/env python3
"""Times networkx on the graphs of `make bench-graph` (cmd/bench-graph).

Reads {"graphs": [{"id", "nodes", "edges": [[u, v, w], ...]}]} on stdin, the
same document the networkx oracle reads, and answers on stdout with

    {"networkx": "2.8.8", "results": {id: {"seconds": s, "estimated": bool,
                                            "metrics": {...} | null}}}

The computation timed is the oracle's (evals/testdata/networkx_oracle.py):
every metric of the graph evaluator, networkx's functions with default
arguments, and the same fallbacks (largest SCC for the path metrics, null for
an eigenvector centrality that does not converge). The time covers building
the nx.DiGraph from the edge list, as the Go side's covers building its graph
from the trace.

Graphs with more than --full-max nodes (default 1000) are not run in full:
betweenness, closeness, the average shortest path length and the diameter
each cost one BFS per source node, O(V*E) in all, which at 10,000 nodes keeps
networkx busy for the better part of an hour. They are timed from --sample
sources (default 200) and the time scaled to all n sources ("estimated":
true); the other metrics are timed in full. --full runs every graph in full.
"""

import argparse
import importlib.util
import json
import os
import random
import sys
import time

import networkx as nx

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "evals", "testdata", "networkx_oracle.py")


def load_oracle():
    spec = importlib.util.spec_from_file_location("networkx_oracle", ORACLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def time_sampled(oracle, g, k, seed=1):
    """Full metric set, the O(V*E) part from k sources scaled by n/k."""
    t0 = time.perf_counter()
    G = oracle.build(g)
    nx.degree_centrality(G)
    try:
        nx.eigenvector_centrality(G)
    except nx.PowerIterationFailedConvergence:
        pass
    nx.pagerank(G)
    nx.clustering(G)
    nx.density(G)
    nx.average_clustering(G)
    nx.number_weakly_connected_components(G)
    nx.number_strongly_connected_components(G)
    H = G
    if not nx.is_strongly_connected(G):
        H = G.subgraph(oracle.largest_scc(G)).copy()
    # closeness_centrality reverses (copies) the digraph once per call.
    R = G.reverse()
    cheap = time.perf_counter() - t0

    n = len(G)
    sample = random.Random(seed).sample(list(G), min(k, n))
    in_h = [v for v in sample if v in H] or list(H)[: len(sample)]
    t0 = time.perf_counter()
    # Each of these is what the full call does per source node.
    nx.betweenness_centrality(G, k=len(sample), seed=seed)
    for v in sample:
        # closeness_centrality's per-node body, on the graph reversed once.
        sp = nx.single_source_shortest_path_length(R, v)
        totsp = sum(sp.values())
        if totsp > 0.0 and n > 1:
            _ = (len(sp) - 1.0) / totsp * ((len(sp) - 1.0) / (n - 1))
    on_g = time.perf_counter() - t0
    t0 = time.perf_counter()
    for v in in_h:
        sum(nx.single_source_shortest_path_length(H, v).values())
    nx.eccentricity(H, v=in_h)
    on_h = time.perf_counter() - t0
    return cheap + on_g * n / len(sample) + on_h * len(H) / len(in_h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full-max", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()

    oracle = load_oracle()
    doc = json.load(sys.stdin)
    results = {}
    for g in doc["graphs"]:
        if not args.full and len(g["nodes"]) > args.full_max:
            secs = time_sampled(oracle, g, args.sample)
            results[g["id"]] = {"seconds": secs, "estimated": True, "metrics": None}
        else:
            t0 = time.perf_counter()
            metrics = oracle.compute(oracle.build(g))
            secs = time.perf_counter() - t0
            results[g["id"]] = {"seconds": secs, "estimated": False, "metrics": metrics}
        print(f"networkx: {g['id']}: {secs:.2f}s", file=sys.stderr, flush=True)
    json.dump({"networkx": nx.__version__, "results": results}, sys.stdout, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
