"""Human labels for stored runs: a sample exported as a form, the answers read back, and the
judge's answers written in the same columns so that ``imagetime agree`` can compare them."""
