"""Agreement between two label tables: a judge against people, or two annotators."""
