"""Reports: the aggregate JSON (with its schema), JUnit XML and the terminal summary."""
