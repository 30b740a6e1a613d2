"""The embedded offline model: llama.cpp's OpenAI-compatible server in a child process.

_gguf.py reads model files, _settings.py turns settings into a checked launch plan, _server.py
runs and watches the child (parent side), _child.py is the child's entry point. This package
file imports nothing, so the child does not pay for the parent's imports.
"""
