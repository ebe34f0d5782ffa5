"""Experiments that measure real stacks and write Results."""
