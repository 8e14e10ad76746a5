"""Reports as text, Markdown and HTML pages: formatting of numbers already made.

Rendering reads the model (`recall.analysis.model`) or the JSON report made of it, and never runs
anything: no module here imports measuring, building or spawning code (tests/test_imports.py
holds it to that), so a page can be made again from a kept report alone.
"""
