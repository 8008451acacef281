"""What we keep of a run: the case record, its packed form for the reports, the results file and the journals."""
