"""Composition of the lower packages: ingest jobs and what runs after them (figure types, central
scores, index refresh), and index builds that combine text, pictures and learned models. Lower
packages never import this one; the CLI, the API and the workers call it."""
