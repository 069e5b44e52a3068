"""The order probe: can a judge put a sheet's panels in time order (shown in both orders, and
all four shuffled)? Its questions go through ``judges/ask.py``, its statistics through
``research/agreement/stats.py``.
"""
