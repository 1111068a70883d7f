"""Tests of the embedded gateway's model providers."""
