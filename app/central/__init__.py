"""Central figure: which figure of a paper best summarises it (issue 5, seed 002).

Modules, one concept each:
  data       reading papers/figures/mentions from the database, text clean-up, self-supervised
             queries and training triplets, the held-out split
  baselines  random, pick-first, tf.idf cosine
  scoring    features, the combined (content + position) linear score, `score_papers`
  evaluate   ranking metrics, the self-supervised and gold evaluations, report writing
  train      fine-tuning the cross-encoder of `models/central.py`
  cli        `figsearch train-central`, `eval-central`, `score-central`
"""
