"""Scheduling plugins: scoring maths, independent of the scheduling framework that calls it."""
