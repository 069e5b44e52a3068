"""Agreement statistics and the commands that report them: ``imagetime agree`` (two label
tables: a judge against people, or two annotators) and ``imagetime judges-agree`` (two judges'
stored judgments of the same sheets). The order probe's statistics come from here too.
"""
