"""Running: builds, finder processes and sessions, and the results they give, kept."""
