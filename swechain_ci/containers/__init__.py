"""Stage 2, containers: the images per chain and version (images) and the narrow, hardened
Docker interface every container goes through (sandbox).

Imports: the chain stage and the foundation modules.
"""
