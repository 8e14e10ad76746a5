"""Workflows: what a command does, over the stages: run, merge, history, bisect, explain,
bench, the results page."""
