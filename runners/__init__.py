"""ARCS runners: sandboxed execution, test results and CI log analysis."""
