"""Helpers the tests of several folders share (tests/README.md); a folder's own fixtures stay in it."""
