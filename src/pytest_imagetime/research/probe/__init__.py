"""Probes of the judges and of the sheets' temporal evidence, beside the scored runs.

``order``: can a judge put a sheet's panels in time order (shown in both orders, and all four
shuffled)? ``agreement``: how often two judges agree on the same stored sheets. ``ask``: the
JSON-answer client both the probe and the question-chain judge use.
"""
