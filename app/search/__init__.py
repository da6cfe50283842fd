"""Retrieval core: text analysis, lexical (BM25 / tf.idf) and dense (FAISS) indexes, the searcher and its parts.

Plain Python modules with no DB, web or task-queue imports, so the same code runs in the API
process, in a worker that rebuilds the index, and in benchmarks. Importing this package is cheap:
torch/transformers/faiss are only imported by the modules that need them, and lazily.
"""
