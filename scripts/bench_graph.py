#!/usr/bin/env python3
"""Times networkx on the graphs of `make bench-graph` (cmd/bench-graph).

Reads {"graphs": [{"id", "nodes", "edges": [[u, v, w], ...]}]} on stdin, the
same document the networkx oracle reads, and answers on stdout with

    {"networkx": "2.8.8", "results": {id: {"runs": n, "first": s, "best": s,
        "cpu_first": s, "cpu_best": s, "estimated": bool,
        "metrics": {...} | null}}}

The computation timed is the oracle's (evals/testdata/networkx_oracle.py):
every metric of the graph evaluator, networkx's functions with default
arguments, and the same fallbacks (largest SCC for the path metrics, null for
an eigenvector centrality that does not converge). The time covers building
the nx.DiGraph from the edge list, as the Go side's covers building its graph
from the trace. Each graph is computed --runs times in a row (default 5):
"first" is the first call (in a fresh process, what networkx's first use
costs: it imports scipy for pagerank then), "best" the best of the runs;
wall time (perf_counter) and process CPU time (process_time). bench-graph
starts one process per graph, so every graph's first call is a fresh
process's.

Graphs with more than --full-max nodes (default 1000) are not run in full:
betweenness, closeness, the average shortest path length and the diameter
each cost one BFS per source node, O(V*E) in all, which at 10,000 nodes keeps
networkx busy for the better part of an hour. They are timed once from
--sample sources (default 200) and the time scaled to all n sources
("estimated": true, "runs": 1); the other metrics are timed in full. --full
runs every graph in full.
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


def clocks():
    return time.perf_counter(), time.process_time()


def time_sampled(oracle, g, k, seed=1):
    """Full metric set, the O(V*E) part from k sources scaled by n/k:
    (wall seconds, CPU seconds)."""
    w0, c0 = clocks()
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
    w1, c1 = clocks()
    cheap = (w1 - w0, c1 - c0)

    n = len(G)
    sample = random.Random(seed).sample(list(G), min(k, n))
    in_h = [v for v in sample if v in H] or list(H)[: len(sample)]
    w0, c0 = clocks()
    # Each of these is what the full call does per source node.
    nx.betweenness_centrality(G, k=len(sample), seed=seed)
    for v in sample:
        # closeness_centrality's per-node body, on the graph reversed once.
        sp = nx.single_source_shortest_path_length(R, v)
        totsp = sum(sp.values())
        if totsp > 0.0 and n > 1:
            _ = (len(sp) - 1.0) / totsp * ((len(sp) - 1.0) / (n - 1))
    w1, c1 = clocks()
    on_g = (w1 - w0, c1 - c0)
    w0, c0 = clocks()
    for v in in_h:
        sum(nx.single_source_shortest_path_length(H, v).values())
    nx.eccentricity(H, v=in_h)
    w1, c1 = clocks()
    on_h = (w1 - w0, c1 - c0)
    return tuple(cheap[i] + on_g[i] * n / len(sample) + on_h[i] * len(H) / len(in_h) for i in (0, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full-max", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()

    oracle = load_oracle()
    doc = json.load(sys.stdin)
    results = {}
    for g in doc["graphs"]:
        if not args.full and len(g["nodes"]) > args.full_max:
            wall, cpu = time_sampled(oracle, g, args.sample)
            results[g["id"]] = {"runs": 1, "first": wall, "best": wall, "cpu_first": cpu, "cpu_best": cpu,
                                "estimated": True, "metrics": None}
            print(f"networkx: {g['id']}: ≈{wall:.2f}s", file=sys.stderr, flush=True)
            continue
        walls, cpus = [], []
        metrics = None
        for _ in range(max(1, args.runs)):
            w0, c0 = clocks()
            metrics = oracle.compute(oracle.build(g))
            w1, c1 = clocks()
            walls.append(w1 - w0)
            cpus.append(c1 - c0)
            print(f"networkx: {g['id']}: run {len(walls)}: {walls[-1]:.2f}s", file=sys.stderr, flush=True)
        results[g["id"]] = {"runs": len(walls), "first": walls[0], "best": min(walls),
                            "cpu_first": cpus[0], "cpu_best": min(cpus), "estimated": False, "metrics": metrics}
    json.dump({"networkx": nx.__version__, "results": results}, sys.stdout, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
