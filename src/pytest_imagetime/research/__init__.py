"""Tools reached from the ``imagetime`` command only, never from a test run: the order probe
(``probe``), judge agreement (``agreement``), human labels (``labels``) and automatic baselines
(``baselines``).
"""
