#!/usr/bin/env python3
"""Label oracle: the graph evaluator's findings and label, from docs/evaluators.md.

This is an independent implementation of the rules written in
docs/evaluators.md ("The graph evaluator's findings and label"), written from
that text and networkx alone, so that the Go evaluator (evals/graph.go) can be
checked against the written rules rather than against itself.

Input (stdin, or a file given as the argument), one JSON document:

    {"graphs": [
      {"id": "g0",
       "nodes": [{"name": "coordbench-green", "assessor": true},
                 {"name": "user", "virtual": true},
                 {"name": "coordinator"}, {"name": "reviewer-1"}],
       "edges": [["coordbench-green", "coordinator", 1],
                 ["coordinator", "reviewer-1", 2]],
       "include_virtual_nodes": false}
    ]}

A node is an agent of the trace or a participant (the two are the same to
the rules); "assessor" and "virtual" default to false. An edge is
[from, to, calls]; an edge may name a node not listed (it is then a measured
node), edges with fewer than 1 call or an empty end are ignored, and the calls
of repeated (from, to) pairs add up.

Output (stdout):

    {"networkx": "3.x", "results": {"g0": {
        "measured": ["coordinator", "reviewer-1"],
        "label": "sparse",
        "findings": [{"kind": "...", "agents": [...]}, ...]}}}

With --shapes it prints, instead, the labels of the common shapes (chain,
fan-out, fan-in, star, mesh, ring) for sizes 2 to 8, as a Markdown table.
"""

import argparse
import json
import sys

import networkx as nx

BOTTLENECK_BETWEENNESS = 0.5
BETWEENNESS_TOLERANCE = 1e-9


def judged_graph(g):
    """Section 1: the measured nodes and the links between distinct ones."""
    include_virtual = bool(g.get("include_virtual_nodes", False))
    nodes = {}  # name -> measured
    order = []
    for nd in g.get("nodes") or []:
        name = nd["name"] if isinstance(nd, dict) else nd
        if not name or name in nodes:
            continue
        excluded = isinstance(nd, dict) and (nd.get("assessor") or nd.get("virtual"))
        nodes[name] = include_virtual or not excluded
        order.append(name)
    calls = {}
    for u, v, c in g.get("edges") or []:
        if not u or not v or c < 1:
            continue
        for name in (u, v):
            if name not in nodes:
                nodes[name] = True
                order.append(name)
        calls[(u, v)] = calls.get((u, v), 0) + c
    measured = sorted(n for n in order if nodes[n])
    links = {
        (u, v): c
        for (u, v), c in calls.items()
        if u != v and nodes[u] and nodes[v]
    }
    return measured, links


def judge(g):
    measured, links = judged_graph(g)
    n = len(measured)
    if n == 0:
        return {"measured": measured, "label": "insufficient_evidence", "findings": []}
    if n == 1:
        return {"measured": measured, "label": "single_agent", "findings": []}

    m = len(links)
    W = sum(links.values())
    callees = {v: set() for v in measured}
    callers = {v: set() for v in measured}
    calls = {v: 0 for v in measured}
    for (u, v), c in links.items():
        callees[u].add(v)
        callers[v].add(u)
        calls[u] += c
        calls[v] += c

    G = nx.DiGraph()
    G.add_nodes_from(measured)
    G.add_edges_from(links)
    betweenness = nx.betweenness_centrality(G)

    findings = []
    isolated = [v for v in measured if not callees[v] and not callers[v]]
    if isolated:
        findings.append({"kind": "isolated", "agents": isolated})
    bottleneck = [
        v for v in measured
        if betweenness[v] - BOTTLENECK_BETWEENNESS > BETWEENNESS_TOLERANCE
    ]
    if bottleneck:
        findings.append({"kind": "bottleneck", "agents": bottleneck})
    central = []
    if W > 0:
        central = [
            v for v in measured
            if 10 * calls[v] > 7 * W and (len(callees[v]) >= 2 or len(callers[v]) >= 2)
        ]
    if central:
        findings.append({"kind": "over_centralized", "agents": central})
    healthy = (
        not findings
        and nx.is_weakly_connected(G)
        and m >= n
        and 10 * m > 3 * n * (n - 1)
    )
    if healthy:
        findings.append({"kind": "healthy_spread", "agents": []})

    kinds = [f["kind"] for f in findings]
    label = "sparse"
    for finding, lab in (("isolated", "isolated"), ("bottleneck", "bottleneck"),
                         ("over_centralized", "over_centralized"), ("healthy_spread", "healthy")):
        if finding in kinds:
            label = lab
            break
    return {"measured": measured, "label": label, "findings": findings}


def shape_edges(shape, n):
    """The common shapes of docs/evaluators.md section 5 on n agents."""
    names = ["c"] + ["r%d" % i for i in range(1, n)]
    if shape == "chain":
        return names, [(names[i], names[i + 1], 1) for i in range(n - 1)]
    if shape == "fan-out":
        return names, [("c", r, 1) for r in names[1:]]
    if shape == "fan-in":
        return names, [(r, "c", 1) for r in names[1:]]
    if shape == "star":
        return names, [e for r in names[1:] for e in (("c", r, 1), (r, "c", 1))]
    if shape == "mesh":
        return names, [(u, v, 1) for u in names for v in names if u != v]
    if shape == "ring":
        return names, [(names[i], names[(i + 1) % n], 1) for i in range(n)]
    raise ValueError(shape)


def shapes_table(out):
    sizes = range(2, 9)
    out.write("| shape | " + " | ".join("n=%d" % n for n in sizes) + " |\n")
    out.write("|---|" + "---|" * len(sizes) + "\n")
    for shape in ("chain", "fan-out", "fan-in", "star", "mesh", "ring"):
        row = []
        for n in sizes:
            names, edges = shape_edges(shape, n)
            if shape == "ring" and n == 2:
                row.append("(mesh)")
                continue
            row.append(judge({"nodes": names, "edges": edges})["label"])
        out.write("| %s | %s |\n" % (shape, " | ".join(row)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", nargs="?", help="the graphs (JSON); stdin when absent")
    ap.add_argument("--shapes", action="store_true", help="print the common shapes' labels")
    args = ap.parse_args()
    if args.shapes:
        shapes_table(sys.stdout)
        return
    if args.input:
        with open(args.input, encoding="utf-8") as f:
            doc = json.load(f)
    else:
        doc = json.load(sys.stdin)
    results = {g["id"]: judge(g) for g in doc["graphs"]}
    json.dump({"networkx": nx.__version__, "results": results}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
