"""Image model backends (see ``registry.MODELS``)."""
