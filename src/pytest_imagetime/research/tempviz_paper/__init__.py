"""The TempViz paper's evaluation of automatic methods against human labels: the combined
label, point-biserial correlation with its t-test, macro precision / recall / F1 per category,
the random baseline, decompositional VQA and the whole-prompt judge; see ``docs/tempviz.md``."""
