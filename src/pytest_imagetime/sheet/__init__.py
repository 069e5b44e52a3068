"""Motion-sheet geometry and the pixel metrics computed on every sheet."""
