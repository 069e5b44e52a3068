"""Motion-sheet geometry, the prompts a backend is sent, and the pixel metrics of every sheet."""

# The version of the pixel metrics (grid, panels, phases, filters, metrics): stored facts of
# another version are measured again. Here, so that what only names it does not import numpy.
METRICS_VERSION = "2"
