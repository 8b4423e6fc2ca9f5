"""Stage 1, the chain: ``chains/<id>/chain.yaml`` (definition), each version's sources split
into gold code, hidden tests and protected files (sources, trees), its declared test
environment resolved to pins (environments), and the three-way diff per step (diffs).

Imports: the foundation modules only (models, errors, settings, records, progress).
"""
