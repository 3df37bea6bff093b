"""Readers of each harness's own output into ATIF: the four CLIs, the proxy's transcript, the runner's records."""
