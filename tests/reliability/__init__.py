"""The fault matrix of RELIABILITY.md as end-to-end tests, with the figures each one measures."""
