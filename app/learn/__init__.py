"""Learned figure embeddings: weak-supervision pairs, training, embedding jobs, ablation.

Modules: images (pixels, thumbnails, SSIM), vocab (word ids for the LSTM/FCC text branches),
data (one training/embedding view of a data dir, with cached features), pairs (weak supervision),
train (training loops), registry (versions of trained models under data_dir/models), embed
(figure/query embeddings with the current model), ablation (cross-fitted evaluation), cli.
"""
