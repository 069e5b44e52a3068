"""The TempViz suite: does a text-to-image model apply temporal knowledge?

7,940 prompts over five categories (Animals, Artworks, Buildings, Landscapes, Maps), read
from the authors' CSV tables in a directory the user names. Each image is judged on three
yes/no questions: Q1 no visible generation errors, Q2 the subject is present, Q3 the
temporal cue is applied correctly. ``docs/tempviz.md`` describes the suite.
"""
