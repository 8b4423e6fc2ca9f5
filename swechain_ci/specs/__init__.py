"""Stage 4, specifications: release notes (changelog) and the API interface (api_scan,
interface) rendered as L1 (render), DecompSynth on the Anthropic API (decompsynth, hunks,
llm), levels L1-L5 from one task set (levels), published specifications (published), the
files under ``specs/`` (store) and the ``specs`` commands (cli).

Imports: the chain stage and the foundation modules (prices among them).
"""
