"""Stage 2, containers: the images per chain and version (images), the sandbox protocol every
stage is typed against (protocol) and its hardened Docker implementation, which every
container goes through (sandbox).

Imports: the chain stage and the foundation modules.
"""
