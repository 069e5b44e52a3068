"""Motion-sheet geometry and the pixel metrics computed on every sheet."""

# The version of the pixel metrics (metrics.py): stored facts of another version are measured
# again. Here, so that what only names it does not import numpy.
METRICS_VERSION = "2"
