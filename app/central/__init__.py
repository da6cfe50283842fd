"""Central figure: which figure of a paper best summarises it.

Modules, one concept each:
  data       reading papers/figures/mentions from the database, text clean-up, self-supervised
             queries, the held-out split
  baselines  random, pick-first, tf.idf cosine
  scoring    features, the combined (content + position + figure type) linear score, `score_papers`
  evaluate   ranking metrics, the self-supervised and gold evaluations, report writing
  train      fine-tuning the bi-encoder of `models/central.py`
  stats      paper-level bootstrap intervals and paired tests
  defaults   the default combined weights and where they came from
  cli        `figsearch train-central`, `eval-central`, `score-central`
"""
