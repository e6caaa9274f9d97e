"""The chemistry module: molecule datasets, GCN/GIN/GAT classifiers and their exact SI-Graphs.

A sibling of the water modules that uses only the public engine (:mod:`wdn_explain.explain`):
``datasets`` (TU sets through PyG, SMILES CSVs through RDKit), ``models``, ``training``,
``explain`` (one molecule's SIs and its SI-Graph drawing), ``complexity`` and the ``chem``
sub-command (``cli``). Submodules are imported on use: RDKit loads only where needed.
"""
