"""How an item fails when its model or judge does (light: collectors name it too)."""


class ItemError(Exception):
    """Infrastructure failure of one item (model or judge); the item reports an error."""
