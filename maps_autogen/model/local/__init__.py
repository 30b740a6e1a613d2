"""The embedded offline model: llama.cpp's OpenAI-compatible server in a child process.

gguf.py reads model files, settings.py turns settings into a checked launch plan, server.py
runs and watches the child (parent side), child.py is the child's entry point. This package
file imports nothing, so the child does not pay for the parent's imports.
"""
